// What every run of one search shares: the devices (locked throughout, their free memory read
// once), the budget, the log directory, and a runner that measures each run's peak.
import { accessSync, constants, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve, sep } from "node:path";
import { VramfitError, invalidArgument } from "../errors.js";
import type { DeviceLockOptions } from "../devices/deviceLock.js";
import { budgetBytes as budgetFor, type BudgetLimits } from "../fit/budget.js";
import { jobModel, type JobModelOptions } from "../fit/charges.js";
import type { DeviceSummary } from "../fit/target.js";
import { jobDevices, measureFree, nvmlReader, withJobDevicesLocked, type DeviceChoice, type JobDevice } from "./jobDevices.js";
import { samplePeaks, usedBytesNow } from "./peakSampler.js";
import { DEFAULT_RUN_TIMEOUT_MS, runJobAtBatch, type JobRun } from "./runJob.js";
import { prepareSimulatedGpu, readSimulatedRun, simulatedRunEnv, withExitRaceHint, type SimulatedGpu, type SimulateOptions } from "./simulatedGpu.js";

export interface JobSessionOptions extends BudgetLimits, JobModelOptions {
  /** The GPU(s) the job runs on: a CUDA ordinal (default 0), a list, or `all` (a run fits only if it fits on every one). */
  device?: DeviceChoice;
  /** Kills a run's process group after this long (default 10 min). */
  runTimeoutMs?: number;
  /**
   * Where each run's stdout and stderr are kept. Without it they go to a new temporary directory,
   * removed when the search ends, unless it ends in a job's failure: then the error names it.
   */
  logDir?: string;
  /** The environment each run inherits (default process.env); VRAMFIT_BATCH and CUDA_VISIBLE_DEVICES are set on top. */
  env?: NodeJS.ProcessEnv;
  /** Stops the search: the running job's process group is killed, and the promise rejects with the reason. */
  signal?: AbortSignal;
  /** The cross-process device lock, held for the whole search (as for findMaxBatch); false: none. */
  lock?: DeviceLockOptions | false;
  /**
   * Run the job on a simulated catalog GPU instead (vramfit's stub CUDA libraries preloaded under
   * its PyTorch): no GPU needed, peaks counted exactly by the stubs. `device` and `lock` do not apply.
   */
  simulate?: SimulateOptions;
}

export interface JobSessionContext {
  devices: JobDevice[];
  /** The smallest budget over the devices: a run must fit on every one. */
  budgetBytes: number;
  memorySource: "nvml" | "cuda" | null;
  /** Where the runs' logs are kept for the user: `--log-dir`'s directory; null when none was asked for. */
  logDir: string | null;
  command: string | null;
  /** The simulated GPU the runs use (with `simulate`), and the device it presents. */
  simulated?: { gpu: SimulatedGpu; device: DeviceSummary };
}

/**
 * The limits the job's budget is worked out with. A real job's runs are not probes: without an
 * explicit --reserve they keep the exec search's own default, no headroom (the probes' default
 * headroom, fit/budget.ts, guards other processes while vramfit allocates).
 */
export function runLimits<T extends BudgetLimits>(options: T): T {
  return options.reserveBytes === undefined && options.reservePercent === undefined ? { ...options, reserveBytes: 0 } : options;
}

/** Whether the user asked the job for headroom or a cap (`--reserve`, `--max-mem`): then a run must keep to the budget too. */
function budgetAsked(options: BudgetLimits): boolean {
  return options.reserveBytes !== undefined || options.reservePercent !== undefined || options.maxMemBytes !== undefined;
}

/**
 * A run judged against the budget the user asked for: one that exited 0 but whose measured peak
 * went past it (it left less than `--reserve` free, or used more than `--max-mem`) does not fit,
 * as a probe is refused at the reserve. Without either option the budget is the free memory, and
 * exiting 0 is the whole test.
 */
export function judgedRun(run: JobRun, budgetBytes: number, options: BudgetLimits): JobRun {
  if (!run.fits || !budgetAsked(options)) return run;
  const peak = Math.max(run.peakBytes ?? 0, run.measuredPeakBytes ?? 0);
  return peak > budgetBytes ? { ...run, fits: false, overBudget: true } : run;
}

/**
 * A run whose reported peak is more than its largest device holds did not measure this device (a
 * line printed for another GPU, or in other units): an error, never "fits".
 */
function withinDevice(run: JobRun, devices: readonly JobDevice[]): JobRun {
  const totalBytes = Math.max(...devices.map((d) => d.device.totalBytes));
  if (run.peakSource !== "job" || run.peakBytes === null || run.peakBytes <= totalBytes) return run;
  throw new VramfitError(
    "ERR_JOB_UNMEASURED",
    `batch ${run.batch}: the job reported a peak of ${run.peakBytes} bytes (VRAMFIT_PEAK_BYTES), more than the device's ${totalBytes}: print the bytes this GPU used (torch.cuda.max_memory_reserved())`,
  );
}

/**
 * mkdir -p, one level at a time: Node 20's recursive mkdirSync spins forever on a path under /proc
 * (ENOENT on every try), ignoring signals. The loop is bounded by the path's depth.
 */
function makeDirectory(dir: string): void {
  const absolute = resolve(dir);
  const levels = absolute.split(sep).filter((part) => part !== "");
  for (let depth = 1; depth <= levels.length; depth += 1) {
    const path = sep + levels.slice(0, depth).join(sep);
    try {
      if (statSync(path).isDirectory()) continue;
      throw Object.assign(new Error(`${path} is not a directory`), { code: "ENOTDIR" });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    }
    mkdirSync(path);
  }
}

/** The log directory asked for: made (and writable). */
function logDirectory(dir: string): string {
  try {
    makeDirectory(dir);
    accessSync(dir, constants.W_OK);
  } catch (error) {
    throw invalidArgument("--log-dir", dir, `a directory vramfit can create and write to (${(error as NodeJS.ErrnoException).code ?? "failed"})`);
  }
  return dir;
}

/** A failure of the job itself (it failed, timed out, or its peaks made no sense): its logs are the evidence. */
function jobFailure(error: unknown): error is VramfitError {
  return error instanceof VramfitError && error.code.startsWith("ERR_JOB_");
}

/**
 * Calls `work` with the directory the runs write their logs to and the one kept for the user.
 * Asked for (`--log-dir`): that one, kept. Else a temporary one, removed when the work ends unless
 * the job failed: then it stays, and the error says where.
 */
async function withLogs<T>(command: string | null, asked: string | undefined, work: (dir: string | null, kept: string | null) => Promise<T>): Promise<T> {
  if (command === null) return work(null, null);
  if (asked !== undefined) {
    const dir = logDirectory(asked);
    return work(dir, dir);
  }
  const dir = mkdtempSync(join(tmpdir(), "vramfit-exec-"));
  let keep = false;
  try {
    return await work(dir, null);
  } catch (error) {
    if (jobFailure(error)) {
      keep = true;
      error.message += `\nthe runs' logs are kept in ${dir}`;
    }
    throw error;
  } finally {
    if (!keep) rmSync(dir, { recursive: true, force: true });
  }
}

/** A run without the paths of logs that will not be kept. */
function withoutLogs(run: JobRun, kept: string | null): JobRun {
  if (kept !== null || run.logs === undefined) return run;
  const { logs, ...rest } = run;
  return rest;
}

/**
 * Resolves and locks the devices, reads their free memory (without keeping a context), and calls
 * `work` with a runner for `command` (undefined without one) and what the runs share. The lock is
 * released however `work` ends.
 */
export async function withJobSession<T>(
  command: string | null,
  options: JobSessionOptions,
  work: (runner: (batch: number) => Promise<JobRun>, context: JobSessionContext) => Promise<T>,
): Promise<T> {
  if (options.simulate !== undefined) return withSimulatedSession(command, options, options.simulate, work);
  const resolved = await jobDevices(options.device);
  return withJobDevicesLocked(resolved, options.lock, () => withLogs(command, options.logDir, async (logDir, keptLogDir) => {
    const devices = await measureFree(resolved);
    const context: JobSessionContext = {
      devices,
      budgetBytes: Math.min(...devices.map((d) => budgetFor({ freeBytes: d.freeBytes, totalBytes: d.device.totalBytes }, runLimits(options)))),
      memorySource: devices.every((d) => d.memorySource === "nvml") ? "nvml" : "cuda",
      logDir: keptLogDir,
      command,
    };
    const read = nvmlReader(resolved);
    const uuids = devices.map((d) => d.uuid);
    const runner = async (batch: number): Promise<JobRun> => {
      if (command === null) throw new Error("no command to run");
      // The device's used memory before the run: the fallback peak is the rise over it.
      const baseline = read === undefined ? undefined : await usedBytesNow(read, uuids).catch(() => undefined);
      const run = await runJobAtBatch(command, batch, {
        logDir: logDir!,
        runTimeoutMs: options.runTimeoutMs ?? DEFAULT_RUN_TIMEOUT_MS,
        env: options.env ?? process.env,
        visibleDevices: uuids.join(","),
        ...(options.signal !== undefined && { signal: options.signal }),
        ...(read !== undefined && baseline !== undefined && { measure: (pid: number) => samplePeaks(read, uuids, pid, baseline) }),
      });
      return withoutLogs(withinDevice(run, devices), keptLogDir);
    };
    return work(runner, context);
  }));
}

/**
 * The session of a simulated GPU: nothing to lock or measure (the device is empty until the job
 * starts), a budget of its whole memory (the job's context is charged inside it, by the stub
 * runtime, as the job opens it), and runs with the stubs preloaded, whose peaks are the stubs' count.
 */
async function withSimulatedSession<T>(
  command: string | null,
  options: JobSessionOptions,
  simulate: SimulateOptions,
  work: (runner: (batch: number) => Promise<JobRun>, context: JobSessionContext) => Promise<T>,
): Promise<T> {
  return withLogs(command, options.logDir, (logDir, keptLogDir) => simulatedSession(command, options, simulate, logDir, keptLogDir, work));
}

async function simulatedSession<T>(
  command: string | null,
  options: JobSessionOptions,
  simulate: SimulateOptions,
  logDir: string | null,
  keptLogDir: string | null,
  work: (runner: (batch: number) => Promise<JobRun>, context: JobSessionContext) => Promise<T>,
): Promise<T> {
  const gpu = prepareSimulatedGpu(simulate, jobModel(options).contextBytes, options.env ?? process.env);
  const totalBytes = gpu.gpu.totalBytes;
  const device: DeviceSummary = { ordinal: null, name: gpu.gpu.name, id: gpu.gpu.id, uuid: null, totalBytes, freeBytes: totalBytes };
  const context: JobSessionContext = {
    devices: [],
    budgetBytes: budgetFor({ freeBytes: totalBytes, totalBytes }, runLimits(options)),
    memorySource: null,
    logDir: keptLogDir,
    command,
    simulated: { gpu, device },
  };
  const runner = async (batch: number): Promise<JobRun> => {
    if (command === null) throw new Error("no command to run");
    const prefix = join(logDir!, `batch-${batch}`);
    // A batch run again (the search revisits none, a caller might) starts with no reports of the last.
    for (const file of readdirSync(logDir!).filter((f) => f.startsWith(`batch-${batch}.counters.`) || f === `batch-${batch}.touched`)) {
      rmSync(join(logDir!, file), { force: true });
    }
    const env = options.env ?? process.env;
    const run = await runJobAtBatch(command, batch, {
      logDir: logDir!,
      runTimeoutMs: options.runTimeoutMs ?? DEFAULT_RUN_TIMEOUT_MS,
      env: { ...env, ...simulatedRunEnv(gpu, prefix, env) },
      visibleDevices: "0",
      ...(options.signal !== undefined && { signal: options.signal }),
    }).catch((error: unknown) => {
      throw withExitRaceHint(error);
    });
    const report = readSimulatedRun(prefix);
    // A run that fitted only because its allocator, refused by the device, freed its cache and
    // retried (c10/cuda/CUDACachingAllocator.cpp's out-of-memory path) has no peak that says what
    // it needs: the count, taken after that freeing, is below the need and can fall below a smaller
    // batch's, which the search would read as a job that caps its batch. It counts as fitting, unmeasured.
    const atCapacity = run.fits && report.failedMallocs > 0;
    return {
      ...withoutLogs(run, keptLogDir),
      ...(atCapacity ? { peakBytes: null, peakSource: "none" as const } : report.peakBytes !== null && { peakBytes: report.peakBytes, peakSource: "simulated-gpu" as const }),
      simulation: { deviceToHostBytes: report.deviceToHostBytes, touched: report.touched },
    };
  };
  return work(runner, context);
}
