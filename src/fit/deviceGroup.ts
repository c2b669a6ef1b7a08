// Identical devices answered together: one search (or advice) whose every device call is made on each of them at once, and split up where any of them answers differently.
import { lockDevice, type DeviceLock } from "../devices/deviceLock.js";
import { nvmlDeviceList } from "../devices/inventory.js";
import { matchNvml } from "../devices/nvmlMatch.js";
import { onDevice } from "../devices/perDevice.js";
import type { Addon, NativeMemInfo, NativeProbeResult } from "../native/addonTypes.js";
import type { ProbeEvent } from "./device.js";
import type { DeviceAccessOptions } from "./deviceMemory.js";
import type { DeviceTarget, Target } from "./target.js";

/**
 * The devices of a group stopped answering alike: `failed` holds the members (by index) whose own
 * call failed; none when their answers differed. Each member is then answered alone.
 */
export class GroupSplit extends Error {
  constructor(readonly failed: ReadonlyMap<number, unknown>) {
    super("the devices answered differently");
  }
}

/**
 * Indexes of `targets` that may be answered together: devices the driver describes alike (the
 * same addon and NVML, name, total memory, capability, SM count, integration, compute mode), in
 * the order of their first member, and the same `key` where one is given; every other target on
 * its own. Alike is only where to look: the group's readings and probes must then agree too
 * ({@link answerTogether}).
 */
export function alikeGroups(targets: readonly Target[], key: (index: number) => string = () => ""): number[][] {
  const groups: number[][] = [];
  const byKind = new Map<string, number[]>();
  for (const [i, target] of targets.entries()) {
    if (target.kind !== "device") {
      groups.push([i]);
      continue;
    }
    const { ordinal: _, uuid: _u, pciBusId: _p, ...described } = target.device;
    const kind = JSON.stringify([described, key(i)]);
    const others = byKind.get(kind);
    const alike = others?.find((j) => {
      const other = targets[j] as DeviceTarget;
      return other.addon === target.addon && other.nvml === target.nvml;
    });
    if (alike !== undefined) {
      groups.find((g) => g[0] === alike)!.push(i);
      continue;
    }
    byKind.set(kind, [...(others ?? []), i]);
    groups.push([i]);
  }
  return groups;
}

/**
 * Calls every member at once — through `each`, one native call for all (an addon built before it
 * has none: then `call` per member) — and gives the one answer when they all gave an equal one;
 * else GroupSplit, with each member's own failure.
 */
async function onEach<R extends object>(
  members: readonly DeviceTarget[],
  each: ((ordinals: number[]) => Promise<(R | Error)[]>) | undefined,
  call: (ordinal: number) => Promise<R>,
  same: (a: R, b: R) => boolean,
): Promise<R> {
  const ordinals = members.map((m) => m.device.ordinal);
  const answers: (R | Error)[] =
    each !== undefined
      ? await each(ordinals)
      : (await Promise.allSettled(ordinals.map(call))).map((s) => (s.status === "fulfilled" ? s.value : (s.reason as Error)));
  const failed = new Map<number, unknown>();
  for (const [i, answer] of answers.entries()) if (answer instanceof Error) failed.set(i, answer);
  if (failed.size > 0) throw new GroupSplit(failed);
  const values = answers as R[];
  if (!values.every((v) => same(values[0]!, v))) throw new GroupSplit(failed);
  return values[0]!;
}

const sameReading = (a: NativeMemInfo, b: NativeMemInfo) => a.freeBytes === b.freeBytes && a.totalBytes === b.totalBytes;
// What a device search reads of a probe (src/fit/device.ts: whether it fits, and the room the
// device gave for the retry): equal figures take every member's search down the same path.
const sameProbe = (a: NativeProbeResult, b: NativeProbeResult) =>
  a.fits === b.fits && a.limit === b.limit && a.allocatedBytes === b.allocatedBytes && a.headroomBytes === b.headroomBytes;

/**
 * The group as one device target: its first member's device, through an addon whose readings,
 * probes and releases are made on every member at once and give the one answer they all gave
 * (GroupSplit otherwise). A search or advice run on it is then each member's own, made once.
 */
function groupTarget(members: readonly DeviceTarget[]): DeviceTarget {
  const first = members[0]!;
  const real = first.addon;
  const addon: Addon = Object.create(real, {
    memGetInfo: { value: () => onEach(members, real.memGetInfoEach && ((os) => real.memGetInfoEach!(os)), (o) => real.memGetInfo(o), sameReading) },
    probe: {
      value: (_: number, sizes: Float64Array | readonly number[], options: Parameters<Addon["probe"]>[2]) =>
        onEach(members, real.probeEach && ((os) => real.probeEach!(os, sizes, options)), (o) => real.probe(o, sizes, options), sameProbe),
    },
    releaseDevice: { value: () => onEach(members, undefined, async (o) => ({ released: await real.releaseDevice(o) }), () => true).then((r) => r.released) },
  });
  return { ...first, addon };
}

/**
 * Whether NVML gives every member the same figure for what vramfit's own context holds (the
 * group's readings took the first member's): contexts are made by the first reading and keep
 * their size, so one look after the work covers all of its readings.
 */
async function sameOwnContext(members: readonly DeviceTarget[]): Promise<boolean> {
  const list = await nvmlDeviceList(members[0]!.nvml);
  if ("reason" in list) return true; // every member then reads 0 (src/fit/deviceMemory.ts)
  const own = members.map((m) => matchNvml(m.device, list).device?.processes?.find((p) => p.pid === process.pid)?.usedBytes ?? 0);
  return own.every((bytes) => bytes === own[0]);
}

/**
 * Answers each member of a group of alike devices: `together` runs once, on the group as one
 * target (under every member's cross-process lock), and `each` makes its answer each member's;
 * where the members' readings or probes differ, or one of them fails, `alone` answers each member
 * by itself instead (a failed member gives its own failure). Either way a member's answer is the
 * one `alone` would give it: together, every member was read and probed with exactly the calls
 * its own run would have made, and they answered the same.
 */
export function answerTogether<T>(
  members: readonly DeviceTarget[],
  access: DeviceAccessOptions,
  together: (group: DeviceTarget, access: DeviceAccessOptions) => Promise<T>,
  alone: (member: DeviceTarget) => Promise<T>,
  each: (answer: T, member: DeviceTarget) => T,
): Promise<T>[] {
  if (members.length === 1) return [alone(members[0]!)];
  const answers = (async (): Promise<(() => Promise<T>)[]> => {
    const { signal } = access;
    signal?.throwIfAborted();
    const locks = await Promise.allSettled(
      members.map((m): Promise<DeviceLock | undefined> => (access.lock === false ? Promise.resolve(undefined) : lockDevice(m.addon, m.device, { ...access.lock, ...(signal !== undefined && { signal }) }))),
    );
    let split: GroupSplit;
    try {
      // A member whose lock failed fails as it would alone; the others are answered alone.
      if (locks.some((l) => l.status === "rejected")) {
        split = new GroupSplit(new Map(locks.flatMap((l, i) => (l.status === "rejected" ? [[i, l.reason] as const] : []))));
      } else {
        const answer = await together(groupTarget(members), { ...access, lock: false });
        if (await sameOwnContext(members)) return members.map((m) => () => Promise.resolve(each(answer, m)));
        split = new GroupSplit(new Map());
      }
    } catch (error) {
      if (!(error instanceof GroupSplit)) throw error; // the same for every member (bad input, an interruption)
      split = error;
    } finally {
      for (const l of locks) if (l.status === "fulfilled") l.value?.release();
    }
    if (signal?.aborted) throw signal.reason;
    return members.map((m, i) => (split.failed.has(i) ? () => Promise.reject(onDevice(m.device, split.failed.get(i))) : () => alone(m)));
  })();
  return members.map((_, i) => answers.then((each) => each[i]!()));
}

/**
 * Answers every target (in order), alike devices (with the same `key`) together: `together` gets
 * each group of two or more, with their indexes, and answers each member; `alone` every other target.
 */
export function eachTogether<T>(
  targets: readonly Target[],
  alone: (index: number) => Promise<T>,
  together: (members: DeviceTarget[], indexes: number[]) => Promise<T>[],
  key?: (index: number) => string,
): Promise<T>[] {
  const answers: Promise<T>[] = [];
  for (const group of alikeGroups(targets, key)) {
    const each = group.length === 1 ? [alone(group[0]!)] : together(group.map((i) => targets[i] as DeviceTarget), group);
    for (const [k, i] of group.entries()) answers[i] = each[k]!;
  }
  return answers;
}

/** A group's probe events as its members' own: each probe of the group is one on every member. */
export function forEachMember(onProbe: (event: ProbeEvent) => void, members: readonly DeviceTarget[]): (event: ProbeEvent) => void {
  if (members.length === 0) return onProbe;
  return (event) => {
    for (const m of members) onProbe({ ...event, ordinal: m.device.ordinal });
  };
}
