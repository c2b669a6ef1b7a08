// The simulated GPU under PyTorch itself (issue 20): torch 2.14.1's CUDA build on vramfit's stub
// libraries (build/Release/stubs/cuda13), the job's own allocator counted by the stubs. Needs
// VRAMFIT_TORCH_CUDA_PYTHON (.ci/python-envs.sh); each test skips with one line without it.
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, mkdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { findGpu } from "../../src/devices/catalog.js";
import { multiprocessorsOf } from "../../src/devices/multiprocessors.js";
import { prepareSimulatedGpu, readSimulatedRun, simulatedRunEnv } from "../../src/job/simulatedGpu.js";
import { root, runCli, runJson, spawnCollected } from "../cli/runCli.js";
import { withTorchDefaults } from "./torchDefaults.js";
import { ciResource } from "../ciResources.js";

// In CI, made beside the tests (.ci/run): wait for it here, before anything reads its variables.
await ciResource("cuda");

const python = process.env.VRAMFIT_TORCH_CUDA_PYTHON;
const skip = python === undefined || python === "" ? "VRAMFIT_TORCH_CUDA_PYTHON is unset (source .ci/python-envs.sh)" : undefined;
if (skip !== undefined) console.log(`test/job/simulatedGpu.test.ts skips: ${skip}`);
const MiB = 2 ** 20;
const scratch = mkdtempSync(join(tmpdir(), "vramfit-simulated-"));
// examples/pytorch/train_mlp.py with a barrier on torch's autograd device thread before it exits: without it, a
// run aborted at exit once in ~17 CI runs (a torch 2.14.1 race that the simulated GPU's instant kernels make
// likelier; test/fixtures/simulated/autograd_join.py says why, autogradExitRace.test.ts forces it).
const job = join(root, "test", "fixtures", "simulated", "train_mlp_joined.py");

/** Runs a Python script under the stubs, as a simulated `gpu`, and parses its last line as JSON. */
function runSimulated(gpu: string, script: string, args: string[] = []): Record<string, unknown> {
  const sim = prepareSimulatedGpu({ gpu, python: python! }, 512 * MiB);
  const env = { ...withTorchDefaults(process.env), ...simulatedRunEnv(sim, join(scratch, `${gpu}-${Date.now()}`), process.env), CUDA_VISIBLE_DEVICES: "0" };
  const out = execFileSync(python!, [script, ...args], { env, encoding: "utf8", timeout: 300_000 });
  return JSON.parse(out.trim().split("\n").pop()!) as Record<string, unknown>;
}

describe.skipIf(skip !== undefined)("PyTorch on a simulated GPU", () => {
  it("an MLP's AdamW step: max_memory_allocated is the hand count, on an H100 as the catalog describes it", () => {
    const r = runSimulated("H100-80GB", join(root, "test", "fixtures", "simulated", "mlp_step.py")) as {
      maxAllocated: number; parameters: number[]; input: number; device: string; capability: number[]; multiprocessors: number;
    };
    expect(r.device).toBe(findGpu("H100-80GB").name);
    expect(r.capability).toEqual([9, 0]);
    expect(r.multiprocessors).toBe(multiprocessorsOf(findGpu("H100-80GB"))!.count);
    // PyTorch's caching allocator rounds every block up to 512 B (c10/cuda/CUDACachingAllocator.cpp, kMinBlockSize).
    const round = (b: number) => Math.ceil(b / 512) * 512;
    const weights = r.parameters.reduce((sum, b) => sum + round(b), 0);
    const largest = Math.max(...r.parameters);
    // At the peak, inside optimizer.step(): weights, their gradients, AdamW's exp_avg and exp_avg_sq
    // (made at the first step), and for the largest weight the two temporaries of
    // `(exp_avg_sq.sqrt() / bias_correction2_sqrt)` (torch/optim/adamw.py, _single_tensor_adamw, 2.14.1);
    // the input and the loss; and the 32 MiB workspaces of cuBLAS and of cuBLASLt (the Linear's
    // addmm with a bias runs on cuBLASLt), which torch 2.14.1 takes through its allocator on
    // compute capability 9.0 (aten/src/ATen/cuda/CublasHandlePool.cpp, getChosenWorkspaceSize).
    const hand = 4 * weights + 2 * round(largest) + round(r.input) + 512 + 2 * 32 * MiB;
    expect(Math.abs(r.maxAllocated - hand)).toBeLessThanOrEqual(64 * 1024);
  }, 300_000);

  it("a CNN under bf16 autocast and a Hugging Face Llama with SDPA take their steps, through cuDNN's graph API", () => {
    const prefix = join(scratch, "cudnn");
    const sim = prepareSimulatedGpu({ gpu: "H100-80GB", python: python! }, 512 * MiB);
    const env = { ...process.env, ...simulatedRunEnv(sim, prefix, process.env), CUDA_VISIBLE_DEVICES: "0" };
    const out = execFileSync(python!, [join(root, "test", "fixtures", "simulated", "cnn_llama_steps.py")], { env, encoding: "utf8", timeout: 300_000 });
    const r = JSON.parse(out.trim().split("\n").pop()!) as { cnn: number; llama: number };
    // Both steps ran; each peak holds at least the two 32 MiB cuBLAS workspaces of its matmuls.
    expect(r.cnn).toBeGreaterThan(32 * MiB);
    expect(r.llama).toBeGreaterThan(64 * MiB);
    // The stub cuDNN executed plans of its graph API (convolutions, and cuDNN attention at 9.0).
    const touched = readSimulatedRun(prefix).touched;
    expect(touched["cudnn.executions"]).toBeGreaterThan(0);
  }, 300_000);

  it("batch --exec on a simulated T4 finds the batch that running every batch finds", async () => {
    // Where the time goes (idle, per Python process): importing torch ~1.9 s of CPU, and torch.optim's first
    // optimizer importing torch._dynamo ~1.9 s more; the step itself is milliseconds. The search pays both per run
    // (its runs are the user's own processes); every_batch.py pays them once and forks per batch. The two are
    // independent, so they run at once.
    const sim = prepareSimulatedGpu({ gpu: "T4", python: python! }, 512 * MiB);
    const env = { ...process.env, ...simulatedRunEnv(sim, join(scratch, "every"), process.env), CUDA_VISIBLE_DEVICES: "0" };
    const every = spawnCollected(python!, [join(root, "test", "fixtures", "simulated", "every_batch.py"), join(root, "examples", "pytorch"), "16384", "1"], { env }).finished;
    const args = ["--seq", "16384", "--steps", "1"];
    // every_batch.py's children leave by os._exit: no barrier needed (see `job`).
    const search = await runJson<{ batchSize: number; source: string; runs: number; device: { name: string }; simulation: { gpu: string; torch: string } }>(
      ["batch", "--exec", `${python} ${job} --batch-size {batch} ${args.join(" ")}`, "--gpu", "T4", "--python", python!, "--json"],
      { ...(process.env as Record<string, string>) },
    );
    expect(search.status).toBe(0);
    expect(search.json.source).toBe("simulated-gpu");
    expect(search.json.simulation.gpu).toBe("T4");
    const reference = await every;
    expect(reference.status, reference.stderr.slice(-2000)).toBe(0);
    expect(search.json.batchSize).toBe(Number(reference.stdout.trim()));
    expect(search.json.batchSize).toBeGreaterThan(1);
  }, 600_000);

  it("a job that reads its loss with .item() is warned, with the bytes it read", async () => {
    const run = await runCli(["check", "--exec", `${python} ${job} --batch-size 1 --seq 256 --steps 1 --item`, "--batch", "1", "--gpu", "T4", "--python", python!], { ...(process.env as Record<string, string>) });
    expect(run.status).toBe(0);
    expect(run.stderr).toMatch(/warning: the job read 4 B \(4 bytes\) back from the simulated GPU/);
  }, 300_000);

  it("a run that aborts with libstdc++'s line for torch's exit race is a failure that says so; another abort is not", async () => {
    // Stand-ins for the job: a shell that prints what the race prints (autogradExitRace.test.ts makes the real one) and
    // aborts itself, under vramfit's shell as a Python job would be (so exit status 134), and one that aborts silently.
    const abort = (line: string) => `sh -c '${line}kill -ABRT $$' {batch}`;
    const runs = await Promise.all(
      [abort("echo terminate called without an active exception >&2; "), abort("")].map((job) =>
        runCli(["check", "--exec", job, "--batch", "1", "--gpu", "T4", "--python", python!], { ...(process.env as Record<string, string>) }),
      ),
    );
    for (const run of runs) expect(run.status, run.stderr).toBe(4);
    expect(runs[0]!.stderr).toMatch(/terminate called without an active exception\n[\s\S]*\n\(on the simulated GPU this is likely torch's autograd exit race after a backward pass, not the batch: docs\/exec\.md/);
    expect(runs[1]!.stderr).not.toMatch(/exit race/);
  }, 120_000);

  it("refuses, in one line and before any run, a torch whose imports the stubs lack", () => {
    // A fake torch: its libtorch_cuda.so links the stub runtime and imports a cuDNN function no
    // stub provides, versioned libcudnn.so.9 as the real library's are.
    const fake = join(scratch, "fake");
    const lib = join(fake, "torch", "lib");
    mkdirSync(lib, { recursive: true });
    writeFileSync(join(fake, "torch", "__init__.py"), "");
    writeFileSync(join(scratch, "cudnn.map"), "libcudnn.so.9 { global: cudnn*; local: *; };\n");
    writeFileSync(join(scratch, "cudnn.c"), "int cudnnVramfitNeverProvided(void) { return 0; }\n");
    writeFileSync(join(scratch, "torch_cuda.c"), "int cudnnVramfitNeverProvided(void);\nint use(void) { return cudnnVramfitNeverProvided(); }\n");
    const cc = (args: string[]) => spawnSync("cc", args, { encoding: "utf8" });
    expect(cc(["-shared", "-fPIC", "-o", join(scratch, "libcudnn.so.9"), join(scratch, "cudnn.c"), "-Wl,-soname,libcudnn.so.9", `-Wl,--version-script=${join(scratch, "cudnn.map")}`]).status).toBe(0);
    const stubs = join(root, "build", "Release", "stubs", "cuda13");
    expect(cc(["-shared", "-fPIC", "-o", join(lib, "libtorch_cuda.so"), join(scratch, "torch_cuda.c"), "-Wl,--no-as-needed", join(scratch, "libcudnn.so.9"), join(stubs, "libcudart.so.13")]).status).toBe(0);
    const run = spawnSync(process.execPath, [join(root, "bin", "vramfit.js"), "check", "--exec", "touch ran-{batch}", "--batch", "1", "--gpu", "H100-80GB", "--python", python!], {
      cwd: scratch,
      env: { ...process.env, PYTHONPATH: fake },
      encoding: "utf8",
    });
    expect(run.status).toBe(3);
    expect(run.stderr).toMatch(/^vramfit: torch \S+ imports functions the simulated GPU's libraries lack, so nothing ran: libcudnn\.so\.9: cudnnVramfitNeverProvided\n$/);
    expect(spawnSync("ls", [join(scratch, "ran-1")]).status).not.toBe(0);
  }, 120_000);
});
