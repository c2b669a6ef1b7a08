// `vramfit trace`: the tracer run on the user's Python, its one-line errors passed on with exit 2, and (with a torch venv) a trace that batch --trace probes on the simulator.
import { chmodSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { deviceSteps } from "../../src/fit/allocator.js";
import { findMaxBatch, planTrace } from "../../src/index.js";
import { root, runCli, runJson, simulatedGpus } from "./runCli.js";
import { ciResource } from "../ciResources.js";

// In CI, made beside the tests (.ci/run): wait for it here, before anything reads its variables.
await ciResource("cpu");

const scratch = mkdtempSync(join(tmpdir(), "vramfit-trace-command-"));
const TINY_LLAMA = join(root, "python/tests/configs/tiny-llama.json");

/** A stand-in for Python: prints `stderr` and exits with `status`, recording its arguments and PYTHONPATH. */
function fakePython(name: string, stderr: string, status: number): string {
  const path = join(scratch, name);
  writeFileSync(path, `#!/bin/sh\necho "$@" > "${path}.args"\necho "$PYTHONPATH" > "${path}.path"\ncat >&2 <<'EOF'\n${stderr}\nEOF\nexit ${status}\n`);
  chmodSync(path, 0o755);
  return path;
}

async function refused(args: string[], message: string): Promise<void> {
  const run = await runCli(["trace", ...args]);
  expect(run.status).toBe(2);
  expect(run.stderr.trim().split("\n")).toEqual([message]);
}

describe("vramfit trace", () => {
  it("refuses a model given no way or two ways, and options the tracer cannot honour, before running Python", async () => {
    await refused(["--seq", "16"], 'vramfit: trace: expected exactly one of --hf-config FILE, --torchvision NAME, --timm NAME, --torch FILE.py:FUNCTION, got "no model"');
    await refused(["--hf-config", TINY_LLAMA, "--timm", "resnet50"], 'vramfit: --timm: expected exactly one of --hf-config FILE, --torchvision NAME, --timm NAME, --torch FILE.py:FUNCTION, got "given with --hf-config"');
    await refused(["--hf-config", TINY_LLAMA, "--checkpointing", "selective"], 'vramfit: --checkpointing: expected full, or the bare flag (the tracer checkpoints whole layers with torch.utils.checkpoint), got "selective"');
    await refused(["--hf-config", TINY_LLAMA, "--python", join(scratch, "no-such-python")], `vramfit: --python: expected a Python 3 interpreter with torch (ENOENT), got "${join(scratch, "no-such-python")}"`);
  });

  it("passes the run options on under the tracer's names, the catalog GPU as its compute capability, the package's python/ on PYTHONPATH", async () => {
    const python = fakePython("recording-python", "vramfit trace: torch is not installed in this Python: pip install torch", 4);
    await refused(
      ["--hf-config", TINY_LLAMA, "--python", python, "--seq", "64", "--precision", "bf16", "--checkpointing", "--lora-rank", "8", "--gpu", "A100-80GB", "--out", "t.json"],
      "vramfit: trace: torch is not installed in this Python: pip install torch",
    );
    expect(readFileSync(`${python}.args`, "utf8").trim()).toBe(
      `-m vramfit_trace --hf-config ${TINY_LLAMA} --seq 64 --precision bf16 --lora-rank 8 --out t.json --checkpointing --gpu A100-80GB --compute-capability 8.0`,
    );
    expect(readFileSync(`${python}.path`, "utf8").trim().split(":")[0]).toBe(join(root, "python/"));
  });

  it("never shows a Python stack trace as its own: the last line, one line, exit 2", async () => {
    const traceback = 'Traceback (most recent call last):\n  File "<frozen runpy>", line 198, in _run_module_as_main\n  File "x.py", line 3, in <module>\nImportError: libcudart.so.13: cannot open shared object file';
    await refused(["--torchvision", "resnet50", "--python", fakePython("crashing-python", traceback, 1)], "vramfit: trace: ImportError: libcudart.so.13: cannot open shared object file");
  });

  it("says what it wrote: one line, or with --json the file's workload, batches and event count", async () => {
    // A Python that "traces" by copying the hand-made trace to --out, with a warning on stderr as transformers prints them.
    const path = join(scratch, "copying-python");
    const fixture = join(root, "test/fixtures/trace/hand-made.json");
    writeFileSync(path, `#!/bin/sh\nwhile [ $# -gt 0 ]; do if [ "$1" = --out ]; then cp "${fixture}" "$2"; fi; shift; done\necho "a warning from the model's code" >&2\n`);
    chmodSync(path, 0o755);
    const out = join(scratch, "copied.json");
    const text = await runCli(["trace", "--torchvision", "resnet50", "--python", path, "--out", out]);
    expect(text.status).toBe(0);
    expect(text.stdout).toBe(`trace     ${out}: examples/tiny.py:build (torch), 35 events, fitted at batches 1, 2, 4\n`);
    expect(text.stderr).toBe("a warning from the model's code\n");
    const json = await runJson<{ out: string; events: number; affine: boolean; workload: { parameterCount: number } }>(["trace", "--torchvision", "resnet50", "--python", path, "--out", out]);
    expect(json.json).toMatchObject({ out, events: 35, affine: true, workload: { parameterCount: 335_544_320 } });
  });

  const python = process.env.VRAMFIT_TORCH_CPU_PYTHON;
  const why = python === undefined ? "VRAMFIT_TORCH_CPU_PYTHON is unset (.ci/python-envs.sh makes the torch 2.13 CPU venv)" : !existsSync(python) ? `${python} does not exist` : undefined;
  it.skipIf(why !== undefined)(`traces a tiny Llama that batch --trace then probes on a simulated GPU${why !== undefined ? ` (skipped: ${why})` : ""}`, async () => {
    const out = join(scratch, "tiny-llama.trace.json");
    const traced = await runCli(["trace", "--python", python!, "--hf-config", TINY_LLAMA, "--seq", "16", "--out", out], {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? scratch,
      VRAMFIT_TRACE_CACHE: join(scratch, "cache"),
    });
    expect(traced.status, traced.stderr).toBe(0);
    const plan = planTrace({ path: out, json: JSON.parse(readFileSync(out, "utf8")) });
    const log = join(scratch, "memory.log");
    const batch = await runJson<{ batchSize: number; source: string; probes: number; predictedBatchSize: number; budgetBytes: number; jobContextBytes: number }>(
      ["batch", "--trace", out],
      simulatedGpus("NVIDIA A10:24146608128", { CUDASIM_MEMORY_LOG: log }),
    );
    expect(batch.status).toBe(0);
    expect(batch.json.source).toBe("device");
    expect(batch.json.probes).toBeGreaterThanOrEqual(1);
    // The probe holds the traced step's own segments at the batch it tried first.
    const lines = readFileSync(log, "utf8").trim().split("\n");
    const first = lines.slice(0, lines.findIndex((l) => l.includes(" uncharge "))).map((l) => Number(/bytes=(\d+)/.exec(l)![1]));
    // At the device's capacity for the step (the budget less the job's context), as the probe replays it:
    // its allocations up to the first segment the out-of-memory path gives back (deviceSteps' releases).
    const steps = deviceSteps(plan, batch.json.predictedBatchSize, "pytorch", undefined, batch.json.budgetBytes - batch.json.jobContextBytes);
    expect(first).toEqual(steps.sizes.slice(0, steps.releases[0] ?? steps.sizes.length));
    // And analytically, the library's answer for the same file.
    const analytic = await runJson<{ batchSize: number }>(["batch", "--trace", out, "--gpu", "A10"]);
    expect(analytic.json.batchSize).toBe((await findMaxBatch(plan, { gpu: "A10" })).batchSize);
  }, 120_000);
});
