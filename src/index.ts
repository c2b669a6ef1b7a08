// The library: one import for scripts — device inventory, the batch search, checks and plans.
import { findGpu } from "./devices/catalog.js";
import { inventory, type DeviceReport } from "./devices/inventory.js";
import { VramfitError } from "./errors.js";
import { checkAnalytic, checkOnDevice, type CheckResult } from "./fit/checkFits.js";
import { analyticBatch, deviceBatch, type BatchResult, type SearchLimits } from "./fit/findMaxBatch.js";
import type { AnalyticTarget, GpuModel } from "./fit/target.js";
import type { Addon, NativeDevice, NativeMemInfo } from "./native/addonTypes.js";
import { openBackend, type Backend } from "./native/binding.js";
import { buildPlan } from "./plan/buildPlan.js";
import type { MemoryPlan } from "./plan/memoryPlan.js";

export { VramfitError, exitStatusOf, ExitStatus, type VramfitErrorCode } from "./errors.js";
export { parseBytes, formatBytes } from "./units.js";
export { searchMaxBatch, type FitsFunction, type SearchResult } from "./fit/search.js";
export { buildPlan as planMemory };
export type { BatchResult, CheckResult, DeviceReport, MemoryPlan, GpuModel, Backend };
export type { PlannedTensor, Category } from "./plan/memoryPlan.js";
export type { Workload, AffineWorkload, TransformerWorkload, CnnWorkload } from "./workload/workload.js";
export { resolveWorkload, type WorkloadInput } from "./workload/resolveWorkload.js";
export { listPresets } from "./workload/presets.js";
export { parseSetup, type RunSetup, type SetupOptions } from "./plan/setup.js";

/** Where to evaluate: a CUDA ordinal (measured), or an analytic target. */
export interface TargetSpec {
  /** CUDA ordinal to measure on (default 0 when a GPU is usable). */
  device?: number;
  /** A catalog GPU id (`H100-80GB`) or model: analytic, no device touched. */
  gpu?: string | GpuModel;
  /** A raw memory budget in bytes: analytic. */
  memoryBytes?: number;
  /** With no usable GPU, answer analytically on this target instead of throwing. */
  fallback?: { gpu: string | GpuModel } | { memoryBytes: number };
}

export interface FindMaxBatchOptions extends TargetSpec, SearchLimits {
  touch?: boolean;
  signal?: AbortSignal;
}

function analyticTarget(spec: { gpu?: string | GpuModel; memoryBytes?: number }): AnalyticTarget | undefined {
  if (spec.gpu !== undefined) return { kind: "gpu", gpu: typeof spec.gpu === "string" ? findGpu(spec.gpu) : spec.gpu };
  if (spec.memoryBytes !== undefined) return { kind: "memory", bytes: spec.memoryBytes };
  return undefined;
}

type Resolved = { addon: Addon; device: NativeDevice } | { target: AnalyticTarget; reason?: string };

async function resolve(spec: TargetSpec): Promise<Resolved> {
  const named = analyticTarget(spec);
  if (named) return { target: named };
  const backend = await openBackend();
  if (backend.kind === "none") {
    const fallback = spec.fallback && analyticTarget(spec.fallback);
    if (fallback) return { target: fallback, reason: `no usable GPU: ${backend.reason}` };
    throw new VramfitError("ERR_GPU_REQUIRED", `no usable GPU: ${backend.reason}`);
  }
  const ordinal = spec.device ?? 0;
  const device = (await backend.addon.devices()).find((d) => d.ordinal === ordinal);
  if (!device) throw new VramfitError("ERR_INVALID_DEVICE", `device ${ordinal} does not exist`);
  return { addon: backend.addon, device };
}

/**
 * The largest batch of `plan` that fits: measured with allocation probes on a GPU, or predicted
 * by the analytic model for `gpu`/`memoryBytes` (or `fallback` when no GPU is usable).
 * @example
 * const plan = planMemory({ kind: "affine", parameterCount: 7e9, perSampleBytes: 2 ** 30, fixedBytes: 0 },
 *                         { mode: "train", precision: "fp32", optimizer: "sgd" });
 * const { batchSize, source } = await findMaxBatch(plan, { fallback: { gpu: "H100-80GB" } });
 */
export async function findMaxBatch(plan: MemoryPlan, options: FindMaxBatchOptions = {}): Promise<BatchResult> {
  const resolved = await resolve(options);
  if ("target" in resolved) return analyticBatch(plan, resolved.target, options, resolved.reason);
  return deviceBatch(resolved.addon, resolved.device, plan, options);
}

/** Does `plan` at `batch` fit the target? One probe on a GPU, or the analytic sum. */
export async function checkFits(
  plan: MemoryPlan,
  batch: number,
  options: TargetSpec & SearchLimits & { touch?: boolean } = {},
): Promise<CheckResult> {
  const resolved = await resolve(options);
  if ("target" in resolved) return checkAnalytic(plan, batch, resolved.target, options, resolved.reason);
  return checkOnDevice(resolved.addon, resolved.device, plan, batch, options);
}

/** Every visible CUDA device with its free and used memory; [] when no GPU is usable. */
export async function devices(): Promise<DeviceReport[]> {
  const backend = await openBackend();
  return backend.kind === "cuda" ? inventory(backend.addon) : [];
}

/** `cudaMemGetInfo` for one device (creates its primary context once). */
export async function memGetInfo(device = 0): Promise<NativeMemInfo> {
  const backend = await openBackend();
  if (backend.kind === "none") throw new VramfitError("ERR_GPU_REQUIRED", `no usable GPU: ${backend.reason}`);
  return backend.addon.memGetInfo(device);
}

/** The backend this process uses: `cuda`, or `none` with the reason. */
export { openBackend as backend };
