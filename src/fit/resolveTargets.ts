// The one resolver of targets: devices by ordinal or UUID, catalog GPUs, raw budgets, readings, the fallback.
import { findGpu } from "../devices/catalog.js";
import { uuidKey } from "../devices/nvmlMatch.js";
import { VramfitError, invalidArgument } from "../errors.js";
import type { NativeDevice } from "../native/addonTypes.js";
import { openBackend, openNvml } from "../native/binding.js";
import { readWithoutContext } from "./deviceMemory.js";
import type { AnalyticTarget, GpuModel, Target } from "./target.js";

/** Where to evaluate, as the library's callers (and the CLI's options) say it. */
export interface TargetSpec {
  /**
   * A CUDA ordinal (as the driver enumerates devices under `CUDA_VISIBLE_DEVICES`), a device
   * UUID (`GPU-…` or `MIG-…`, or a unique prefix of one), or `"all"` (resolveTargets only).
   * Default: 0 when a GPU is usable.
   */
  device?: number | string;
  /** A catalog GPU id (`H100-80GB`) or model: analytic, no device touched. */
  gpu?: string | GpuModel;
  /** A raw memory budget in bytes (a GPU of that size, nothing else on it): analytic. */
  memoryBytes?: number;
  /**
   * Do not touch the selected devices: answer analytically from their free memory as NVML reads
   * it (no CUDA context), or their total memory where NVML cannot read it.
   */
  analytic?: boolean;
  /** Throw `ERR_GPU_REQUIRED` unless a GPU is usable, even with an analytic target named. */
  requireGpu?: boolean;
  /** With no usable GPU (and no target named), answer analytically on this target, or these GPUs, instead of throwing. */
  fallback?: { gpu: string | GpuModel } | { memoryBytes: number } | { gpus: readonly (string | GpuModel)[] };
}

/** What a spec resolves to: the targets in order, and why they are analytic when they are. */
export interface ResolvedTargets {
  targets: Target[];
  /** The targets are analytic stand-ins because no GPU is usable (the fallback). */
  fallback: boolean;
  /** Why the answers are analytic, when they are; each analytic target carries it too. */
  reason?: string;
}

function gpuModel(gpu: string | GpuModel): GpuModel {
  return typeof gpu === "string" ? findGpu(gpu) : gpu;
}

function namedTarget(spec: TargetSpec): (AnalyticTarget & { option: string }) | undefined {
  if (spec.gpu !== undefined && spec.memoryBytes !== undefined) {
    const gpu = typeof spec.gpu === "string" ? spec.gpu : spec.gpu.name;
    throw invalidArgument("--gpu/--memory (gpu/memoryBytes)", `${gpu} and ${spec.memoryBytes} bytes`, "one analytic target, not both");
  }
  if (spec.device !== undefined && (spec.gpu !== undefined || spec.memoryBytes !== undefined)) {
    throw invalidArgument("--device", String(spec.device), "no --device with --gpu or --memory (those are analytic targets)");
  }
  if (spec.gpu !== undefined) return { kind: "gpu", gpu: gpuModel(spec.gpu), option: "--gpu" };
  if (spec.memoryBytes !== undefined) {
    if (!Number.isInteger(spec.memoryBytes) || spec.memoryBytes <= 0 || spec.memoryBytes > 2 ** 53) throw invalidArgument("--memory (memoryBytes)", spec.memoryBytes, "a whole number of bytes > 0");
    return { kind: "memory", bytes: spec.memoryBytes, option: "--memory" };
  }
  return undefined;
}

function fallbackTargets(fallback: NonNullable<TargetSpec["fallback"]>): AnalyticTarget[] {
  if ("gpus" in fallback) return fallback.gpus.map((gpu) => ({ kind: "gpu", gpu: gpuModel(gpu) }));
  if ("gpu" in fallback) return [{ kind: "gpu", gpu: gpuModel(fallback.gpu) }];
  return [{ kind: "memory", bytes: fallback.memoryBytes }];
}

const withReason = (targets: AnalyticTarget[], reason: string): Target[] => targets.map((t) => ({ ...t, reason }));

/**
 * The devices a selection names: an ordinal, a UUID (`GPU-…`/`MIG-…`, case-insensitive, or a
 * prefix naming exactly one device), or `"all"`; a one-line `ERR_INVALID_DEVICE` naming what exists.
 */
export function selectDevices(all: readonly NativeDevice[], selection: number | string = 0): NativeDevice[] {
  if (selection === "all") return [...all];
  const count = all.length;
  const has = `(this machine has ${count} visible device${count === 1 ? "" : "s"})`;
  if (typeof selection === "number" || /^\s*[0-9]+\s*$/.test(selection)) {
    const ordinal = Number(selection);
    const device = all.find((d) => d.ordinal === ordinal);
    if (device === undefined) throw new VramfitError("ERR_INVALID_DEVICE", `--device: expected a CUDA device ordinal from 0 to ${count - 1} ${has}, got ${selection}`);
    return [device];
  }
  // The same 16 bytes whatever the prefix and case (CUDA and NVML spell MIG instances alike), else a unique prefix.
  const key = uuidKey(selection.trim());
  const exact = key === undefined ? [] : all.filter((d) => uuidKey(d.uuid) === key);
  if (exact.length === 1) return exact;
  const wanted = selection.trim().toLowerCase();
  const matches = wanted.length === 0 ? [] : all.filter((d) => d.uuid.toLowerCase().startsWith(wanted));
  if (matches.length === 1) return matches;
  const why = matches.length > 1 ? `, which begins ${matches.length} devices' UUIDs` : "";
  throw new VramfitError("ERR_INVALID_DEVICE", `--device: expected the UUID of a visible device (nvidia-smi -L lists them) ${has}, got ${selection}${why}`);
}

/**
 * Resolves a spec to targets, the same way for the library and the CLI. A named analytic target
 * (`gpu`, `memoryBytes`) wins unless `requireGpu`; with no usable GPU the `fallback` answers, or
 * `ERR_GPU_REQUIRED` is thrown with the reason; else the selected devices, probed, or read
 * through NVML without a context with `analytic`.
 */
export async function resolveTargets(spec: TargetSpec = {}): Promise<ResolvedTargets> {
  const named = namedTarget(spec);
  if (named !== undefined && !spec.requireGpu) {
    const reason = `analytic target (${named.option})`;
    return { targets: withReason([named], reason), fallback: false, reason };
  }
  const backend = await openBackend();
  if (backend.kind === "none") {
    const reason = `no usable GPU: ${backend.reason}`;
    if (spec.requireGpu || named !== undefined || spec.fallback === undefined) {
      const hint = spec.requireGpu ? "" : "; name a target with --gpu or --memory to answer analytically";
      throw new VramfitError("ERR_GPU_REQUIRED", `${reason}${hint}`);
    }
    return { targets: withReason(fallbackTargets(spec.fallback), reason), fallback: true, reason };
  }
  if (named !== undefined) {
    const reason = "analytic target";
    return { targets: withReason([named], reason), fallback: false, reason };
  }
  const devices = selectDevices(await backend.addon.devices(), spec.device ?? 0);
  const nvml = await openNvml();
  if (!spec.analytic) {
    return { targets: devices.map((device) => ({ kind: "device", device, addon: backend.addon, nvml })), fallback: false };
  }
  const targets = await Promise.all(
    devices.map(async (device): Promise<Target> => {
      const read = await readWithoutContext(device, nvml);
      if ("reason" in read) {
        const reason = `--analytic: the device's total memory (NVML cannot read its free memory: ${read.reason})`;
        return { kind: "reading", device, freeBytes: device.totalBytes, memorySource: "total", reason };
      }
      const reason = "--analytic: free memory read through NVML (no CUDA context), not probed";
      return { kind: "reading", device: { ...device, uuid: read.uuid }, freeBytes: read.freeBytes, memorySource: "nvml", reason };
    }),
  );
  return { targets, fallback: false, reason: (targets[0] as { reason?: string } | undefined)?.reason ?? "--analytic" };
}
