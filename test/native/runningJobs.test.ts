// findMaxBatchByRunning and checkByRunning in this process, running the simulated training job
// (test/job/sim-job.c) on a simulated machine whose ledger this process and the jobs share.
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { VramfitError } from "../../src/errors.js";
import { checkByRunning, findMaxBatchByRunning, type JobBatchResult } from "../../src/index.js";
import { openNvml } from "../../src/native/binding.js";
import { buildSimJob, jobPids, processAlive, deviceBytes, jobEnv, requestedBytes, trueMaxBatch, type SimJob } from "../job/simJob.mjs";
import { GiB, MiB, devicesText, nvmlSimulatorPath, simulatorPath, temporaryPath, type SimulatedDevice } from "./simulator.js";

const CONTEXT = 300 * MiB;
/** Six GPUs, each a different free memory: a (fixed, perSample, free) triple per device and job. */
const DEVICES: SimulatedDevice[] = [
  { name: "NVIDIA L4", totalBytes: 23570219008 },
  { name: "Tesla T4", totalBytes: 15642329088, usedBytes: 3 * GiB },
  { name: "NVIDIA A100-SXM4-40GB", totalBytes: 42298834944, usedBytes: 512 * MiB },
  { name: "NVIDIA A100-SXM4-80GB", totalBytes: 85100068864, usedBytes: 20 * GiB },
  { name: "NVIDIA H100 80GB HBM3", totalBytes: 85045477376, usedBytes: 1234567890 },
  { name: "NVIDIA RTX A6000", totalBytes: 51160023040, usedBytes: 7 * GiB },
];
const free = (i: number) => DEVICES[i]!.totalBytes - (DEVICES[i]!.usedBytes ?? 0);
const SIMULATOR = { granularityBytes: 2 * MiB, contextBytes: CONTEXT };
let job: string;

beforeAll(() => {
  job = buildSimJob();
  Object.assign(process.env, {
    VRAMFIT_CUDA_LIBRARY: simulatorPath,
    VRAMFIT_NVML_LIBRARY: nvmlSimulatorPath,
    CUDASIM_DEVICES: devicesText(DEVICES),
    CUDASIM_CONTEXT_BYTES: String(CONTEXT),
    CUDASIM_STATE: temporaryPath("ledger"),
    VRAMFIT_LOCK_DIR: temporaryPath("locks").replace(/\/locks$/, ""),
    // Each run holds its memory until NVML has listed it (sim-job.c): the sampler sees every peak, loaded or not.
    CUDASIM_NVML_SEEN_DIR: temporaryPath("seen").replace(/\/seen$/, ""),
  });
  for (const name of Object.keys(process.env)) if (name.startsWith("SIMJOB_")) delete process.env[name];
});

/** The job's environment on top of this process's (the runs inherit it). */
function env(description: SimJob, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { ...process.env, ...jobEnv(description), ...extra };
}

/**
 * The pids NVML lists on a device (NVML lists GPUs in bus order, CUDASIM_DEVICES order here). With
 * `orUsed`, a device whose list is hidden (CUDASIM_NVML_HIDE_PROCESSES) answers [0] once its used
 * memory rises above what others hold: something is held.
 */
async function nvmlProcesses(ordinal: number, orUsed = false): Promise<number[]> {
  const nvml = await openNvml();
  if (nvml.kind !== "nvml") throw new Error(nvml.reason);
  const device = (await nvml.addon.nvmlDevices())[ordinal]!;
  const pids = (device.processes ?? []).map((p) => p.pid);
  if (pids.length > 0 || !orUsed || process.env.CUDASIM_NVML_HIDE_PROCESSES === undefined) return pids;
  return device.memory!.usedBytes > (DEVICES[ordinal]!.usedBytes ?? 0) ? [0] : [];
}

describe("findMaxBatchByRunning(command) on the simulator", () => {
  const JOBS: SimJob[] = [
    { fixedBytes: 2 * GiB + 12345, perSampleBytes: 150 * MiB + 7, parts: 3, printPeak: true },
    { fixedBytes: 700 * MiB, perSampleBytes: 33 * MiB, parts: 2, smallCount: 4, smallBytes: 3 * MiB, noiseBytes: 10 * MiB, seed: 3, printPeak: true },
  ];
  it.each(DEVICES.flatMap((_, device) => JOBS.map((description, j) => ({ device, j, description }))))(
    "device $device, job $j: the job's true largest batch",
    async ({ device, description }) => {
      const result = await findMaxBatchByRunning(`${job} {batch}`, { device, env: env(description) });
      const truth = trueMaxBatch(description, free(device), SIMULATOR);
      expect(result.batchSize).toBe(truth);
      expect(result.device).toMatchObject({ ordinal: device, freeBytes: free(device) });
      expect(new Set(result.trace.map((r) => r.batch)).size).toBe(result.runs);
      expect(result.trace.every((r) => r.peakSource === "job" || !r.fits)).toBe(true);
      expect(result.runs).toBeLessThanOrEqual(8);
      // Every run freed what it took: the next search sees the same free memory.
      expect(await nvmlProcesses(device)).toEqual([]);
    },
  );

  it("reports every field of the JSON contract, with the calibration and each run's peak", async () => {
    const description: SimJob = { fixedBytes: GiB, perSampleBytes: 256 * MiB, printPeak: true };
    const logDir = mkdtempSync(join(tmpdir(), "vramfit-job-logs-"));
    const result: JobBatchResult = await findMaxBatchByRunning(`${job} {batch}`, { device: 0, env: env(description), logDir });
    const truth = trueMaxBatch(description, free(0), SIMULATOR);
    expect(result).toMatchObject({ batchSize: truth, source: "job", method: "calibration", budgetBytes: free(0), memorySource: "nvml" });
    expect(result.runs).toBe(result.trace.length);
    expect(result.runs).toBeLessThanOrEqual(5);
    expect(result.calibration).toMatchObject({ batches: [1, expect.any(Number)], perSampleBytes: 256 * MiB });
    expect(result.predictedBatchSize).toEqual(expect.any(Number));
    expect(result.trace.slice(-2).map((r) => [r.batch, r.fits])).toEqual([
      [truth, true],
      [truth + 1, false],
    ]);
    for (const run of result.trace) {
      expect(Object.keys(run)).toEqual(expect.arrayContaining(["batch", "fits", "peakBytes", "peakSource", "seconds", "exitCode"]));
      expect(run.exitCode).toBe(run.fits ? 0 : 1);
      expect(run.seconds).toBeGreaterThan(0);
    }
    expect(result.trace[0]).toMatchObject({ batch: 1, peakBytes: requestedBytes(description, 1), peakSource: "job" });
    expect(result.trace.at(-1)).toMatchObject({ outOfMemory: "PyTorch" });
    expect(result.elapsedMs).toBeGreaterThan(0);
    expect(result.device?.uuid).toMatch(/^GPU-/);
    // Each run's output is kept, where asked.
    expect(result.logDir).toBe(logDir);
    expect(readFileSync(join(result.logDir!, "batch-1.stdout.log"), "utf8")).toBe(`step 1 done\nVRAMFIT_PEAK_BYTES=${requestedBytes(description, 1)}\n`);
    expect(readFileSync(join(result.logDir!, `batch-${truth + 1}.stderr.log`), "utf8")).toMatch(/torch\.OutOfMemoryError: CUDA out of memory/);
  });

  it("runs a data-parallel job on every selected GPU: the answer fits on each", async () => {
    const description: SimJob = { fixedBytes: GiB, perSampleBytes: 200 * MiB, printPeak: true };
    const result = await findMaxBatchByRunning(`${job} {batch}`, { device: [1, 2], env: env(description, { SIMJOB_ALL_DEVICES: "1" }) });
    expect(result.batchSize).toBe(Math.min(trueMaxBatch(description, free(1), SIMULATOR), trueMaxBatch(description, free(2), SIMULATOR)));
    expect(result.device?.ordinal).toBe(1); // the T4, with less free memory, bounds it
    expect(result.devices.map((d) => d.ordinal)).toEqual([1, 2]);
  });

  it("with an exact model of the job, runs its answer and the next: 2 runs", async () => {
    // The job's line leaves out its context, which only NVML's sampling adds: were the sampler to
    // miss it (CUDASIM_NVML_SEEN_DIR above), the search would start 3 batches too high (5 runs).
    const description: SimJob = { fixedBytes: 4 * GiB, perSampleBytes: 100 * MiB, printPeak: true };
    const result = await findMaxBatchByRunning(`${job} {batch}`, {
      device: 4,
      env: env(description),
      // What the job asks for plus its context and its rounding: the device bytes it takes.
      model: { fixedBytes: 4 * GiB + CONTEXT, perSampleBytes: 100 * MiB, relativeError: 0.1 },
    });
    expect(result).toMatchObject({ batchSize: trueMaxBatch(description, free(4), SIMULATOR), runs: 2, method: "model" });
  });
});

describe("what a run's output means", () => {
  it.each([
    ["pytorch", "PyTorch"],
    ["pytorch-legacy", "PyTorch"],
    ["cuda-runtime", "CUDA runtime"],
    ["cuda-driver", "CUDA driver"],
    ["cublas", "cuBLAS"],
    ["cudnn", "cuDNN"],
    ["jax", "JAX/XLA"],
    ["tensorflow", "TensorFlow"],
  ])("%s's out-of-memory message: does not fit (%s)", async (style, framework) => {
    const description: SimJob = { fixedBytes: 20 * GiB, perSampleBytes: GiB, oom: style };
    const result = await checkByRunning(`${job} {batch}`, 2, { device: 0, env: env(description) });
    expect(result).toMatchObject({ fits: false, needBytes: null, source: "job", run: { batch: 2, fits: false, exitCode: 1, outOfMemory: framework } });
  });

  it("a peak line above the device's total is an error naming it, not \"fits\" (issue 25)", async () => {
    const error = await findMaxBatchByRunning("echo VRAMFIT_PEAK_BYTES=$(( {batch} * 100000000000000 ))", { device: 0, env: process.env }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(VramfitError);
    expect(error).toMatchObject({ code: "ERR_JOB_UNMEASURED" });
    const [message, logs] = (error as Error).message.split("\n");
    expect(message).toBe(
      `batch 1: the job reported a peak of 100000000000000 bytes (VRAMFIT_PEAK_BYTES), more than the device's ${DEVICES[0]!.totalBytes}: print the bytes this GPU used (torch.cuda.max_memory_reserved())`,
    );
    // A failed search keeps its temporary logs, and says where.
    const kept = /^the runs' logs are kept in (\S+)$/.exec(logs ?? "")?.[1];
    expect(readFileSync(join(kept!, "batch-1.stdout.log"), "utf8")).toBe("VRAMFIT_PEAK_BYTES=100000000000000\n");
  });

  it("a log directory that cannot be made (under /proc) is refused at once, not spun on (issue 25)", async () => {
    const error = await findMaxBatchByRunning(`${job} {batch}`, { device: 0, env: process.env, logDir: "/proc/vramfit-no-such/logs" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(VramfitError);
    expect((error as Error).message).toMatch(/^--log-dir: expected a directory vramfit can create and write to \(ENOENT\), got "\/proc\/vramfit-no-such\/logs"/);
  }, 10_000);

  it("reads the message on stdout too", async () => {
    const result = await checkByRunning(`${job} {batch}`, 2, { device: 0, env: env({ fixedBytes: 20 * GiB, perSampleBytes: GiB, oom: "jax" }, { SIMJOB_OOM_STREAM: "stdout" }) });
    expect(result.run).toMatchObject({ fits: false, outOfMemory: "JAX/XLA" });
  });

  it("a crash without an out-of-memory message is an error naming the batch, the status and the job's last stderr lines", async () => {
    const description: SimJob = { fixedBytes: GiB, perSampleBytes: 64 * MiB, printPeak: true };
    const error = await findMaxBatchByRunning(`${job} {batch}`, { device: 0, env: env(description, { SIMJOB_CRASH_AT: "5" }) }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(VramfitError);
    expect(error).toMatchObject({ code: "ERR_JOB_FAILED" });
    const message = (error as Error).message;
    expect(message).toMatch(/^batch (\d+): the job failed with exit status 1, without an out-of-memory message; the last lines of its stderr:\n/);
    expect(Number(/^batch (\d+)/.exec(message)![1])).toBeGreaterThanOrEqual(5);
    expect(message).toContain("  RuntimeError: CUDA error: an illegal memory access was encountered");
  });

  it("a job killed by SIGKILL (the kernel's OOM killer) is a host-memory error, not 'does not fit'", async () => {
    const error = await checkByRunning(`${job} {batch}`, 3, { device: 0, env: env({ perSampleBytes: MiB }, { SIMJOB_KILL_AT: "3" }) }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "ERR_JOB_FAILED" });
    // /bin/sh reports its child's SIGKILL as status 137.
    expect((error as Error).message).toMatch(/^batch 3: the job was killed by (SIGKILL|the kernel's OOM killer).*host memory/);
  });

  it("a job that hangs is killed with its process group at the run timeout", async () => {
    const pidFile = temporaryPath("pids");
    const started = performance.now();
    const error = await checkByRunning(`${job} {batch}`, 2, { device: 0, runTimeoutMs: 300, env: env({ perSampleBytes: MiB }, { SIMJOB_HANG_AT: "1", SIMJOB_WORKER: "1", SIMJOB_PID_FILE: pidFile }) }).catch(
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ code: "ERR_JOB_TIMEOUT" });
    expect((error as Error).message).toMatch(/^batch 2: the job ran past --run-timeout \(300ms\); its process group was killed/);
    expect(performance.now() - started).toBeGreaterThanOrEqual(300);
    expect(jobPids(pidFile).length).toBeGreaterThanOrEqual(1);
    expect(jobPids(pidFile).filter(processAlive)).toEqual([]);
  });
});

describe("measuring a run's peak", () => {
  const HELD: SimJob = { fixedBytes: GiB, perSampleBytes: 100 * MiB };

  /**
   * Runs the job at batch 10 on `device`, holding its memory until this test has seen NVML list
   * it (and then 200 ms more, for the sampler, which asks NVML every 10 ms in this same process):
   * what is measured does not depend on how busy the machine is. Returns the check and what NVML
   * listed while the memory was held.
   */
  async function heldRun(device: number, extra: Record<string, string> = {}) {
    const release = temporaryPath("release");
    const pidFile = temporaryPath("pids");
    const running = checkByRunning(`${job} {batch}`, 10, { device, env: env(HELD, { SIMJOB_HOLD_UNTIL: release, SIMJOB_PID_FILE: pidFile, ...extra }) });
    let listed: number[] = [];
    try {
      for (let i = 0; i < 3000 && listed.length === 0; i += 1) {
        listed = await nvmlProcesses(device, true);
        if (listed.length === 0) await new Promise((resolve) => setTimeout(resolve, 10));
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
    } finally {
      writeFileSync(release, "");
    }
    return { result: await running, listed, pids: jobPids(pidFile) };
  }

  it("sums NVML's per-process memory over the job's process tree: a forked worker holding the memory counts", async () => {
    const { result, listed, pids } = await heldRun(5, { SIMJOB_WORKER: "1" });
    const [parent, worker] = pids;
    expect(worker).not.toBe(parent);
    expect(listed).toEqual([worker]); // the worker holds it all; the job's own process has no context
    expect(result).toMatchObject({ fits: true, needBytes: deviceBytes(HELD, 10, SIMULATOR), run: { peakSource: "nvml-process", peakBytes: deviceBytes(HELD, 10, SIMULATOR) } });
  });

  it("falls back to the device's used memory over its baseline where NVML lists no processes, and says so", async () => {
    process.env.CUDASIM_NVML_HIDE_PROCESSES = "1";
    try {
      // This test's own reading ignores the switch's effect by looking at used memory instead.
      const { result } = await heldRun(5);
      expect(result.run).toMatchObject({ peakSource: "device-used", peakBytes: deviceBytes(HELD, 10, SIMULATOR) });
    } finally {
      delete process.env.CUDASIM_NVML_HIDE_PROCESSES;
    }
  });

  it("holds no CUDA context of its own while the job runs: NVML lists only the job", async () => {
    const { listed, pids } = await heldRun(3);
    expect(listed).toEqual(pids);
    expect(listed).not.toContain(process.pid);
  });

  it("passes the environment through, adding only VRAMFIT_BATCH and CUDA_VISIBLE_DEVICES (the GPU's UUID)", async () => {
    const out = temporaryPath("env");
    const result = await checkByRunning(`env > ${out}; ${job}`, 7, { device: 2, env: env({ perSampleBytes: MiB }, { SOME_SETTING: "a b=c" }) });
    const seen = Object.fromEntries(
      readFileSync(out, "utf8")
        .trim()
        .split("\n")
        .map((line) => [line.slice(0, line.indexOf("=")), line.slice(line.indexOf("=") + 1)]),
    );
    expect(seen).toMatchObject({ SOME_SETTING: "a b=c", VRAMFIT_BATCH: "7", CUDA_VISIBLE_DEVICES: result.device.uuid, CUDASIM_STATE: process.env.CUDASIM_STATE });
    for (const [name, value] of Object.entries(process.env)) if (!["PWD", "OLDPWD", "SHLVL", "_"].includes(name)) expect(seen[name], name).toBe(value);
    expect(result.fits).toBe(true); // sim-job read the batch from VRAMFIT_BATCH
  });

  it("kills the running job's process group when aborted, and rejects with the reason", async () => {
    const pidFile = temporaryPath("pids");
    const controller = new AbortController();
    const running = checkByRunning(`${job} {batch}`, 2, { device: 0, signal: controller.signal, env: env({ perSampleBytes: MiB, holdMs: 60_000 }, { SIMJOB_WORKER: "1", SIMJOB_PID_FILE: pidFile }) });
    for (let i = 0; i < 500 && jobPids(pidFile).length < 2; i += 1) await new Promise((resolve) => setTimeout(resolve, 10));
    controller.abort(new Error("stop"));
    await expect(running).rejects.toThrow("stop");
    expect(jobPids(pidFile)).toHaveLength(2);
    expect(jobPids(pidFile).filter(processAlive)).toEqual([]);
  });
});

describe("bad input", () => {
  it("rejects an empty command and a bad batch before touching a device", async () => {
    await expect(checkByRunning("", 1)).rejects.toThrow(/command: expected a command to run/);
    await expect(checkByRunning(`${job} {batch}`, 0)).rejects.toThrow(/batch: expected a whole number ≥ 1/);
  });

  it("names --log-dir when it cannot be made", async () => {
    const file = temporaryPath("not-a-dir");
    writeFileSync(file, "");
    await expect(checkByRunning(`${job} {batch}`, 1, { logDir: join(file, "logs"), env: env({ perSampleBytes: MiB }) })).rejects.toThrow(/--log-dir: expected a directory vramfit can create/);
  });
});
