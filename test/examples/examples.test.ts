// Each example in examples/ runs here against the simulated driver, the way its README says to run it.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { root, runJson, simulatedGpus, spawnCollected, type CliRun } from "../cli/runCli.js";

const H100 = "NVIDIA H100 80GB HBM3:85520809984:3221225472";
const L4 = "NVIDIA L4:23580639232";
const scratch = mkdtempSync(join(tmpdir(), "vramfit-examples-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

// `vramfit` on the PATH, as `npm install --global vramfit` puts it.
const binDir = join(scratch, "bin");
mkdirSync(binDir);
symlinkSync(join(root, "bin", "vramfit.js"), join(binDir, "vramfit"));

function run(command: string, args: readonly string[], env: Record<string, string>): Promise<CliRun> {
  return spawnCollected(command, args, { cwd: root, env: { PATH: `${binDir}:${process.env.PATH}`, HOME: scratch, ...env } }).finished;
}

/** Runs a TypeScript example the way the README says: npm run example -- FILE ARGS (here: node scripts/run-ts.mjs). */
const runExample = (file: string, args: readonly string[], env: Record<string, string>) => run(process.execPath, [join(root, "scripts", "run-ts.mjs"), file, ...args], env);

describe("examples/slurm-prolog.sh", () => {
  const job = { SLURM_JOB_ID: "4242", SLURMD_NODENAME: "gpu-node-07" };

  it("lets a job that fits on every GPU of the node through, saying so in the job log", async () => {
    const result = await run("bash", ["examples/slurm-prolog.sh", "--need", "70GiB"], simulatedGpus(`${H100};NVIDIA H100 80GB HBM3:85520809984`, job));
    expect(result.status).toBe(0);
    // 70 GiB and the job's 512 MiB context, within free memory less the default reserve (5% of 79.65 GiB).
    expect(result.stderr).toContain("vramfit prolog: job 4242 on gpu-node-07: ok: fits: needs 70.50 GiB of a 72.67 GiB budget on device 0");
    expect(result.stderr).toContain("\n  fits: needs 70.50 GiB of a 75.67 GiB budget on device 1");
  });

  it("refuses a job that does not fit on one of its GPUs, with the reason in the job log", async () => {
    const result = await run("bash", ["examples/slurm-prolog.sh", "--need", "78GiB"], simulatedGpus(`${H100};NVIDIA H100 80GB HBM3:85520809984`, job));
    expect(result.status).toBe(1);
    expect(result.stderr).toContain("job 4242 on gpu-node-07: refused: does not fit: needs 78.50 GiB of a 72.67 GiB budget on device 0 (NVIDIA H100 80GB HBM3) [device]");
  });

  it("takes a workload from $VRAMFIT_CHECK and refuses when there is no GPU", async () => {
    const workload = { VRAMFIT_CHECK: "--model llama-2-7b --mode infer --seq 4096 --batch 8", ...job };
    expect((await run("bash", ["examples/slurm-prolog.sh"], simulatedGpus(H100, workload))).status).toBe(0);
    expect((await run("bash", ["examples/slurm-prolog.sh"], simulatedGpus(L4, workload))).stderr).toMatch(/refused: does not fit: needs [\d.]+ GiB of a 20.86 GiB budget on device 0 \(NVIDIA L4\)/);
    const none = await run("bash", ["examples/slurm-prolog.sh"], { VRAMFIT_CUDA_LIBRARY: "/nonexistent/libcuda.so.1", ...workload });
    expect(none.status).toBe(1);
    expect(none.stderr).toContain("refused: cannot check (exit 3): vramfit: no usable GPU");
  });
});

describe("examples/k8s-init-container.yaml", () => {
  const job = parse(readFileSync(join(root, "examples", "k8s-init-container.yaml"), "utf8"));
  const pod = job.spec.template.spec;
  const init = pod.initContainers[0];
  const env = Object.fromEntries(init.env.map((e: { name: string; value: string }) => [e.name, e.value])) as Record<string, string>;

  it("is a Job whose init container runs the check script from its ConfigMap on the trainer's GPU", () => {
    expect(job.kind).toBe("Job");
    expect(job.spec.backoffLimit).toBe(0);
    expect(pod.restartPolicy).toBe("Never");
    expect(init.command).toEqual(["sh", "/vramfit/k8s-init-check.sh"]);
    expect(init.volumeMounts[0].mountPath).toBe("/vramfit");
    expect(pod.volumes.find((v: { name: string }) => v.name === init.volumeMounts[0].name).configMap.name).toBe("vramfit-check");
    expect(init.resources.limits["nvidia.com/gpu"]).toBe(pod.containers[0].resources.limits["nvidia.com/gpu"]);
    expect(env.VRAMFIT_CHECK).toContain("--batch 8");
  });

  it("passes on a GPU that fits the workload, and fails the pod with the reason as its termination message on one that does not", async () => {
    const message = join(scratch, "termination-log");
    const ok = await run("sh", ["examples/k8s-init-check.sh"], simulatedGpus(H100, { ...env, TERMINATION_LOG: message }));
    expect(ok.status).toBe(0);
    expect(existsSync(message)).toBe(false);
    const refused = await run("sh", ["examples/k8s-init-check.sh"], simulatedGpus(L4, { ...env, TERMINATION_LOG: message }));
    expect(refused.status).toBe(1);
    expect(readFileSync(message, "utf8")).toMatch(/^vramfit refused the pod \(exit 1\): does not fit: needs [\d.]+ GiB of a 20.86 GiB budget on device 0 \(NVIDIA L4\) \[device\]\n/);
  });
});

describe("examples/benchmark.ts", () => {
  it("benchmarks at the batch vramfit finds and writes one JSON record", async () => {
    const out = join(scratch, "bench.json");
    const result = await runExample("examples/benchmark.ts", ["--model", "bert-base", "--seq", "128", "--steps", "3", "--out", out], simulatedGpus(H100));
    expect(result.stderr).toBe("");
    expect(result.status).toBe(0);
    const record = JSON.parse(readFileSync(out, "utf8"));
    const cli = await runJson<{ batchSize: number }>(["batch", "--model", "bert-base", "--seq", "128"], simulatedGpus(H100));
    expect(record.batch).toMatchObject({ size: cli.json.batchSize, source: "device", probes: 2 });
    expect(record.device).toMatchObject({ ordinal: 0, name: "NVIDIA H100 80GB HBM3", freeBytes: 82_299_584_512 });
    expect(record.freeBytesAfter).toBe(82_299_584_512);
    expect(record.benchmark.steps).toBe(3);
    expect(record.benchmark.samplesPerSecond).toBeCloseTo((record.batch.size * 1000) / record.benchmark.medianMs, 6);
  });

  it("honours --reserve 1GiB (Number(\"1GiB\") dropped it silently) and refuses a bad value in one line", async () => {
    const out = join(scratch, "bench-reserve.json");
    const result = await runExample("examples/benchmark.ts", ["--model", "bert-base", "--seq", "128", "--steps", "1", "--reserve", "1GiB", "--out", out], simulatedGpus(H100));
    expect(result.status).toBe(0);
    expect(JSON.parse(readFileSync(out, "utf8")).batch.budgetBytes).toBe(82_299_584_512 - 2 ** 30);
    const bad = await runExample("examples/benchmark.ts", ["--model", "bert-base", "--reserve", "lots"], simulatedGpus(H100));
    expect({ status: bad.status, stdout: bad.stdout }).toEqual({ status: 2, stdout: "" });
    expect(bad.stderr).toBe('benchmark: --reserve: expected a size such as 80GiB, 512MiB, 40GB or 1.5e9 (bytes), got "lots"\n');
    // Two TypeScript runs, each compiling the example first: 30 s at load 16 (a full suite beside other work). The test waits on the processes.
  }, 180_000);
});

describe("examples/launcher.ts", () => {
  const trainer = ["--", process.execPath, "-e", "console.log(JSON.stringify({ args: process.argv.slice(1), batch: process.env.BATCH_SIZE, accumulate: process.env.GRAD_ACCUM_STEPS })); process.exit(7)", "--"];
  const workload = ["--model", "gpt2-large", "--seq", "1024"];

  it("starts the trainer with the micro-batch findMaxBatch finds, rounded down, and the accumulation to the global batch", async () => {
    const cli = await runJson<{ batchSize: number }>(["batch", ...workload], simulatedGpus(H100));
    const batch = Math.floor(cli.json.batchSize / 8) * 8;
    // The launcher needs a micro-batch to round: gpt2-large at seq 1024 answers 14 on an H100 since the model plans
    // today's fp32 attention kernel and loss (issue 21), 8 once rounded. What is tested is the rounding and the accumulation.
    expect(batch).toBeGreaterThanOrEqual(8);
    const result = await runExample("examples/launcher.ts", [...workload, "--multiple-of", "8", "--global-batch", "512", ...trainer, "--micro-batch", "{batch}", "--accumulate", "{accumulate}"], simulatedGpus(H100));
    const accumulate = Math.ceil(512 / batch);
    expect(JSON.parse(result.stdout)).toEqual({ args: ["--micro-batch", String(batch), "--accumulate", String(accumulate)], batch: String(batch), accumulate: String(accumulate) });
    expect(result.stderr).toContain(`launcher: micro-batch ${batch} × ${accumulate} accumulation steps on device 0 (NVIDIA H100 80GB HBM3)`);
    expect(result.status).toBe(7); // the trainer's own exit status
  });

  it("refuses --multiple-of 0 in one line instead of starting the trainer with BATCH_SIZE=NaN", async () => {
    const result = await runExample("examples/launcher.ts", [...workload, "--multiple-of", "0", ...trainer], simulatedGpus(H100));
    expect({ status: result.status, stdout: result.stdout }).toEqual({ status: 2, stdout: "" });
    expect(result.stderr).toBe('launcher: --multiple-of: expected a whole number ≥ 1, got "0"\n');
  });

  it("leaves the trainer all the memory it promised: no context of the launcher's is left on the GPU", async () => {
    // The trainer is a process of its own on the same simulated machine (one ledger), where every
    // context costs 300 MiB: it reads free memory with its own context live. The launcher, still
    // running as its parent, must hold nothing there by then.
    const context = 300 * 2 ** 20;
    const env = simulatedGpus(L4, { CUDASIM_STATE: join(mkdtempSync(join(scratch, "ledger-")), "ledger"), CUDASIM_CONTEXT_BYTES: String(context) });
    const readFree = `const a = require(${JSON.stringify(join(root, "build", "Release", "vramfit.node"))}); a.loadDriver(process.env.VRAMFIT_CUDA_LIBRARY).then(() => a.memGetInfo(0)).then((m) => console.log(JSON.stringify(m)))`;
    const result = await runExample("examples/launcher.ts", ["--model", "gpt2", "--seq", "1024", "--", process.execPath, "-e", readFree], env);
    expect(result.status, result.stderr).toBe(0);
    const seen = JSON.parse(result.stdout) as { freeBytes: number; totalBytes: number };
    expect(seen.freeBytes).toBe(seen.totalBytes - context); // only the trainer's own context
    expect(result.stderr).toMatch(/^launcher: micro-batch \d+ /m);
  });

  it("refuses to train on a guess when there is no GPU (exit 3)", async () => {
    const result = await runExample("examples/launcher.ts", [...workload, ...trainer], { VRAMFIT_CUDA_LIBRARY: "/nonexistent/libcuda.so.1" });
    expect(result.status).toBe(3);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain("launcher: no usable GPU");
  });
});
