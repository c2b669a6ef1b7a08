// `vramfit batch --exec` and `vramfit check --exec` against the simulated driver and NVML, running
// the simulated training job (test/job/sim-job.c): output, exit statuses, signals, bad input.
import { chmodSync, existsSync, mkdtempSync, readFileSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { buildSimJob, jobPids, processAlive, jobEnv, trueMaxBatch, type SimJob } from "../job/simJob.mjs";
import { NO_DRIVER, nvmlSimulator, runCli, runJson, simulatedGpus, startCli } from "./runCli.js";

const MiB = 2 ** 20;
const GiB = 2 ** 30;
const L4 = { name: "NVIDIA L4", totalBytes: 23570219008 };
const T4 = { name: "Tesla T4", totalBytes: 15642329088, usedBytes: 2 * GiB };
const FREE = [L4.totalBytes, T4.totalBytes - T4.usedBytes];
const scratch = mkdtempSync(join(tmpdir(), "vramfit-exec-"));
let job: string;

beforeAll(() => {
  job = buildSimJob();
});

/** A fresh simulated machine (its own ledger) with the job's SIMJOB_* settings; no context cost, so the job's line is its device bytes. */
function machine(description: SimJob, extra: Record<string, string> = {}): Record<string, string> {
  const devices = `${L4.name}:${L4.totalBytes}:0;${T4.name}:${T4.totalBytes}:${T4.usedBytes}`;
  return simulatedGpus(devices, {
    VRAMFIT_NVML_LIBRARY: nvmlSimulator,
    CUDASIM_STATE: join(mkdtempSync(join(scratch, "ledger-")), "ledger"),
    ...jobEnv(description),
    ...extra,
  });
}

async function until(condition: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 1000; i += 1) {
    if (condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`timed out waiting for ${what}`);
}

// Sizes in whole 2 MiB pages and no context: the job's VRAMFIT_PEAK_BYTES line is exactly its device bytes.
const JOB: SimJob = { fixedBytes: GiB, perSampleBytes: 256 * MiB, printPeak: true };

describe("vramfit batch --exec", () => {
  it("answers the job's true largest batch in 4 runs, one line per run, then how it got there; it leaves no log directory behind", async () => {
    const temporary = mkdtempSync(join(scratch, "tmpdir-"));
    const run = await runCli(["batch", "--exec", `${job} {batch}`], machine(JOB, { TMPDIR: temporary }));
    expect(run.status, run.stderr).toBe(0);
    const truth = trueMaxBatch(JOB, FREE[0]!); // (22 GiB − 1 GiB) / 256 MiB = 83.8
    expect(truth).toBe(83);
    expect(run.stdout).toMatch(/^answer {4}batch 83 \(the job fits at 83, not at 84\) on 0: NVIDIA L4: 4 runs in \d+\.\d s\n/);
    expect(run.stdout).toMatch(/\nhow {7}calibrated on batches 1 and 17: 1 GiB \+ 256 MiB per sample → predicted 83; verified by the runs at 83 and 84\n/);
    expect(run.stdout).not.toContain("logs ");
    expect(readdirSync(temporary).filter((f) => f.startsWith("vramfit-exec-"))).toEqual([]);
    const lines = run.stderr.split("\n").filter((l) => l.startsWith("run "));
    expect(lines.map((l) => l.replace(/ +/g, " ").replace(/\d+\.\d\d s$/, "T s"))).toEqual([
      "run 1 batch 1 fits peak 1.25 GiB (job) T s",
      "run 2 batch 17 fits peak 5.25 GiB (job) T s",
      "run 3 batch 83 fits peak 21.75 GiB (job) T s",
      expect.stringMatching(/^run 4 batch 84 out of memory \(PyTorch\) peak .* T s$/),
    ]);
    expect(run.stderr).toMatch(/^device {4}0: NVIDIA L4 \(GPU-[0-9a-f-]+\), free 21\.95 GiB \(nvml\)\nbudget {4}21\.95 GiB\nrun  1  batch 1 /);
  });

  it("--json has every field of the contract", async () => {
    const logDir = join(scratch, "logs-json");
    const { status, json } = await runJson(["batch", "--exec", `${job} {batch}`, "--log-dir", logDir], machine(JOB));
    expect(status).toBe(0);
    expect(json).toMatchObject({
      batchSize: 83,
      source: "job",
      runs: 4,
      trace: [
        { batch: 1, fits: true, peakBytes: GiB + 256 * MiB, peakSource: "job", exitCode: 0 },
        { batch: 17, fits: true, peakBytes: GiB + 17 * 256 * MiB, peakSource: "job", exitCode: 0 },
        { batch: 83, fits: true, peakSource: "job", exitCode: 0 },
        { batch: 84, fits: false, exitCode: 1, outOfMemory: "PyTorch" },
      ],
      calibration: { batches: [1, 17], fixedBytes: GiB, perSampleBytes: 256 * MiB },
      predictedBatchSize: 83,
      device: { ordinal: 0, name: "NVIDIA L4", freeBytes: FREE[0], totalBytes: L4.totalBytes, uuid: expect.stringMatching(/^GPU-/) },
      budgetBytes: FREE[0],
      logDir,
    });
    expect((json.trace as { seconds: number }[]).every((t) => t.seconds > 0)).toBe(true);
    expect(json.elapsedMs).toEqual(expect.any(Number));
    expect(readFileSync(join(logDir, "batch-84.stderr.log"), "utf8")).toContain("CUDA out of memory");
  });

  it("with a workload described, the model seeds the search", async () => {
    const { status, json } = await runJson(
      ["batch", "--exec", `${job} {batch}`, "--params", "1", "--fixed", "3GiB", "--per-sample", "256MiB", "--precision", "fp32", "--optimizer", "sgd"],
      machine({ fixedBytes: 3 * GiB, perSampleBytes: 256 * MiB, printPeak: true }),
    );
    expect(status).toBe(0);
    expect(json).toMatchObject({ batchSize: trueMaxBatch({ fixedBytes: 3 * GiB, perSampleBytes: 256 * MiB }, FREE[0]!), method: "model", model: { agreed: true } });
    expect(json.calibration).toBeUndefined();
  });

  it("--device all: the batch that fits on every GPU", async () => {
    const { status, json } = await runJson(["batch", "--exec", `${job} {batch}`, "--device", "all"], machine(JOB, { SIMJOB_ALL_DEVICES: "1" }));
    expect(status).toBe(0);
    expect(json).toMatchObject({ batchSize: Math.min(trueMaxBatch(JOB, FREE[0]!), trueMaxBatch(JOB, FREE[1]!)), device: { ordinal: 1 } });
    expect((json.devices as unknown[]).length).toBe(2);
  });

  it("--reserve: a run that exits 0 but leaves less than the reserve free does not fit", async () => {
    // The job runs up to batch 83 on the L4; with 4 GiB kept free its peak may reach free − 4 GiB.
    const { status, json } = await runJson(["batch", "--exec", `${job} {batch}`, "--reserve", "4GiB"], machine(JOB));
    expect(status).toBe(0);
    const truth = trueMaxBatch(JOB, FREE[0]! - 4 * GiB); // (17.95 GiB − 1 GiB) / 256 MiB = 67.8
    expect(truth).toBe(67);
    expect(json).toMatchObject({ batchSize: truth, budgetBytes: FREE[0]! - 4 * GiB });
    const trace = json.trace as { batch: number; fits: boolean; exitCode: number; overBudget?: true }[];
    // Every run above the answer that exited 0 is marked; none at or below it.
    expect(trace.filter((r) => r.overBudget).every((r) => r.batch > truth && r.exitCode === 0 && !r.fits)).toBe(true);
    expect(trace.some((r) => r.batch === truth + 1 && !r.fits)).toBe(true);
    // The human answer says why the next batch was refused.
    const human = await runCli(["batch", "--exec", `${job} {batch}`, "--reserve", "4GiB"], machine(JOB));
    expect(human.stdout).toMatch(/^answer {4}batch 67 \(the job fits at 67, not at 68: over the budget\) on 0: NVIDIA L4/);
  });

  it("exits 1 when not even batch 1 fits", async () => {
    const run = await runCli(["batch", "--exec", `${job} {batch}`], machine({ fixedBytes: 30 * GiB, perSampleBytes: MiB }));
    expect(run.status).toBe(1);
    expect(run.stdout).toMatch(/^answer {4}does not fit: the job ran out of memory at batch 1 on 0: NVIDIA L4: 1 run in/);
  });

  it("a crash that is not out of memory: exit 4, naming the batch, the status and the job's last stderr lines, and where its logs are kept", async () => {
    const temporary = mkdtempSync(join(scratch, "tmpdir-"));
    const run = await runCli(["batch", "--exec", `${job} {batch}`], machine(JOB, { SIMJOB_CRASH_AT: "17", TMPDIR: temporary }));
    expect(run.status).toBe(4);
    expect(run.stdout).toBe("");
    expect(run.stderr).toContain(
      "vramfit: batch 17: the job failed with exit status 1, without an out-of-memory message; the last lines of its stderr:\n" +
        "  Traceback (most recent call last):\n" +
        '    File "train.py", line 40, in <module>\n' +
        "  RuntimeError: CUDA error: an illegal memory access was encountered\n",
    );
    const kept = /\nthe runs' logs are kept in (\S+)\n/.exec(run.stderr)?.[1];
    expect(kept?.startsWith(join(temporary, "vramfit-exec-"))).toBe(true);
    expect(readFileSync(join(kept!, "batch-17.stderr.log"), "utf8")).toContain("an illegal memory access");
  });

  it("keeps the last 4 MiB of a job's output, saying how much it dropped (a job printing without end fills no disk)", async () => {
    const logDir = join(scratch, "logs-capped");
    const spew = `head -c 12000000 /dev/zero | tr '\\0' y >&2; echo THE-END >&2; ${job} {batch}`;
    const { status, json } = await runJson(["check", "--exec", spew, "--batch", "2", "--log-dir", logDir], machine(JOB));
    expect(status).toBe(0);
    const log = join(logDir, "batch-2.stderr.log");
    const text = readFileSync(log, "latin1");
    const dropped = 12_000_000 + "THE-END\n".length - 4 * MiB;
    expect(text.split("\n")[0]).toBe(`[vramfit: the first ${dropped} bytes of this output were dropped; the last ${4 * MiB} follow]`);
    expect(statSync(log).size).toBe(text.split("\n")[0]!.length + 1 + 4 * MiB);
    expect(text.endsWith("yyyTHE-END\n")).toBe(true);
    expect(existsSync(`${log}.1`)).toBe(false);
    expect(json).toMatchObject({ logDir, run: { logs: { stderr: log, droppedBytes: { stdout: 0, stderr: dropped } } } });
  });

  it("holds the device's lock for the whole search: a probe on the same GPU waits", async () => {
    const pidFile = join(mkdtempSync(join(scratch, "lock-")), "pids");
    const env = machine({ ...JOB, holdMs: 60_000 }, { SIMJOB_PID_FILE: pidFile });
    const search = startCli(["batch", "--exec", `${job} {batch}`], env);
    await until(() => jobPids(pidFile).length > 0, "the first run");
    const probe = await runCli(["batch", "--params", "1e9", "--per-sample", "1GiB", "--lock-timeout", "0"], env);
    expect(probe.status).toBe(5);
    expect(probe.stderr).toMatch(/being probed by another vramfit process \(pid \d+\)/);
    search.child.kill("SIGTERM");
    expect((await search.finished).status).toBe(143);
  });
});

describe("signals during a run", () => {
  it.each([
    ["SIGINT", 130],
    ["SIGTERM", 143],
  ] as const)("%s kills the job's whole process group, then exits %i", async (signal, status) => {
    const pidFile = join(mkdtempSync(join(scratch, "signal-")), "pids");
    const cli = startCli(["batch", "--exec", `${job} {batch}`], machine({ ...JOB, holdMs: 60_000 }, { SIMJOB_WORKER: "1", SIMJOB_PID_FILE: pidFile }));
    await until(() => jobPids(pidFile).length === 2, "the job and its worker");
    cli.child.kill(signal);
    const run = await cli.finished;
    expect(run.status).toBe(status);
    expect(run.stderr).toContain(`vramfit: the running job's process group was killed\nvramfit: interrupted by ${signal}`);
    expect(jobPids(pidFile).filter(processAlive)).toEqual([]);
  });
});

describe("vramfit check --exec", () => {
  it("exits 0 when the job fits at --batch, with its measured peak", async () => {
    const run = await runCli(["check", "--exec", `${job} {batch}`, "--batch", "50"], machine(JOB));
    expect(run.status).toBe(0);
    expect(run.stdout).toMatch(/^fits: the job at batch 50, peak 13\.50 GiB \(job\), of a 21\.95 GiB budget on 0: NVIDIA L4 \[job\]\n/);
  });

  it("--device all names every device the job ran on, and whose budget it had (it named only device 0)", async () => {
    const run = await runCli(["check", "--exec", `${job} {batch}`, "--batch", "2", "--device", "all"], machine(JOB, { SIMJOB_ALL_DEVICES: "1" }));
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^fits: the job at batch 2, peak .* budget on 2 devices \(0: NVIDIA L4, 1: Tesla T4; the budget is 1's, the smallest\) \[job\]\n/);
  });

  it("exits 1 when it runs out of memory", async () => {
    const { status, json } = await runJson(["check", "--exec", `${job} {batch}`, "--batch", "90"], machine({ ...JOB, oom: "tensorflow" }));
    expect(status).toBe(1);
    expect(json).toMatchObject({ fits: false, batch: 90, needBytes: null, source: "job", run: { outOfMemory: "TensorFlow" } });
  });

  it("--max-mem: exits 1 when the job's peak is over the cap, though it ran", async () => {
    const run = await runCli(["check", "--exec", `${job} {batch}`, "--batch", "50", "--max-mem", "10GiB"], machine(JOB));
    expect(run.status).toBe(1);
    expect(run.stderr).toMatch(/^run  1  batch 50 +over the budget +peak 13\.50 GiB \(job\)/m);
    expect(run.stdout).toMatch(/^does not fit \(its peak is over the budget: --reserve, --max-mem\): the job at batch 50, peak 13\.50 GiB \(job\), of a 10 GiB budget/);
  });

  it("kills a hung job at --run-timeout: exit 4", async () => {
    const run = await runCli(["check", "--exec", `${job} {batch}`, "--batch", "2", "--run-timeout", "200ms"], machine(JOB, { SIMJOB_HANG_AT: "2" }));
    expect(run.status).toBe(4);
    expect(run.stderr).toMatch(/vramfit: batch 2: the job ran past --run-timeout \(200ms\); its process group was killed; its stderr was empty/);
  });

  it("warns when the job cannot know the batch size, and runs it all the same", async () => {
    const wrapper = join(scratch, "fixed-batch.sh");
    writeFileSync(wrapper, `#!/bin/sh\nexec ${job} 4\n`);
    chmodSync(wrapper, 0o755);
    const run = await runCli(["check", "--exec", wrapper, "--batch", "2"], machine(JOB));
    expect(run.status).toBe(0);
    expect(run.stderr).toContain("warning: the command has no {batch} and mentions no VRAMFIT_BATCH");
    // A script that reads VRAMFIT_BATCH is fine.
    const reader = join(scratch, "reads-batch.sh");
    writeFileSync(reader, `#!/bin/sh\nexec ${job} "$VRAMFIT_BATCH"\n`);
    chmodSync(reader, 0o755);
    const quiet = await runCli(["check", "--exec", reader, "--batch", "2"], machine(JOB));
    expect(quiet.status).toBe(0);
    expect(quiet.stderr).not.toContain("warning");
  });
});

describe("bad input", () => {
  it.each([
    [["batch", "--exec", ""], 'vramfit: --exec: expected a command to run (through the shell), e.g. \'python train.py --batch-size {batch}\', got ""\n'],
    [["batch", "--exec", "x {batch}", "--calibrate", "3,1"], 'vramfit: --calibrate: expected two batch sizes B1,B2 with 1 ≤ B1 < B2, e.g. 1,8, got "3,1"\n'],
    [["batch", "--exec", "x {batch}", "--calibrate", "4"], 'vramfit: --calibrate: expected two batch sizes B1,B2 with 1 ≤ B1 < B2, e.g. 1,8, got "4"\n'],
    [["batch", "--exec", "x {batch}", "--run-timeout", "-1"], 'vramfit: --run-timeout: expected a duration such as 60 (seconds), 30s, 500ms, 2m or 1h, at most a day, got "-1"\n'],
    [["batch", "--exec", "x {batch}", "--run-timeout", "0"], 'vramfit: --run-timeout: expected a duration above 0, such as 10m, 90s or 500ms, got "0"\n'],
    [["batch", "--exec", "x {batch}", "--memory", "8GiB"], 'vramfit: --exec: expected no --memory with it (--exec measures the job on the GPU it runs on, or a simulated one with --gpu), got "x {batch}"\n'],
    [["batch", "--exec", "x {batch}", "--simulate"], 'vramfit: --simulate: expected --gpu ID with it: the catalog GPU to simulate (see `vramfit gpus`), got "set"\n'],
    [["batch", "--exec", "x {batch}", "--python", "python3"], 'vramfit: --python: expected --gpu ID with it (it applies to a simulated GPU), got "python3"\n'],
    [["check", "--exec", "x {batch}"], 'vramfit: --batch: expected the batch size to run the job at (with --exec), got "none"\n'],
  ])("%j exits 2 with one line", async (args, message) => {
    const run = await runCli(args, machine(JOB));
    expect({ status: run.status, stderr: run.stderr, stdout: run.stdout }).toEqual({ status: 2, stderr: message, stdout: "" });
  });

  it("needs a GPU: exit 3 without a driver", async () => {
    const run = await runCli(["batch", "--exec", `${job} {batch}`], NO_DRIVER);
    expect(run.status).toBe(3);
    expect(run.stderr).toMatch(/^vramfit: no usable GPU to run the job on: .*; --gpu ID runs it on a simulated catalog GPU\n$/);
  });
});
