// The reserve holds while another process allocates during a probe. Two processes share one
// simulated GPU (CUDASIM_STATE); CUDASIM_PAUSE holds each at a chosen driver call so the other
// acts at that exact point, with no timing involved; CUDASIM_MEMORY_LOG records every change of
// the device's memory, by either process, in order: the witness of how low free memory went.
import { once } from "node:events";
import { readFileSync, writeFileSync } from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";

import type { Addon, NativeProbeResult } from "../../src/native/addonTypes.js";
import { GiB, MiB, devicesText, startAnotherProcess, startSimulator, temporaryPath, waitForFile } from "./simulator.js";

const TOTAL = 8 * GiB;
const CONTEXT = 256 * MiB;
const RESERVE = GiB;
const devices = [{ name: "NVIDIA L4", totalBytes: TOTAL }];
const stateFile = temporaryPath("ledger");
const SIX_GIB = Array.from({ length: 6 }, () => GiB);

let addon: Addon;

beforeAll(async () => {
  ({ addon } = await startSimulator({ devices, contextBytes: CONTEXT, stateFile }));
  expect((await addon.memGetInfo(0)).freeBytes).toBe(TOTAL - CONTEXT); // our context, created first
});

interface Change {
  pid: number;
  kind: "charge" | "uncharge";
  bytes: number;
  freeAfter: number;
}

function readLog(path: string): Change[] {
  return readFileSync(path, "utf8")
    .trim()
    .split("\n")
    .map((line) => {
      const [pid, kind, , bytes, used] = line.split(" ");
      return { pid: Number(pid), kind: kind as Change["kind"], bytes: Number(bytes!.slice(6)), freeAfter: TOTAL - Number(used!.slice(5)) };
    });
}

/**
 * Probes SIX_GIB with the reserve, paused before the call of `pauseAt` after `passed` calls; while
 * it is paused, another process creates its context and allocates `otherBytes`, holding them until
 * our probe has finished. Returns the probe's result and the memory log of both processes.
 */
async function probeWhileAnotherAllocates(pauseAt: string, passed: number, otherBytes: number): Promise<{ result: NativeProbeResult; log: Change[] }> {
  const ours = temporaryPath("ours");
  const theirs = temporaryPath("theirs");
  const log = temporaryPath("memory-log");
  writeFileSync(log, "");
  const shared = { CUDASIM_DEVICES: devicesText(devices), CUDASIM_CONTEXT_BYTES: String(CONTEXT), CUDASIM_STATE: stateFile, CUDASIM_MEMORY_LOG: log };
  // Set while no call is in flight (the simulator reads them on every call).
  process.env.CUDASIM_MEMORY_LOG = log;
  process.env.CUDASIM_PAUSE = `${pauseAt}:${passed}:${ours}`;
  try {
    const probe = addon.probe(0, SIX_GIB, { touch: false, reserveBytes: RESERVE });
    await waitForFile(`${ours}.paused`);
    // The other process allocates and then holds: paused before its own first free.
    const other = startAnotherProcess({ ...shared, CUDASIM_PAUSE: `cuMemFree_v2:0:${theirs}` }, `await addon.probe(0, [${otherBytes}], { touch: false });`);
    await waitForFile(`${theirs}.paused`);
    writeFileSync(`${ours}.resume`, "");
    const result = await probe;
    writeFileSync(`${theirs}.resume`, "");
    const [code] = await once(other, "exit");
    expect(code).toBe(0);
    return { result, log: readLog(log) };
  } finally {
    delete process.env.CUDASIM_PAUSE;
    delete process.env.CUDASIM_MEMORY_LOG;
  }
}

describe("a probe with a reserve, while another process allocates", () => {
  it("between two of its allocations: the next allocation that would cross the reserve is refused, and free memory never goes below it", async () => {
    // Paused before reading free memory after its second GiB: 8 GiB − 256 MiB − 2 GiB = 5,888 MiB
    // free. The other process takes 256 MiB of context and 3.5 GiB: 2,048 MiB free. The probe's
    // third GiB leaves 1 GiB, exactly the reserve; the fourth would leave 0 and is refused.
    const { result, log } = await probeWhileAnotherAllocates("cuMemGetInfo_v2", 2, 3.5 * GiB);
    expect(result).toEqual({
      fits: false,
      failedIndex: 3,
      limit: "reserve",
      allocated: 3,
      allocatedBytes: 3 * GiB,
      freeBytesAtStart: TOTAL - CONTEXT,
      freeBytesAtPeak: RESERVE,
      minFreeBytes: RESERVE,
      headroomBytes: 0, // nothing above the reserve is left
      virtualMemory: false, // plain cuMemAlloc_v2 blocks: no page size was given
    });
    expect(log.filter((change) => change.pid !== process.pid).map((change) => change.bytes)).toEqual([CONTEXT, 3.5 * GiB, 3.5 * GiB, CONTEXT]);
    // The witness: at no point, whoever allocated, was less than the reserve free.
    expect(Math.min(...log.map((change) => change.freeAfter))).toBe(RESERVE);
    // Without the reserve the probe would have gone on to the fourth and fifth GiB: 0 free, then out of memory.
  });

  it("between its reading and its allocation (the window no driver call closes): the allocation that crossed is given back at once", async () => {
    // Paused before its third cuMemAlloc_v2, after reading 5,888 MiB free (room for another GiB
    // above the reserve). The other process takes 256 MiB + 4 GiB meanwhile: 1,536 MiB free. The
    // third GiB lands at 512 MiB free; the probe reads that, frees the GiB, and stops.
    const { result, log } = await probeWhileAnotherAllocates("cuMemAlloc_v2", 2, 4 * GiB);
    expect(result).toEqual({
      fits: false,
      failedIndex: 2,
      limit: "reserve",
      allocated: 2,
      allocatedBytes: 2 * GiB,
      freeBytesAtStart: TOTAL - CONTEXT,
      freeBytesAtPeak: TOTAL - CONTEXT - 2 * GiB,
      minFreeBytes: 512 * MiB,
      headroomBytes: 512 * MiB, // with the crossing GiB given back: 1,536 MiB free, 512 above the reserve
      virtualMemory: false,
    });
    const ours = log.filter((change) => change.pid === process.pid);
    const crossing = ours.findIndex((change) => change.freeAfter < RESERVE);
    expect(ours[crossing]).toEqual({ pid: process.pid, kind: "charge", bytes: GiB, freeAfter: 512 * MiB });
    // Our very next change gives that GiB back, before anything else of ours.
    expect(ours[crossing + 1]).toMatchObject({ kind: "uncharge", bytes: GiB });
    expect(ours.slice(crossing + 2).every((change) => change.kind === "uncharge")).toBe(true);
  });

  it("left the device as it found it", async () => {
    expect((await addon.memGetInfo(0)).freeBytes).toBe(TOTAL - CONTEXT);
  });
});
