// `vramfit batch --exec` and `vramfit check --exec`: the answer from running the user's own job.
import { ExitStatus, VramfitError, invalidArgument } from "../errors.js";
import { checkByRunning } from "../job/checkByRunning.js";
import { findMaxBatchByRunning, type JobBatchResult, type JobSearchStart } from "../job/findMaxBatchByRunning.js";
import { jobSeesBatch } from "../job/jobCommand.js";
import type { JobRun } from "../job/runJob.js";
import type { JobSessionOptions } from "../job/jobSession.js";
import type { SimulationSummary } from "../job/simulationSummary.js";
import type { DeviceSummary } from "../fit/target.js";
import { formatBytes } from "../units.js";
import { deviceAccess } from "./deviceAccess.js";
import { writeJson, type Io } from "./io.js";
import { jobLimits, type JobOptions } from "./jobOptions.js";
import { attributeName, workloadFlags } from "./options.js";
import type { TargetOptions } from "./targets.js";
import { planFromOptions, type WorkloadOptions } from "./workloadOptions.js";

export interface ExecOptions extends WorkloadOptions, TargetOptions, JobOptions {
  exec: string;
  calibrate?: [number, number];
  runTimeout?: number;
  logDir?: string;
  maxBatch?: number;
  minBatch?: number;
  batch?: number;
  need?: number;
  json?: boolean;
  lockTimeout?: number;
  simulate?: boolean;
  python?: string;
  cudnnWorkspace?: number;
  /** false with --no-touch, which --exec refuses. */
  touch?: boolean;
}

/**
 * --exec runs the job on a GPU, the one present or, with --gpu ID, a simulated catalog GPU: the
 * other analytic targets and --need make no sense with it.
 */
function refuseConflicts(options: ExecOptions): void {
  // --no-touch (touch: false) is about vramfit's own probes, which --exec does not make.
  if (options.touch === false) throw invalidArgument("--exec", options.exec, "no --no-touch with it (the job allocates its own memory; --no-touch is for vramfit's probes)");
  const conflicting = (["memory", "analytic", "need"] as const).find((key) => options[key] !== undefined && options[key] !== false);
  if (conflicting !== undefined) {
    const flag = `--${conflicting}`;
    throw invalidArgument("--exec", options.exec, `no ${flag} with it (--exec measures the job on the GPU it runs on, or a simulated one with --gpu)`);
  }
  const simulated = options.gpu !== undefined;
  if (options.simulate === true && !simulated) throw invalidArgument("--simulate", "set", "--gpu ID with it: the catalog GPU to simulate (see `vramfit gpus`)");
  if (simulated && options.device !== undefined) throw invalidArgument("--device", String(options.device), "no --device with --gpu (the job runs on a simulated GPU)");
  if (!simulated) {
    const only = (["python", "cudnnWorkspace"] as const).find((key) => options[key] !== undefined);
    if (only !== undefined) throw invalidArgument(only === "python" ? "--python" : "--cudnn-workspace", String(options[only]), "--gpu ID with it (it applies to a simulated GPU)");
  }
}

/**
 * With --gpu, the job runs on that catalog GPU simulated (whether or not a GPU is present: the
 * answer is for the GPU asked about); --simulate says so explicitly.
 */
function sessionOptions(options: ExecOptions, io: Io): JobSessionOptions {
  const limits = {
    ...jobLimits(options),
    ...(options.runTimeout !== undefined && { runTimeoutMs: options.runTimeout }),
    ...(options.logDir !== undefined && { logDir: options.logDir }),
    ...(io.signal !== undefined && { signal: io.signal }),
  };
  if (options.gpu !== undefined) {
    return {
      ...limits,
      simulate: {
        gpu: options.gpu,
        ...(options.python !== undefined && { python: options.python }),
        ...(options.cudnnWorkspace !== undefined && { cudnnWorkspaceBytes: options.cudnnWorkspace }),
      },
    };
  }
  return { ...(options.device !== undefined && { device: options.device }), ...limits, lock: deviceAccess(options.lockTimeout, io).lock };
}

/** What a simulation cannot vouch for, on stderr after the answer. */
function warnAboutSimulation(simulation: SimulationSummary | undefined, io: Io): void {
  for (const warning of simulation?.warnings ?? []) io.err(`warning: ${warning}`);
}

function warnIfBlind(command: string, io: Io): void {
  if (!jobSeesBatch(command)) {
    io.err("warning: the command has no {batch} and mentions no VRAMFIT_BATCH: every run is the same job unless it reads VRAMFIT_BATCH itself");
  }
}

/** An interruption kills the running job first: say so before run() reports the signal. */
async function killedOnInterrupt<T>(io: Io, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof VramfitError && error.code === "ERR_INTERRUPTED") io.err("vramfit: the running job's process group was killed");
    throw error;
  }
}

function deviceLabel(d: { ordinal: number | null; name: string; id?: string }): string {
  return d.ordinal === null ? `a simulated ${d.name} (${d.id})` : `${d.ordinal}: ${d.name}`;
}

/**
 * Where the job ran: its one device, or every one with `--device all` (or a list): a run fits only
 * if it fits on each, and the budget is the smallest's, which is named.
 */
function devicesLabel(devices: readonly DeviceSummary[], tightest: DeviceSummary): string {
  if (devices.length <= 1) return deviceLabel(tightest);
  return `${devices.length} devices (${devices.map(deviceLabel).join(", ")}; the budget is ${tightest.ordinal ?? tightest.name}'s, the smallest)`;
}

function describeStart(start: JobSearchStart, io: Io): void {
  for (const d of start.devices) {
    io.err(d.ordinal === null ? `device    ${deviceLabel(d)}, ${formatBytes(d.totalBytes)}: vramfit's stub CUDA libraries under the job's PyTorch` : `device    ${deviceLabel(d)} (${d.uuid}), free ${formatBytes(d.freeBytes)} (${start.memorySource})`);
  }
  io.err(`budget    ${formatBytes(start.budgetBytes)}${start.devices.length > 1 ? " (the smallest device's)" : ""}`);
  if (start.logDir !== null) io.err(`logs      ${start.logDir}`);
}

/** Why a run does not fit: the framework's out-of-memory error, or a peak past the budget asked for. */
function refusal(run: JobRun): string {
  if (run.overBudget) return "over the budget";
  return `out of memory${run.outOfMemory === undefined ? "" : ` (${run.outOfMemory})`}`;
}

/**
 * The batch column's width: nine digits. Lines are printed as runs end, so the column cannot grow
 * with the answer; a job whose peak follows its batch (the search stops when it does not) reaches
 * a billion samples only below 80 bytes a sample on an 80 GB GPU.
 */
const BATCH_WIDTH = 9;

/** One line per run, as it ends. */
export function describeRun(run: JobRun, index: number): string {
  const verdict = run.fits ? "fits" : refusal(run);
  const peak = run.peakBytes === null ? "peak unmeasured" : `peak ${formatBytes(run.peakBytes)} (${run.peakSource})`;
  const leftovers = run.killedLeftovers ? "; killed processes it left running" : "";
  return `run ${String(index).padStart(2)}  batch ${String(run.batch).padEnd(BATCH_WIDTH)} ${verdict.padEnd(28)} ${peak.padEnd(32)} ${run.seconds.toFixed(2)} s${leftovers}`;
}

/** How the answer was reached, in one line. */
function describeMethod(r: JobBatchResult): string {
  const last = r.trace.filter((run) => run.batch === r.batchSize || run.batch === r.batchSize + 1).map((run) => run.batch);
  const verified = last.length > 0 ? `; verified by the runs at ${last.join(" and ")}` : "";
  if (r.method === "model" && r.model !== undefined) {
    const measured = r.model.measuredBytes === null ? "unmeasured" : formatBytes(r.model.measuredBytes);
    return `the memory model predicted ${r.model.batchSize} (${formatBytes(r.model.bytes)}; measured ${measured}, within its error), so no calibration${verified}`;
  }
  const disagreed =
    r.model !== undefined
      ? `the model's ${r.model.batchSize} ${r.model.agreed ? "held" : `disagreed (${r.model.measuredBytes === null ? "out of memory" : `${formatBytes(r.model.measuredBytes)} measured, ${formatBytes(r.model.bytes)} modelled`})`}; `
      : "";
  if (r.calibration !== undefined) {
    const { batches, fixedBytes, perSampleBytes } = r.calibration;
    const refined = r.calibration.refinement;
    const predicted =
      r.predictedBatchSize === null
        ? ""
        : ` → predicted ${r.predictedBatchSize}${refined !== undefined && refined.predictedBatchSize !== r.predictedBatchSize ? `, refined on the run at ${refined.batch} to ${refined.predictedBatchSize}` : ""}`;
    return `${disagreed}calibrated on batches ${batches[0]} and ${batches[1]}: ${formatBytes(Math.max(0, fixedBytes))} + ${formatBytes(perSampleBytes)} per sample${predicted}${verified}`;
  }
  return `${disagreed}galloped and bisected over runs (no calibration possible)${verified}`;
}

export async function execBatchCommand(options: ExecOptions, io: Io): Promise<number> {
  refuseConflicts(options);
  const model = hasWorkload(options) ? (await planFromOptions(options, io.signal)).plan : undefined;
  warnIfBlind(options.exec, io);
  const quiet = options.json === true;
  let index = 0;
  const result = await killedOnInterrupt(io, () =>
    findMaxBatchByRunning(options.exec, {
      ...sessionOptions(options, io),
      ...(options.maxBatch !== undefined && { maxBatch: options.maxBatch }),
      ...(options.calibrate !== undefined && { calibrate: options.calibrate }),
      ...(model !== undefined && { model }),
      onStart: (start) => (quiet ? start.logDir !== null && io.err(`logs      ${start.logDir}`) : describeStart(start, io)),
      onRun: (run) => io.err(describeRun(run, (index += 1))),
    }),
  );
  const wanted = options.minBatch ?? 1;
  warnAboutSimulation(result.simulation, io);
  if (options.json) {
    writeJson(io, result);
  } else {
    const above = result.trace.find((run) => run.batch === result.batchSize + 1);
    const next = above === undefined ? "" : `, not at ${result.batchSize + 1}${above.overBudget ? ": over the budget" : ""}`;
    const first = result.trace.find((run) => run.batch === 1);
    const answer = result.batchSize === 0 ? `does not fit: the job ${first?.overBudget ? "went over the budget" : "ran out of memory"} at batch 1` : `batch ${result.batchSize} (the job fits at ${result.batchSize}${next})`;
    io.out(`answer    ${answer} on ${devicesLabel(result.devices, result.device!)}: ${result.runs} run${result.runs === 1 ? "" : "s"} in ${(result.elapsedMs / 1000).toFixed(1)} s`);
    io.out(`how       ${describeMethod(result)}`);
    if (result.logDir !== null) io.out(`logs      ${result.logDir}`);
  }
  return result.batchSize === 0 || result.batchSize < wanted ? ExitStatus.doesNotFit : ExitStatus.ok;
}

export async function execCheckCommand(options: ExecOptions, io: Io): Promise<number> {
  refuseConflicts(options);
  if (options.batch === undefined) throw invalidArgument("--batch", "none", "the batch size to run the job at (with --exec)");
  const workload = givenWorkloadFlag(options);
  if (workload !== undefined) throw invalidArgument("--exec", options.exec, `no ${workload} with check --exec (the job itself is measured at --batch: workload options would be ignored)`);
  warnIfBlind(options.exec, io);
  const result = await killedOnInterrupt(io, () => checkByRunning(options.exec, options.batch!, sessionOptions(options, io)));
  warnAboutSimulation(result.simulation, io);
  if (options.json) {
    writeJson(io, result);
  } else {
    io.err(describeRun(result.run, 1));
    const peak = result.run.peakBytes === null ? "peak unmeasured" : `peak ${formatBytes(result.run.peakBytes)} (${result.run.peakSource})`;
    const verdict = result.fits
      ? "fits"
      : result.run.overBudget
        ? "does not fit (its peak is over the budget: --reserve, --max-mem)"
        : `does not fit (out of memory${result.run.outOfMemory === undefined ? "" : `: ${result.run.outOfMemory}`})`;
    io.out(`${verdict}: the job at batch ${result.batch}, ${peak}, of a ${formatBytes(result.budgetBytes)} budget on ${devicesLabel(result.devices, result.device)} [${result.source}]`);
    if (result.logDir !== null) io.out(`logs      ${result.logDir}`);
  }
  return result.fits ? ExitStatus.ok : ExitStatus.doesNotFit;
}

function hasWorkload(options: WorkloadOptions): boolean {
  return [options.model, options.hfConfig, options.spec, options.params, options.perSample, options.trace].some((o) => o !== undefined);
}

/** The first workload option given (any of them, not only a source: --precision alone would be ignored too). */
function givenWorkloadFlag(options: WorkloadOptions): string | undefined {
  return workloadFlags().find((flag) => (options as Record<string, unknown>)[attributeName(flag)] !== undefined);
}
