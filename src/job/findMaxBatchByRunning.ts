// The largest batch by running the real job: the library's entry for `vramfit batch --exec` and
// `vramfit check --exec`, and for harnesses that drive their own runs.
import { invalidArgument } from "../errors.js";
import { plannedBytes, type AllocatorModel } from "../fit/allocator.js";
import { jobModel } from "../fit/charges.js";
import { analyticMaxBatch } from "../fit/analytic.js";
import { budgetBytes as budgetFor } from "../fit/budget.js";
import type { DeviceSummary } from "../fit/target.js";
import type { MemoryPlan } from "../plan/memoryPlan.js";
import { calibratedSearch, type Calibration, type CalibratedSearchResult, type ModelSeed } from "./calibratedSearch.js";
import { validateFindMaxBatchByRunning } from "./validateJob.js";
import { checkJobCommand } from "./jobCommand.js";
import { jobDeviceSummary, type JobDevice } from "./jobDevices.js";
import { judgedRun, runLimits, withJobSession, type JobSessionContext, type JobSessionOptions } from "./jobSession.js";
import { simulationSummary, type SimulationSummary } from "./simulationSummary.js";
import type { PeakSource } from "./peakSampler.js";
import type { JobRun } from "./runJob.js";
import { elapsedMsSince } from "../duration.js";

/** What a caller-driven run reports (`findMaxBatchByRunning(fn)`); throw from `fn` for a failure that is not out of memory. */
export interface RunOutcome {
  fits: boolean;
  /** The run's peak device memory, when known. */
  peakBytes?: number | null;
  /** Default: `job` when peakBytes is given, else `none`. */
  peakSource?: PeakSource;
  exitCode?: number | null;
  /** Default: measured around the call. */
  seconds?: number;
}

export type JobRunner = (batch: number) => Promise<RunOutcome> | RunOutcome;

/** A memory model of the job as fixed + perSample × batch bytes (the plan's own terms). */
export interface AffineModel {
  fixedBytes: number;
  perSampleBytes: number;
  /** How far a measured peak may be from the model before calibrating (default 10 %). */
  relativeError?: number;
}

export interface FindMaxBatchByRunningOptions extends JobSessionOptions {
  /**
   * The budget to predict against, for a runner function that needs no device read (a harness, a
   * simulation); without it the selected devices' free memory less the reserve.
   */
  budgetBytes?: number;
  maxBatch?: number;
  /** The two calibration batches, B1 < B2 (default: 1, then the largest batch the first peak proves safe). */
  calibrate?: readonly [number, number];
  /** A memory model of the job: its answer seeds the search instead of the calibration. */
  model?: MemoryPlan | AffineModel;
  /** Called once the devices are locked and measured, before the first run. */
  onStart?: (start: JobSearchStart) => void;
  /** Called after each run, in order. */
  onRun?: (run: JobRun) => void;
}

export interface JobSearchStart {
  devices: DeviceSummary[];
  budgetBytes: number;
  logDir: string | null;
  memorySource: "nvml" | "cuda" | null;
}

/** The answer of `vramfit batch --exec` (its `--json` object). */
export interface JobBatchResult {
  batchSize: number;
  /** `job` on a real GPU; `simulated-gpu` with `simulate` (see `simulation`). */
  source: "job" | "simulated-gpu";
  /** With `simulate`: the simulated device, the job's torch, and what a simulation cannot vouch for. */
  simulation?: SimulationSummary;
  /** How many times the job ran. */
  runs: number;
  trace: JobRun[];
  calibration?: Calibration;
  /** The batch the calibration or the model predicted; null when neither could. */
  predictedBatchSize: number | null;
  /** `model` (its seed held), `calibration`, or `search` (gallop and bisection alone). */
  method: CalibratedSearchResult["method"];
  model?: CalibratedSearchResult["model"];
  /** The device with the smallest budget (the one that bounds the answer); null for a runner with `budgetBytes`. */
  device: DeviceSummary | null;
  devices: DeviceSummary[];
  budgetBytes: number;
  /** Who read the free memory: `nvml` (no context), `cuda` (a context, released before any run). */
  memorySource: "nvml" | "cuda" | null;
  logDir: string | null;
  command: string | null;
  elapsedMs: number;
}

/**
 * The job's own context is not in the free memory NVML reports before it starts, so the model
 * charges it, as on every other path (fit/context.ts), with the job's allocator.
 */
async function modelSeed(model: MemoryPlan | AffineModel, budget: number, maxBatch: number | undefined, allocator: AllocatorModel): Promise<ModelSeed> {
  if ("tensors" in model) {
    const { batchSize } = await analyticMaxBatch(model, budget, allocator, maxBatch);
    return { batchSize, bytesAt: (b) => plannedBytes(model, b, allocator) };
  }
  const batchSize = model.perSampleBytes > 0 ? Math.floor((budget - model.fixedBytes) / model.perSampleBytes) : (maxBatch ?? 1);
  return {
    batchSize,
    bytesAt: (b) => model.fixedBytes + model.perSampleBytes * b,
    ...(model.relativeError !== undefined && { relativeError: model.relativeError }),
  };
}

function outcomeRun(batch: number, outcome: RunOutcome, seconds: number): JobRun {
  if (typeof outcome !== "object" || outcome === null || typeof outcome.fits !== "boolean") {
    throw invalidArgument("runner", outcome, "a RunOutcome object with a boolean `fits`");
  }
  const peakBytes = outcome.peakBytes ?? null;
  return {
    batch,
    fits: outcome.fits,
    peakBytes,
    peakSource: outcome.peakSource ?? (peakBytes === null ? "none" : "job"),
    seconds: outcome.seconds ?? seconds,
    exitCode: outcome.exitCode ?? null,
  };
}

/**
 * The largest batch size at which the job runs, found by running it.
 *
 * With a command (a shell command line): each run gets the batch as `{batch}` in the command and
 * `VRAMFIT_BATCH` in its environment, and the selected GPUs as `CUDA_VISIBLE_DEVICES` (UUIDs). Exit
 * status 0 fits; a non-zero exit with an out-of-memory message from PyTorch, CUDA, cuBLAS, cuDNN,
 * JAX/XLA or TensorFlow does not; any other failure rejects with `ERR_JOB_FAILED` (or
 * `ERR_JOB_TIMEOUT`), naming the batch and the last lines of the job's stderr. Peaks are measured
 * through NVML over the job's process tree (or the device's used memory, or the job's
 * `VRAMFIT_PEAK_BYTES=<n>` line). vramfit holds no CUDA context while a run lasts, and holds the
 * devices' lock for the whole search.
 *
 * With a function: it is called once per batch and reports a {@link RunOutcome}; give
 * `budgetBytes` to predict without reading a device.
 *
 * Two calibration runs give fixed + perSample × batch, whose prediction is verified with its next
 * batch (about four runs), or a `model` seeds the search (two runs when it is exact).
 *
 * @example
 * ```ts
 * const { batchSize, runs } = await findMaxBatchByRunning("python train.py --steps 3 --batch-size {batch}", { device: 0 });
 * ```
 */
export async function findMaxBatchByRunning(job: string | JobRunner, options: FindMaxBatchByRunningOptions = {}): Promise<JobBatchResult> {
  validateFindMaxBatchByRunning(job, options);
  const command = typeof job === "string" ? checkJobCommand(job, "command") : null;
  if (typeof job === "function" && options.budgetBytes !== undefined) {
    return search(job, options, { devices: [], budgetBytes: options.budgetBytes, memorySource: null, logDir: null, command: null });
  }
  return withJobSession(command, options, (runner, context) => search(command === null ? (job as JobRunner) : runner, options, context));
}

async function search(job: JobRunner | ((batch: number) => Promise<JobRun>), options: FindMaxBatchByRunningOptions, context: JobSessionContext): Promise<JobBatchResult> {
  const started = performance.now();
  const summaries = context.simulated !== undefined ? [context.simulated.device] : context.devices.map(jobDeviceSummary);
  options.onStart?.({ devices: summaries, budgetBytes: context.budgetBytes, logDir: context.logDir, memorySource: context.memorySource });
  const run = async (batch: number): Promise<JobRun> => {
    const before = performance.now();
    const ran = context.command === null ? outcomeRun(batch, await (job as JobRunner)(batch), (performance.now() - before) / 1000) : await (job(batch) as Promise<JobRun>);
    const result = judgedRun(ran, context.budgetBytes, options);
    options.onRun?.(result);
    return result;
  };
  const found = await calibratedSearch(run, {
    budgetBytes: context.budgetBytes,
    ...(options.maxBatch !== undefined && { maxBatch: options.maxBatch }),
    ...(options.calibrate !== undefined && { calibrate: options.calibrate }),
    ...(options.model !== undefined && { model: await modelSeed(options.model, context.budgetBytes, options.maxBatch, jobModel(options)) }),
    ...(options.signal !== undefined && { signal: options.signal }),
  });
  const tightest = context.devices.reduce<JobDevice | undefined>((min, d) => (min === undefined || budgetFor({ freeBytes: d.freeBytes, totalBytes: d.device.totalBytes }, runLimits(options)) < budgetFor({ freeBytes: min.freeBytes, totalBytes: min.device.totalBytes }, runLimits(options)) ? d : min), undefined);
  return {
    batchSize: found.batchSize,
    source: context.simulated !== undefined ? "simulated-gpu" : "job",
    ...(context.simulated !== undefined && { simulation: simulationSummary(context.simulated.gpu, found.trace) }),
    runs: found.trace.length,
    trace: found.trace,
    ...(found.calibration && { calibration: found.calibration }),
    predictedBatchSize: found.predictedBatchSize,
    method: found.method,
    ...(found.model && { model: found.model }),
    device: context.simulated !== undefined ? context.simulated.device : tightest === undefined ? null : jobDeviceSummary(tightest),
    devices: summaries,
    budgetBytes: context.budgetBytes,
    memorySource: context.memorySource,
    logDir: context.logDir,
    command: context.command,
    elapsedMs: elapsedMsSince(started),
  };
}
