// The library: one import for scripts — device inventory, the batch search, checks and plans.
import { findGpu } from "./devices/catalog.js";
import { inventory, type DeviceReport } from "./devices/inventory.js";
import { VramfitError } from "./errors.js";
import { checkAnalytic, checkOnDevice, type CheckResult } from "./fit/checkFits.js";
import { analyticBatch, deviceBatch, type BatchResult, type SearchLimits } from "./fit/findMaxBatch.js";
import { analyticSeq, deviceSeq, seqSearchFor, type SeqResult } from "./fit/findMaxSeq.js";
import type { BudgetLimits } from "./fit/budget.js";
import type { AnalyticTarget, DeviceSummary, GpuModel } from "./fit/target.js";
import type { Addon, NativeDevice, NativeMemInfo } from "./native/addonTypes.js";
import { openBackend, openNvml, type Backend, type BackendOptions } from "./native/binding.js";
import type { DeviceLockOptions } from "./devices/deviceLock.js";
import { buildPlan } from "./plan/buildPlan.js";
import { hostBytes as planHostBytes, type MemoryPlan } from "./plan/memoryPlan.js";
import { checkPlanBytes } from "./plan/planLimits.js";
import { parseSetup as parseRunOptions, type RunSetup, type SetupOptions } from "./plan/setup.js";
import {
  validateBackendOptions,
  validateCheckFits,
  validateDevice,
  validateFindMaxBatch,
  validateFindMaxSeq,
  validatePlan,
  validatePlanMemory,
  validateSetupOptions,
} from "./validate.js";
import type { Workload } from "./workload/workload.js";

export { VramfitError, exitStatusOf, ExitStatus, type VramfitErrorCode, type VramfitErrorOptions } from "./errors.js";
export { parseBytes, formatBytes } from "./units.js";
export { parseCount, type CountLimit } from "./count.js";
export { searchMaxBatch, type FitsFunction, type SearchOptions, type SearchResult } from "./fit/search.js";
export type { SeqResult } from "./fit/findMaxSeq.js";
export type { BatchResult, CheckResult, DeviceReport, MemoryPlan, GpuModel, Backend };
export type { BackendOptions, BudgetLimits, DeviceSummary, NativeDevice, NativeMemInfo, SearchLimits };
export type { DriverInfo, NativeComputeMode } from "./native/addonTypes.js";
export type { DeviceLockOptions } from "./devices/deviceLock.js";
export type { ProcessUsage } from "./devices/inventory.js";
export type { PlannedTensor, Category } from "./plan/memoryPlan.js";
export type { Workload, AffineWorkload, TransformerWorkload, CnnWorkload } from "./workload/workload.js";
export { resolveWorkload, type WorkloadInput } from "./workload/resolveWorkload.js";
export { listPresets, type PresetInfo } from "./workload/presets.js";
export type { RunSetup, SetupOptions } from "./plan/setup.js";
export { OFFLOAD_KINDS, type Offload } from "./plan/offload.js";
export { advise, type Advice, type AdviceReport, type AdviceRequest, type AdviceTarget } from "./advice/advise.js";
export type { AdviceKind } from "./advice/costs.js";
export type { AllocatorModel } from "./fit/allocator.js";
export { gpusFit, type FitGpu, type GpuFit, type GpuLayout, type GpusFitOptions } from "./advice/gpusFit.js";
export {
  findMaxBatchByRunning,
  type AffineModel,
  type FindMaxBatchByRunningOptions,
  type JobBatchResult,
  type JobRunner,
  type JobSearchStart,
  type RunOutcome,
} from "./job/findMaxBatchByRunning.js";
export { checkByRunning, type JobCheckResult } from "./job/checkByRunning.js";
export type { JobSessionOptions } from "./job/jobSession.js";
export type { DeviceChoice } from "./job/jobDevices.js";
export type { JobRun } from "./job/runJob.js";
export type { PeakSource } from "./job/peakSampler.js";
export type { Calibration } from "./job/calibratedSearch.js";
export { OUT_OF_MEMORY_PATTERNS, findOutOfMemory, type OutOfMemoryMatch, type OutOfMemoryPattern } from "./job/outOfMemory.js";

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

/** Options of {@link findMaxBatch}: where to evaluate, the budget's limits, and how to probe. */
export interface FindMaxBatchOptions extends TargetSpec, SearchLimits {
  /**
   * Write every probed byte (`cuMemsetD8`) and synchronize, so the memory is really backed
   * (default true); false allocates only: faster, less certain.
   */
  touch?: boolean;
  /**
   * Cancels the search: between probes, and a probe in flight before its next allocation (it frees
   * what it holds); the promise rejects with the signal's reason.
   */
  signal?: AbortSignal;
  /**
   * The cross-process lock on the device (default: taken, waiting up to 60 s for another vramfit
   * process's probes; `ERR_DEVICE_BUSY` after that); false to probe without it.
   */
  lock?: DeviceLockOptions | false;
}

/** Options of {@link checkFits}: where to evaluate, the budget's limits, and how to probe. */
export interface CheckFitsOptions extends TargetSpec, SearchLimits {
  /** Write every probed byte and synchronize (default true); false allocates only. */
  touch?: boolean;
  /** Cancels the probe (it frees what it holds); the promise rejects with the signal's reason. */
  signal?: AbortSignal;
  /** The cross-process lock on the device, as for {@link findMaxBatch}. */
  lock?: DeviceLockOptions | false;
}

/**
 * The memory plan of a workload run a given way: every tensor the run needs on the device
 * (parameters, gradients, optimizer states, activations, KV cache, workspace), each
 * `fixedBytes + perSampleBytes × batch`. Pure: touches no device. Both evaluators
 * ({@link findMaxBatch}, {@link checkFits}) take it.
 *
 * @param workload - A preset or file as {@link resolveWorkload} returns it
 *   (`resolveWorkload({ model: "bert-large" })`), or a raw affine workload
 *   (`{ kind: "affine", parameterCount, perSampleBytes, fixedBytes }`).
 * @param setup - How it runs: `mode` (`train`/`infer`), `precision`, `optimizer`, and optionally
 *   `seq`, `image`, `checkpointing`, `attention`, `zeroStage` over `gpus`, `tp`, …
 * @returns The plan; `description` says what was planned, `tensors` lists every allocation.
 * @throws {@link VramfitError} `ERR_INVALID_ARGUMENT` naming the field: a workload or setup of the
 *   wrong shape or type (`setup.mode` missing, `setup.precision: "fp8"`, an unknown field), past an
 *   input limit (docs/reliability.md), a setup that does not apply to the workload (`seq` for a
 *   CNN, `tp` for a raw workload, a `tp` that does not divide the heads, …), or a plan whose byte
 *   counts would pass 2^53.
 * @example
 * ```ts
 * const plan = planMemory(resolveWorkload({ model: "bert-large" }), { mode: "train", precision: "amp", optimizer: "adamw", seq: 512 });
 * console.log(plan.description, plan.tensors.length);
 * ```
 */
export function planMemory(workload: Workload, setup: RunSetup): MemoryPlan {
  validatePlanMemory(workload, setup);
  const plan = buildPlan(workload, setup);
  checkPlanBytes(plan);
  return plan;
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
 * The largest batch of `plan` that fits.
 *
 * On a GPU (`device`, default 0) it reads the free memory, predicts the answer for exactly that
 * budget, and verifies it by allocating every tensor of the plan at that batch and the next
 * (two probes when the model is right; on a miss it gallops and bisects). With `gpu` (a catalog
 * id such as `H100-80GB`) or `memoryBytes` it answers analytically and touches no device; with
 * `fallback` it answers analytically on that target when no GPU is usable, with `reason` saying why.
 * There is no upper bound unless `maxBatch` sets one.
 *
 * @param plan - What to fit, from {@link planMemory}.
 * @param options - The target, `reserveBytes`/`maxMemBytes`/`maxBatch`, `touch`, `signal`.
 * @returns `batchSize` (0 when not even batch 1 fits), `source` (`device` or `analytic`),
 *   `probes`, `budgetBytes`, `bytesAtBatch`, `predictedBatchSize`, `device`, `elapsedMs`.
 * @throws {@link VramfitError} `ERR_INVALID_ARGUMENT` naming the field for a plan or an option that
 *   is not valid (`options.maxBatch: -3` or `1.5`, `options.reserveBytes: NaN`, `gpu` with
 *   `memoryBytes`, an unknown option), `ERR_GPU_REQUIRED` (no usable GPU and no `fallback`),
 *   `ERR_INVALID_DEVICE`, `ERR_UNKNOWN_GPU`, or `ERR_CUDA_*` for a driver failure.
 * @example
 * ```ts
 * const plan = planMemory({ kind: "affine", parameterCount: 7e9, perSampleBytes: 2 ** 30, fixedBytes: 0 },
 *                         { mode: "train", precision: "fp32", optimizer: "sgd" });
 * const { batchSize, source } = await findMaxBatch(plan, { fallback: { gpu: "H100-80GB" } });
 * ```
 */
export async function findMaxBatch(plan: MemoryPlan, options: FindMaxBatchOptions = {}): Promise<BatchResult> {
  validateFindMaxBatch(plan, options);
  const resolved = await resolve(options);
  if ("target" in resolved) return analyticBatch(plan, resolved.target, options, resolved.reason);
  return deviceBatch(resolved.addon, resolved.device, plan, options);
}

/** Options of {@link findMaxSeq}: where to evaluate, the budget's limits, and how to probe (as for {@link findMaxBatch}). */
export type FindMaxSeqOptions = Omit<FindMaxBatchOptions, "maxBatch">;

/**
 * The longest sequence (tokens per sample) of a text transformer that fits at `batch`: the same
 * seeded search as {@link findMaxBatch}, over the sequence. On a GPU it predicts the answer for
 * the measured budget and verifies it with probes of the plan at that sequence and the next (one
 * or two when the model is right); on an analytic target it answers from the model. The model's
 * context length (less `setup.generatedTokens`) caps it; `limitedBy` says which limit the answer met.
 *
 * @param workload - A text transformer, from {@link resolveWorkload}.
 * @param setup - How it runs, as for {@link planMemory}; its `seq` is what is solved for and ignored.
 * @param batch - The batch the sequence must fit at (≥ 1).
 * @param options - The target, `reserveBytes`/`maxMemBytes`, `touch`, `signal`, `lock`.
 * @returns A batch answer at `batch` plus `seq` (0 when not even one token fits), `predictedSeq`
 *   and `limitedBy` (`memory` or `context`).
 * @throws {@link VramfitError} as {@link planMemory} and {@link findMaxBatch} do, and
 *   `ERR_INVALID_ARGUMENT` for a workload without a sequence (a CNN, a vision transformer).
 * @example
 * ```ts
 * const workload = resolveWorkload({ model: "qwen2.5-7b" });
 * const { seq } = await findMaxSeq(workload, { mode: "infer", precision: "bf16", optimizer: "adamw" }, 8, { gpu: "H100-80GB" });
 * ```
 */
export async function findMaxSeq(workload: Workload, setup: RunSetup, batch: number, options: FindMaxSeqOptions = {}): Promise<SeqResult> {
  validateFindMaxSeq(workload, setup, batch, options);
  const { planAt, maxSeq } = seqSearchFor(workload, setup);
  const resolved = await resolve(options);
  if ("target" in resolved) return analyticSeq(planAt, batch, resolved.target, { ...options, maxSeq }, resolved.reason);
  return deviceSeq(resolved.addon, resolved.device, planAt, batch, { ...options, maxSeq });
}

/**
 * Does `plan` at `batch` fit? On a GPU: one probe (every tensor allocated, touched, freed),
 * refused without a probe when the planned bytes exceed the budget. On an analytic target: the
 * plan's bytes, rounded as the allocator rounds them, against the budget.
 *
 * @param plan - What to fit, from {@link planMemory}.
 * @param batch - The batch size to check: a whole number from 0 (the fixed bytes alone), small
 *   enough that the plan's bytes stay below 2^53 (`ERR_INVALID_ARGUMENT` naming `batch` otherwise).
 * @param options - The target (as for {@link findMaxBatch}), `reserveBytes`, `maxMemBytes`, `touch`.
 * @returns `fits`, `needBytes`, `budgetBytes`, `device`, `source`, `probes` (0 or 1), and
 *   `reason` when the answer is analytic because no GPU was usable.
 * @throws {@link VramfitError} as {@link findMaxBatch} does.
 * @example
 * ```ts
 * const { fits, needBytes, budgetBytes } = await checkFits(plan, 32, { device: 0, reserveBytes: 2 ** 30 });
 * if (!fits) process.exitCode = 1;
 * ```
 */
export async function checkFits(plan: MemoryPlan, batch: number, options: CheckFitsOptions = {}): Promise<CheckResult> {
  validateCheckFits(plan, batch, options);
  const resolved = await resolve(options);
  if ("target" in resolved) return checkAnalytic(plan, batch, resolved.target, options, resolved.reason);
  return checkOnDevice(resolved.addon, resolved.device, plan, batch, options);
}

/**
 * Every visible CUDA device (as the driver enumerates them under `CUDA_VISIBLE_DEVICES`) with
 * its name, UUID, PCI bus id, total, free and used bytes. Never throws for a missing GPU: it
 * returns `[]` when no GPU is usable (no addon, no driver, no device); {@link backend} says why.
 *
 * @example
 * ```ts
 * for (const gpu of await devices()) console.log(gpu.ordinal, gpu.name, gpu.freeBytes);
 * ```
 */
export async function devices(): Promise<DeviceReport[]> {
  const backend = await openBackend();
  return backend.kind === "cuda" ? inventory(backend.addon, await openNvml()) : [];
}

/**
 * Free and total bytes of one device: exactly what `cudaMemGetInfo` reports
 * (`cuMemGetInfo_v2` in the device's primary context, retained once per process, so a later
 * PyTorch or onnxruntime context in the same process is the same one).
 *
 * @param device - The CUDA ordinal (default 0).
 * @throws {@link VramfitError} `ERR_GPU_REQUIRED` when no GPU is usable, `ERR_INVALID_DEVICE`
 *   for an ordinal the driver does not have.
 * @example
 * ```ts
 * const { freeBytes, totalBytes } = await memGetInfo(0);
 * ```
 */
export async function memGetInfo(device = 0): Promise<NativeMemInfo> {
  validateDevice("device", device);
  const backend = await openBackend();
  if (backend.kind === "none") throw new VramfitError("ERR_GPU_REQUIRED", `no usable GPU: ${backend.reason}`);
  return backend.addon.memGetInfo(device);
}

/**
 * The backend this process uses: `cuda` (the addon and the driver loaded), or `none` with the
 * reason and its code (`ERR_ADDON_NOT_FOUND`, `ERR_DRIVER_NOT_FOUND`, `ERR_NO_DEVICE`, …), which is
 * what `vramfit info` prints. Loaded once per process; never throws for a missing GPU.
 *
 * @throws {@link VramfitError} `ERR_INVALID_ARGUMENT` when an option is not a string (or unknown).
 */
export function backend(options: BackendOptions = {}): Promise<Backend> {
  validateBackendOptions(options);
  return openBackend(options);
}

/**
 * Validates the run options (`--mode`, `--precision`, `--optimizer`, `--seq`, `--image`,
 * `--checkpointing`, `--attention`, `--zero`, `--gpus`, `--tp`, `--sequence-parallel`,
 * `--generate`, `--offload`, `--gpus-per-node`), as the CLI takes them, into a RunSetup. Absent
 * options keep their defaults (`train`, `amp`, `adamw`; seq and image the model's).
 *
 * @throws {@link VramfitError} `ERR_INVALID_ARGUMENT` naming the option for a bad value, a value of
 *   the wrong type, or options that contradict each other (`--zero 2` with `--mode infer`).
 */
export function parseSetup(options: SetupOptions): RunSetup {
  validateSetupOptions(options);
  return parseRunOptions(options);
}

/**
 * Host bytes the plan needs on one node: every sharing rank's offloaded states (0 without
 * `offload`).
 *
 * @throws {@link VramfitError} `ERR_INVALID_ARGUMENT` when `plan` is not a valid MemoryPlan.
 */
export function hostBytes(plan: MemoryPlan): number {
  validatePlan(plan);
  return planHostBytes(plan);
}
