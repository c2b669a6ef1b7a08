// One run of the user's job at one batch size: spawned through the shell as the leader of its own
// process group, logged, timed out, measured, and classified (fits, out of memory, or an error).
import { spawn } from "node:child_process";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { VramfitError } from "../errors.js";
import { formatDurationOption } from "../duration.js";
import { CappedLog } from "./cappedLog.js";
import { BATCH_VARIABLE, commandForBatch } from "./jobCommand.js";
import { JobOutput } from "./jobOutput.js";
import type { PeakReading, PeakSampling, PeakSource } from "./peakSampler.js";

/** A hung job's whole process group gets SIGTERM, then SIGKILL this much later. */
export const KILL_GRACE_MS = 500;
export const DEFAULT_RUN_TIMEOUT_MS = 10 * 60 * 1000;

/** One run as the trace reports it. */
export interface JobRun {
  batch: number;
  fits: boolean;
  /** The peak device memory measured for the run (the largest of its devices'); null when unmeasured. */
  peakBytes: number | null;
  peakSource: PeakSource;
  /**
   * What NVML measured too, when the job's own line gave `peakBytes`: the difference is what the
   * line leaves out (the CUDA context, other libraries' memory), which the calibration adds back.
   */
  measuredPeakBytes?: number;
  measuredPeakSource?: PeakSource;
  seconds: number;
  /** The job's exit status; null when a signal ended it (see `signal`). */
  exitCode: number | null;
  signal?: string | null;
  /** The job exited 0, but its peak went past the budget asked for (`--reserve`, `--max-mem`): it does not fit. */
  overBudget?: true;
  /** Which framework's out-of-memory message the job printed, when it did not fit. */
  outOfMemory?: string;
  /**
   * Where the run's stdout and stderr are kept (with `--log-dir`, or after a failure): each keeps
   * its last 4 MiB; `droppedBytes` says how much was cut from the front of each, when any was.
   */
  logs?: { stdout: string; stderr: string; droppedBytes?: { stdout: number; stderr: number } };
  /** The job exited leaving processes in its group, which vramfit killed. */
  killedLeftovers?: true;
  /** On a simulated GPU: what the job read back from the device (as zeros) and what it touched that is not simulated. */
  simulation?: { deviceToHostBytes: number; touched: Record<string, number> };
}

/** A run that neither fitted nor ran out of GPU memory: what the search stops on. */
export class JobRunError extends VramfitError {
  constructor(
    code: "ERR_JOB_FAILED" | "ERR_JOB_TIMEOUT",
    message: string,
    readonly run: JobRun,
  ) {
    super(code, message);
  }
}

export interface RunJobOptions {
  logDir: string;
  runTimeoutMs: number;
  /** The environment the job inherits (vramfit's own); only the batch and the visible devices change. */
  env: NodeJS.ProcessEnv;
  /** `CUDA_VISIBLE_DEVICES` for the job: the selected GPUs' UUIDs. */
  visibleDevices: string;
  signal?: AbortSignal;
  /** Starts measuring the job's memory once it has a pid. */
  measure?: (pid: number) => PeakSampling;
}

/** The cgroup v2 OOM-kill count of vramfit's cgroup (the job's too, unless it moved): evidence for SIGKILL. */
function oomKills(): number | undefined {
  try {
    const group = /^0::(.*)$/m.exec(readFileSync("/proc/self/cgroup", "utf8"))?.[1];
    if (group === undefined) return undefined;
    const events = readFileSync(join("/sys/fs/cgroup", group, "memory.events"), "utf8");
    const count = /^oom_kill (\d+)$/m.exec(events)?.[1];
    return count === undefined ? undefined : Number(count);
  } catch {
    return undefined;
  }
}

function signalGroup(pid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pid, signal);
    return true;
  } catch {
    return false; // ESRCH: nothing left in the group
  }
}

/** SIGKILLs what is left of the group and waits (up to a second: a zombie nobody reaps stays) until it is gone. */
async function killGroupAndWait(pid: number): Promise<boolean> {
  if (!signalGroup(pid, "SIGKILL")) return false;
  for (let waited = 0; waited < 1000 && signalGroup(pid, 0); waited += 5) await new Promise((resolve) => setTimeout(resolve, 5));
  return true;
}

/**
 * Runs `command` at `batch` and waits for it, and for everything it started, to end. Resolves
 * with the run when it fitted or ran out of GPU memory; rejects with a JobRunError when it failed
 * otherwise or timed out, and with the signal's reason when aborted (the job's process group is
 * killed first in every case). The job's stdout and stderr go to `logDir`.
 */
export async function runJobAtBatch(command: string, batch: number, options: RunJobOptions): Promise<JobRun> {
  options.signal?.throwIfAborted();
  const logs = { stdout: join(options.logDir, `batch-${batch}.stdout.log`), stderr: join(options.logDir, `batch-${batch}.stderr.log`) };
  const files: Record<"stdout" | "stderr", CappedLog> = { stdout: new CappedLog(logs.stdout), stderr: new CappedLog(logs.stderr) };
  const output = new JobOutput();
  const killsBefore = oomKills();
  const started = performance.now();
  const child = spawn("/bin/sh", ["-c", commandForBatch(command, batch)], {
    detached: true, // its own session and process group: one kill reaches everything it starts
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...options.env, [BATCH_VARIABLE]: String(batch), CUDA_VISIBLE_DEVICES: options.visibleDevices },
  });
  const spawned = once(child, "spawn").then(
    () => true,
    () => false,
  );
  const exited = new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.on("exit", (code, signal) => resolve([code, signal])));
  const streamsClosed = Promise.all([child.stdout, child.stderr].map((stream) => new Promise((resolve) => stream.on("close", resolve))));
  for (const stream of ["stdout", "stderr"] as const) {
    child[stream].on("data", (chunk: Buffer) => {
      output.write(stream, chunk);
      files[stream].write(chunk);
    });
  }

  let killedFor: "timeout" | "interrupt" | undefined;
  let hardKill: ReturnType<typeof setTimeout> | undefined;
  const pid = child.pid;
  const killGroup = (reason: "timeout" | "interrupt") => {
    if (pid === undefined || killedFor !== undefined) return;
    killedFor = reason;
    signalGroup(pid, "SIGTERM");
    hardKill = setTimeout(() => signalGroup(pid, "SIGKILL"), KILL_GRACE_MS);
  };
  // vramfit exiting at once (a second SIGINT) must not leave the job running.
  const onExit = () => pid !== undefined && signalGroup(pid, "SIGKILL");
  const onAbort = () => killGroup("interrupt");
  const timer = setTimeout(() => killGroup("timeout"), options.runTimeoutMs);
  process.on("exit", onExit);
  options.signal?.addEventListener("abort", onAbort, { once: true });

  let sampling: PeakSampling | undefined;
  let reading: PeakReading = { peakBytes: null, source: "none" };
  let code: number | null;
  let signal: NodeJS.Signals | null;
  let leftovers = false;
  let dropped = { stdout: 0, stderr: 0 };
  try {
    if (!(await spawned) || pid === undefined) throw new VramfitError("ERR_JOB_FAILED", `batch ${batch}: could not start /bin/sh to run the job`);
    sampling = options.measure?.(pid);
    [code, signal] = await exited;
    // Whatever the job left running in its group (a worker, a data loader) goes with it.
    leftovers = await killGroupAndWait(pid);
    await streamsClosed;
  } finally {
    clearTimeout(timer);
    clearTimeout(hardKill);
    process.off("exit", onExit);
    options.signal?.removeEventListener("abort", onAbort);
    if (sampling !== undefined) reading = await sampling.stop();
    output.end();
    dropped = { stdout: files.stdout.close(), stderr: files.stderr.close() };
  }
  if (killedFor === "interrupt") throw options.signal!.reason;

  const fromJob = output.peakBytes !== undefined;
  const run: JobRun = {
    batch,
    fits: code === 0 && killedFor === undefined,
    peakBytes: fromJob ? output.peakBytes! : reading.peakBytes,
    peakSource: fromJob ? "job" : reading.source,
    ...(fromJob && reading.peakBytes !== null && { measuredPeakBytes: reading.peakBytes, measuredPeakSource: reading.source }),
    seconds: (performance.now() - started) / 1000,
    exitCode: code,
    ...(signal !== null && { signal }),
    logs: dropped.stdout + dropped.stderr > 0 ? { ...logs, droppedBytes: dropped } : logs,
  };
  if (killedFor === "timeout") {
    throw new JobRunError("ERR_JOB_TIMEOUT", `batch ${batch}: the job ran past --run-timeout (${formatDurationOption(options.runTimeoutMs)}); its process group was killed${tailText(output)}`, run);
  }
  if (leftovers) run.killedLeftovers = true;
  if (run.fits) return run;
  if (output.outOfMemory !== undefined) return { ...run, fits: false, outOfMemory: output.outOfMemory.framework };
  throw new JobRunError("ERR_JOB_FAILED", `batch ${batch}: ${failure(code, signal, killsBefore)}, without an out-of-memory message${tailText(output)}`, run);
}

/** Why the job ended, in words. A shell reports its child's death by SIGKILL as status 137. */
function failure(code: number | null, signal: NodeJS.Signals | null, killsBefore: number | undefined): string {
  const sigkill = signal === "SIGKILL" || code === 128 + 9;
  if (sigkill) {
    const after = oomKills();
    const counted = killsBefore !== undefined && after !== undefined && after > killsBefore;
    return counted
      ? "the job was killed by the kernel's OOM killer (host memory ran out, not GPU memory: memory.events counted an oom_kill)"
      : `the job was killed by SIGKILL${code === 137 ? " (exit status 137)" : ""}, most often the kernel's OOM killer: host memory, not GPU memory`;
  }
  return signal !== null ? `the job was killed by ${signal}` : `the job failed with exit status ${code}`;
}

function tailText(output: JobOutput): string {
  const tail = output.stderrTail();
  return tail.length === 0 ? "; its stderr was empty" : `; the last lines of its stderr:\n${tail.map((line) => `  ${line}`).join("\n")}`;
}
