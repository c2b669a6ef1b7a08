// Does the job fit at one batch size? One run of it, measured: `vramfit check --exec … --batch N`.
import { validateCheckByRunning } from "./validateJob.js";
import type { DeviceSummary } from "../fit/target.js";
import { checkJobCommand } from "./jobCommand.js";
import { jobDeviceSummary } from "./jobDevices.js";
import { judgedRun, withJobSession, type JobSessionOptions } from "./jobSession.js";
import type { JobRun } from "./runJob.js";
import { simulationSummary, type SimulationSummary } from "./simulationSummary.js";
import { elapsedMsSince } from "../duration.js";

/** The answer of `vramfit check --exec` (its `--json` object). */
export interface JobCheckResult {
  fits: boolean;
  batch: number;
  /** The measured peak (`peakBytes`), which is what the job needs when it fits; null when unmeasured. */
  needBytes: number | null;
  budgetBytes: number;
  device: DeviceSummary;
  devices: DeviceSummary[];
  /** `job` on a real GPU; `simulated-gpu` with `simulate` (see `simulation`). */
  source: "job" | "simulated-gpu";
  simulation?: SimulationSummary;
  run: JobRun;
  memorySource: "nvml" | "cuda" | null;
  /** Where the run's logs are kept: `logDir`'s directory; null without one (they were removed). */
  logDir: string | null;
  elapsedMs: number;
}

/**
 * Runs the job once at `batch` on the selected GPUs, as findMaxBatchByRunning runs each of its
 * batches: `fits` is the run's (exit 0); out of memory is `fits: false`; any other failure rejects.
 */
export async function checkByRunning(command: string, batch: number, options: JobSessionOptions = {}): Promise<JobCheckResult> {
  validateCheckByRunning(command, batch, options);
  checkJobCommand(command, "command");
  return withJobSession(command, options, async (runner, context) => {
    const started = performance.now();
    const run = judgedRun(await runner(batch), context.budgetBytes, options);
    const devices = context.simulated !== undefined ? [context.simulated.device] : context.devices.map(jobDeviceSummary);
    return {
      fits: run.fits,
      batch,
      needBytes: run.fits ? run.peakBytes : null,
      budgetBytes: context.budgetBytes,
      device: devices.reduce((min, d) => (d.freeBytes < min.freeBytes ? d : min)),
      devices,
      source: context.simulated !== undefined ? "simulated-gpu" : "job",
      ...(context.simulated !== undefined && { simulation: simulationSummary(context.simulated.gpu, [run]) }),
      run,
      memorySource: context.memorySource,
      logDir: context.logDir,
      elapsedMs: elapsedMsSince(started),
    };
  });
}
