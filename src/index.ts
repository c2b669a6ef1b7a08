// The library: one import for scripts — device inventory, the batch search, checks and plans.
import { inventory, processesOf, matchDevices, type DeviceReport, type ProcessUsage } from "./devices/inventory.js";
import { onDevice } from "./devices/perDevice.js";
import { VramfitError } from "./errors.js";
import { checkAnalytic, checkOnDevice, checkOnNvml, type CheckResult } from "./fit/checkFits.js";
import type { JobModelOptions } from "./fit/charges.js";
import { readWithoutContext } from "./fit/deviceMemory.js";
import type { ProbeEvent } from "./fit/device.js";
import { analyticBatch, deviceBatch, type BatchResult, type SearchLimits } from "./fit/findMaxBatch.js";
import { analyticSeq, deviceSeq, seqSearchFor, type SeqResult } from "./fit/findMaxSeq.js";
import { resolveTargets as resolveTargetSpec, selectDevices, type ResolvedTargets, type TargetSpec } from "./fit/resolveTargets.js";
import type { BudgetLimits } from "./fit/budget.js";
import type { AnalyticTarget, DeviceSummary, DeviceTarget, GpuModel, Target } from "./fit/target.js";
import type { NativeDevice, NativeMemInfo } from "./native/addonTypes.js";
import { openBackend, openNvml, openedBackend, type Backend, type BackendOptions, type NvmlBackend } from "./native/binding.js";
import type { DeviceLockOptions } from "./devices/deviceLock.js";
import { buildPlan } from "./plan/buildPlan.js";
import { hostBytes as planHostBytes, type MemoryPlan } from "./plan/memoryPlan.js";
import { parseSetup as parseRunOptions, type RunSetup, type SetupOptions } from "./plan/setup.js";
import { validateCheckFits, validateDevice, validateFindMaxBatch, validateFindMaxSeq, validateTargetSpec } from "./fit/validateTargets.js";
import { validateBackendOptions } from "./native/validateBackendOptions.js";
import { validatePlan } from "./plan/validatePlan.js";
import { validatePlanMemory, validateSetupOptions } from "./plan/validateSetup.js";
import type { Workload } from "./workload/workload.js";
import { object, rejectUnknown, string } from "./checks.js";
import { checkPlanBytes } from "./plan/planLimits.js";
import { readStepTrace } from "./step/traceFile.js";
import { tracePlan } from "./step/tracePlan.js";

export { VramfitError, exitStatusOf, ExitStatus, type VramfitErrorCode, type VramfitErrorOptions } from "./errors.js";
export { parseBytes, formatBytes } from "./units.js";
export { parseCount, type CountLimit } from "./count.js";
export { searchMaxBatch, type FitsFunction, type SearchOptions, type SearchResult } from "./fit/search.js";
export type { SeqResult } from "./fit/findMaxSeq.js";
export type { BatchResult, CheckResult, DeviceReport, MemoryPlan, GpuModel, Backend };
export type { BackendOptions, BudgetLimits, DeviceSummary, NativeDevice, NativeMemInfo, SearchLimits, JobModelOptions, ProbeEvent };
export type { TargetSpec, ResolvedTargets, Target, DeviceTarget, AnalyticTarget, ProcessUsage };
export type { DeviceReading, DeviceFailure } from "./devices/inventory.js";
export type { DriverInfo, NativeComputeMode, NativeProbeLimit, NvmlInfo } from "./native/addonTypes.js";
export type { NvmlBackend } from "./native/binding.js";
export type { DeviceLockOptions } from "./devices/deviceLock.js";
export type { PlannedTensor, Category } from "./plan/memoryPlan.js";
export type { Workload, AffineWorkload, TransformerWorkload, CnnWorkload } from "./workload/workload.js";
export { resolveWorkload, type WorkloadInput } from "./workload/resolveWorkload.js";
export { listPresets, type PresetInfo } from "./workload/presets.js";
export type { RunSetup, SetupOptions } from "./plan/setup.js";
export { OFFLOAD_KINDS, type Offload } from "./plan/offload.js";
export { advise, type Advice, type AdviceReport, type AdviceRequest, type AdviceTarget } from "./advice/advise.js";
export type { AdviceKind } from "./advice/costs.js";
export { ALLOCATOR_KINDS, DEFAULT_ALLOCATOR, type AllocatorKind, type AllocatorModel } from "./fit/allocator.js";
export { DEFAULT_JOB_CONTEXT_BYTES } from "./fit/context.js";
export { DEFAULT_RESERVE_PERCENT, parseReserve } from "./fit/budget.js";
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
export type { SimulateOptions, SimulatedGpu, SimulatedRunReport } from "./job/simulatedGpu.js";
export type { SimulationSummary } from "./job/simulationSummary.js";
export type { Multiprocessors } from "./devices/multiprocessors.js";
export type { Calibration } from "./job/calibratedSearch.js";
export { OUT_OF_MEMORY_PATTERNS, findOutOfMemory, type OutOfMemoryMatch, type OutOfMemoryPattern } from "./job/outOfMemory.js";

/** How device work is done: probing, cancelling, locking, and what is left behind. */
export interface DeviceWorkOptions {
  /**
   * Write every probed byte (`cuMemsetD8`) and synchronize, so the memory is really backed
   * (default true); false allocates only: faster, less certain.
   */
  touch?: boolean;
  /**
   * Map expandable segments' pages through the driver's virtual-memory API, one `cuMemCreate` per
   * page as PyTorch does (default true, where the driver has the API); false: one `cuMemAlloc` per
   * run of pages, the same bytes with fewer driver calls (a simulated device of terabytes holds
   * millions of pages).
   */
  virtualMemory?: boolean;
  /**
   * Cancels the work: between probes, and a probe in flight before its next allocation (it frees
   * what it holds); the promise rejects with the signal's reason.
   */
  signal?: AbortSignal;
  /**
   * The cross-process lock on the device (default: taken, waiting up to 60 s for another vramfit
   * process's probes; `ERR_DEVICE_BUSY` after that); false to probe without it.
   */
  lock?: DeviceLockOptions | false;
  /**
   * Keep vramfit's CUDA context on the device after the call returns (default false: it is
   * released, so the job that runs next gets that memory). Repeated calls then skip creating it;
   * {@link releaseDevices} (or a {@link Session}) gives it back.
   */
  keepWarm?: boolean;
  /** Called as each probe starts and ends (a progress line, a benchmark). */
  onProbe?: (event: ProbeEvent) => void;
  /** An already resolved target ({@link resolveTargets}): the target fields are then ignored. */
  target?: Target;
}

/** Options of {@link findMaxBatch}: where to evaluate, the budget's limits, how the job allocates, and how to probe. */
export interface FindMaxBatchOptions extends Omit<TargetSpec, "device">, SearchLimits, JobModelOptions, DeviceWorkOptions {
  /** A CUDA ordinal or a device UUID (default 0 when a GPU is usable). */
  device?: number | string;
}

/** Options of {@link checkFits}: as for {@link findMaxBatch}. */
export interface CheckFitsOptions extends FindMaxBatchOptions {
  /**
   * Answer from NVML's free memory where NVML can read the device: no probe and no CUDA context
   * (what `vramfit check --need` does); the job's whole context is charged. Default false: one probe.
   */
  withoutContext?: boolean;
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
  validatePlan(plan); // checked here once: the calls it is passed to do not walk it again
  return plan;
}

/**
 * The plan of a step PyTorch ran: a trace file `vramfit trace --out FILE` wrote
 * (docs/trace-format.md), as a plan whose tensors are the step's own storages, allocated and
 * freed in the trace's order, with the workspaces the trace cannot see (cuBLAS's) charged. Pass it
 * to {@link findMaxBatch} or {@link checkFits} like any plan: the allocator emulation and a device
 * probe replay it as traced. Pure: the caller reads the file (as for `hfConfig` and `spec`).
 *
 * @param file - The file's path (for messages) and its parsed JSON.
 * @throws {@link VramfitError} `ERR_INVALID_ARGUMENT`, one line naming the file and the field: a
 *   wrong `format` or `version`, a byte count that is not a whole number, an event out of order, a
 *   free of a storage never allocated, an unknown category or charge.
 * @example
 * ```ts
 * const path = "llama.trace.json";
 * const plan = planTrace({ path, json: JSON.parse(readFileSync(path, "utf8")) });
 * console.log((await findMaxBatch(plan, { gpu: "H100-80GB" })).batchSize);
 * ```
 */
export function planTrace(file: { path: string; json: unknown }): MemoryPlan {
  const fields = object("file", file);
  rejectUnknown("file", fields, ["path", "json"]);
  string("file.path", fields.path);
  const plan = tracePlan(readStepTrace(file.path, file.json));
  checkPlanBytes(plan);
  return plan;
}

/** The one target a single-target call evaluates on: the caller's, or the spec resolved (a device selection of "all" is refused). */
async function singleTarget(options: FindMaxBatchOptions): Promise<Target> {
  if (options.target !== undefined) return options.target;
  if (options.device === "all") throw new VramfitError("ERR_INVALID_ARGUMENT", "device: expected one device (an ordinal or a UUID), got \"all\"; resolveTargets lists every device");
  const { targets } = await resolveTargetSpec(options);
  if (targets.length !== 1) throw new VramfitError("ERR_INVALID_ARGUMENT", `fallback: expected one analytic target for a single answer, got ${targets.length}`);
  return targets[0]!;
}

/** Runs device work, then gives vramfit's context on that device back unless asked to keep it warm. */
async function onDeviceThenRelease<T>(target: DeviceTarget, options: DeviceWorkOptions, work: () => Promise<T>): Promise<T> {
  let result: T;
  try {
    result = await work();
  } catch (error) {
    // The work's failure is the one to report; a release that fails after it (a lost GPU) adds nothing.
    if (!options.keepWarm) await target.addon.releaseDevice(target.device.ordinal).catch(() => undefined);
    throw onDevice(target.device, error);
  }
  if (!options.keepWarm) await target.addon.releaseDevice(target.device.ordinal).catch((error: unknown) => Promise.reject(onDevice(target.device, error)));
  return result;
}

/**
 * The largest batch of `plan` that fits.
 *
 * On a GPU (`device`, an ordinal or a UUID; default 0) it reads the free memory, predicts the
 * answer for exactly that budget with the job's allocator (PyTorch's caching allocator by
 * default) and context, and lets probes decide: it allocates the segments the job would hold at
 * that batch and the next (two probes when the model is right; on a miss it gallops up or down
 * and bisects), never taking free memory below the reserve. With `gpu` (a catalog id such as
 * `H100-80GB`) or `memoryBytes` it answers analytically and touches no device; with `fallback` it
 * answers analytically on that target when no GPU is usable, with `reason` saying why. There is no
 * upper bound unless `maxBatch` sets one. The context vramfit created is released when it returns
 * (`keepWarm` keeps it).
 *
 * @param plan - What to fit, from {@link planMemory}.
 * @param options - The target, `reserveBytes`/`reservePercent`/`maxMemBytes`/`maxBatch`,
 *   `allocator`, `allocConf` (PYTORCH_CUDA_ALLOC_CONF), `jobContextBytes`, `touch`, `signal`, `keepWarm`.
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
  const target = await singleTarget(options);
  if (target.kind !== "device") return analyticBatch(plan, target, options, target.reason);
  return onDeviceThenRelease(target, options, () => deviceBatch(target, plan, options));
}

/** Options of {@link findMaxSeq}: where to evaluate, the budget's limits, and how to probe (as for {@link findMaxBatch}). */
export type FindMaxSeqOptions = Omit<FindMaxBatchOptions, "maxBatch">;

/**
 * The longest sequence (tokens per sample) of a text transformer that fits at `batch`: the same
 * seeded search as {@link findMaxBatch}, over the sequence. On a GPU it predicts the answer for
 * the measured budget and lets probes of the job's segments at that sequence and the next decide
 * (two when the model is right); on an analytic target it answers from the model. The model's
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
  const target = await singleTarget(options);
  if (target.kind !== "device") return analyticSeq(planAt, batch, target, { ...options, maxSeq }, target.reason);
  return onDeviceThenRelease(target, options, () => deviceSeq(target, planAt, batch, { ...options, maxSeq }));
}

/**
 * Does `plan` at `batch` fit? On a GPU: one probe (the job's segments allocated, touched, freed)
 * within the reserve, or with `withoutContext` NVML's free memory where it can read it. On an
 * analytic target: the allocator's segments and the job's context against the budget.
 *
 * @param plan - What to fit, from {@link planMemory}.
 * @param batch - The batch size to check: a whole number from 0 (the fixed bytes alone), small
 *   enough that the plan's bytes stay below 2^53 (`ERR_INVALID_ARGUMENT` naming `batch` otherwise).
 * @param options - The target (as for {@link findMaxBatch}), `reserveBytes`, `maxMemBytes`,
 *   `allocator`, `allocConf`, `jobContextBytes`, `touch`, `withoutContext`, `keepWarm`.
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
  const target = await singleTarget(options);
  if (target.kind !== "device") return checkAnalytic(plan, batch, target, options, target.reason);
  if (options.withoutContext) {
    const read = await readWithoutContext(target.device, target.nvml);
    if (!("reason" in read)) return checkOnNvml(target, read.freeBytes, read.uuid, plan, batch, options);
  }
  return onDeviceThenRelease(target, options, () => checkOnDevice(target, plan, batch, options));
}

/**
 * Every visible CUDA device (as the driver enumerates them under `CUDA_VISIBLE_DEVICES`) with
 * its name, UUID, PCI bus id, total, free and used bytes, read through NVML where it can (no
 * context). A device that fails (fallen off the bus) is listed with its `error` and null
 * figures, the others still answer. Never throws for a missing GPU: it returns `[]` when no GPU
 * is usable (no addon, no driver, no device); {@link backend} says why. Leaves no context behind.
 *
 * @example
 * ```ts
 * for (const gpu of await devices()) console.log(gpu.ordinal, gpu.name, gpu.error ?? gpu.freeBytes);
 * ```
 */
export async function devices(): Promise<DeviceReport[]> {
  const backend = await openBackend();
  if (backend.kind !== "cuda") return [];
  const reports = await inventory(backend.addon, await openNvml());
  await backend.addon.releaseDevices();
  return reports;
}

/**
 * The processes NVML lists on a device (by ordinal or UUID), with the memory each holds: read
 * without a CUDA context. `null` when NVML cannot say (no NVML, an integrated GPU).
 */
export async function deviceProcesses(device: number | string = 0): Promise<ProcessUsage[] | null> {
  validateDevice("device", device);
  const backend = await openBackend();
  if (backend.kind === "none") throw new VramfitError("ERR_GPU_REQUIRED", `no usable GPU: ${backend.reason}`);
  const [selected] = selectDevices(await backend.addon.devices(), device);
  const [match] = await matchDevices([selected!], await openNvml());
  return processesOf(match!);
}

/**
 * Free and total bytes of one device: exactly what `cudaMemGetInfo` reports (`cuMemGetInfo_v2`
 * in the device's primary context, the same context PyTorch or onnxruntime would use in this
 * process). The context is released when it returns unless `keepWarm`, so the reading includes
 * the context's own cost but nothing stays behind.
 *
 * @param device - The CUDA ordinal or a device UUID (default 0).
 * @throws {@link VramfitError} `ERR_GPU_REQUIRED` when no GPU is usable, `ERR_INVALID_DEVICE`
 *   for an ordinal the driver does not have.
 * @example
 * ```ts
 * const { freeBytes, totalBytes } = await memGetInfo(0);
 * ```
 */
export async function memGetInfo(device: number | string = 0, options: { keepWarm?: boolean } = {}): Promise<NativeMemInfo> {
  validateDevice("device", device);
  const backend = await openBackend();
  if (backend.kind === "none") throw new VramfitError("ERR_GPU_REQUIRED", `no usable GPU: ${backend.reason}`);
  const ordinal = typeof device === "number" ? device : selectDevices(await backend.addon.devices(), device)[0]!.ordinal;
  try {
    return await backend.addon.memGetInfo(ordinal);
  } finally {
    if (!options.keepWarm) await backend.addon.releaseDevice(ordinal);
  }
}

/**
 * Gives back every CUDA context vramfit holds in this process (kept warm with `keepWarm` or a
 * {@link Session}), after the work queued on each device. Resolves with the ordinals released.
 * Loads nothing: `[]` when the driver was never loaded.
 */
export async function releaseDevices(): Promise<number[]> {
  const backend = await openedBackend();
  return backend?.kind === "cuda" ? backend.addon.releaseDevices() : [];
}

/**
 * Calls that keep their contexts warm between them (no context created per call), released
 * together with `release()` or at the end of an `await using` block.
 *
 * @example
 * ```ts
 * await using session = openSession();
 * for (const seq of [512, 1024, 2048]) console.log(seq, (await session.findMaxBatch(planFor(seq))).batchSize);
 * ```
 */
export interface Session extends AsyncDisposable {
  findMaxBatch(plan: MemoryPlan, options?: FindMaxBatchOptions): Promise<BatchResult>;
  checkFits(plan: MemoryPlan, batch: number, options?: CheckFitsOptions): Promise<CheckResult>;
  memGetInfo(device?: number | string): Promise<NativeMemInfo>;
  /** Releases every context this process holds ({@link releaseDevices}). */
  release(): Promise<number[]>;
}

export function openSession(): Session {
  return {
    findMaxBatch: (plan, options = {}) => findMaxBatch(plan, { ...options, keepWarm: true }),
    checkFits: (plan, batch, options = {}) => checkFits(plan, batch, { ...options, keepWarm: true }),
    memGetInfo: (device) => memGetInfo(device, { keepWarm: true }),
    release: releaseDevices,
    [Symbol.asyncDispose]: async () => {
      await releaseDevices();
    },
  };
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

/**
 * NVML as this process loaded it (for `vramfit info`), or why not. Never throws for a missing NVML.
 *
 * @throws {@link VramfitError} `ERR_INVALID_ARGUMENT` when an option is not a string (or unknown).
 */
export async function nvmlBackend(options: BackendOptions = {}): Promise<NvmlBackend> {
  validateBackendOptions(options);
  return openNvml(options);
}

/**
 * Resolves where to evaluate, the one resolver (the CLI's too): a device by ordinal or UUID (or
 * `"all"`), a catalog GPU, a raw budget, `analytic` readings of the devices through NVML, or the
 * `fallback` when no GPU is usable. Pass a target back to {@link findMaxBatch} or
 * {@link checkFits} as `target`.
 *
 * @throws {@link VramfitError} `ERR_INVALID_ARGUMENT` (a field of the wrong type, `gpu` with
 *   `memoryBytes`, `device` with an analytic target), `ERR_INVALID_DEVICE`, `ERR_UNKNOWN_GPU`,
 *   `ERR_GPU_REQUIRED` (no usable GPU, no fallback).
 * @example
 * ```ts
 * const { targets } = await resolveTargets({ device: "all", fallback: { gpu: "H100-80GB" } });
 * for (const target of targets) console.log((await findMaxBatch(plan, { target })).batchSize);
 * ```
 */
export async function resolveTargets(spec: TargetSpec = {}): Promise<ResolvedTargets> {
  validateTargetSpec(spec);
  return resolveTargetSpec(spec);
}
