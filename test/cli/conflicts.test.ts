// No silent defaults, no silent conflicts (issue 13, items 6 and 9): an option that cannot apply, or
// two that contradict each other, is one line and exit 2 — never an answer that ignored one of them.
import { describe, expect, it } from "vitest";
import { runCli } from "./runCli.js";

const RAW = ["--params", "1e9", "--per-sample", "1GiB"];

function expectUsageError(run: { status: number | null; stdout: string; stderr: string }, line: string | RegExp): void {
  expect(run.stdout).toBe("");
  expect(run.stderr.trimEnd().split("\n")).toHaveLength(1);
  if (typeof line === "string") expect(run.stderr.trimEnd()).toBe(line);
  else expect(run.stderr.trimEnd()).toMatch(line);
  expect(run.status).toBe(2);
}

describe("options that do not apply to the workload", () => {
  it.each([
    [["--tp", "2"], "vramfit: --tp: expected no --tp for a raw --params workload (it has no layers to split), got 2"],
    [["--checkpointing"], 'vramfit: --checkpointing: expected no --checkpointing for a raw --params workload (it has no layers to recompute), got "full"'],
    [["--attention", "eager"], 'vramfit: --attention: expected no --attention for a raw --params workload (it has no attention), got "eager"'],
    [["--seq", "512"], "vramfit: --seq: expected no --seq for a raw --params workload (it has no layers: its bytes per sample are given by --per-sample), got 512"],
    [["--image", "224"], "vramfit: --image: expected no --image for a raw --params workload (it has no layers: its bytes per sample are given by --per-sample), got 224"],
  ])("%j on a raw --params workload", async (option, line) => {
    expectUsageError(await runCli(["plan", ...RAW, ...option]), line);
  });

  it("a value equal to the default changes nothing and is accepted (--tp 1)", async () => {
    expect((await runCli(["plan", ...RAW, "--tp", "1"])).status).toBe(0);
  });

  it("--generate on an encoder, and --attention or --generate on a CNN", async () => {
    expectUsageError(await runCli(["plan", "--model", "bert-base", "--mode", "infer", "--generate", "8"]), /^vramfit: --generate: expected no --generate for an encoder/);
    expectUsageError(await runCli(["plan", "--model", "resnet50", "--attention", "eager"]), /^vramfit: --attention: expected no --attention for a CNN/);
    expectUsageError(await runCli(["plan", "--model", "resnet50", "--mode", "infer", "--generate", "8"]), /^vramfit: --generate: expected no --generate for a CNN/);
  });

  it("--seq + --generate beyond a learned position table, as --seq alone is", async () => {
    expectUsageError(
      await runCli(["plan", "--model", "gpt2", "--mode", "infer", "--seq", "1000", "--generate", "100"]),
      "vramfit: --generate: expected at most 24 after --seq 1000: gpt2's learned position table holds 1024 tokens, prompt and generated together, got 100",
    );
    expectUsageError(await runCli(["plan", "--model", "gpt2", "--mode", "infer", "--generate", "1"]), /^vramfit: --generate: expected at most 0 after the default --seq 1024/);
    expect((await runCli(["plan", "--model", "gpt2", "--mode", "infer", "--seq", "1000", "--generate", "24"])).status).toBe(0);
    // Rotary positions have no table: Llama generates past its training context (a quality question, not a memory one).
    expect((await runCli(["plan", "--model", "llama-2-7b", "--mode", "infer", "--seq", "4096", "--generate", "100"])).status).toBe(0);
  });
});

describe("options that contradict each other", () => {
  it("--min-batch above --max-batch", async () => {
    expectUsageError(await runCli(["batch", ...RAW, "--gpu", "H100-80GB", "--min-batch", "5", "--max-batch", "3"]), "vramfit: --min-batch: expected at most --max-batch (3): no batch can be both, got 5");
  });

  it("--analytic with --require-gpu, or with --device all", async () => {
    expectUsageError(await runCli(["batch", ...RAW, "--analytic", "--require-gpu"]), /^vramfit: --analytic: expected one of them/);
    expectUsageError(await runCli(["check", ...RAW, "--batch", "1", "--analytic", "--device", "all"]), /^vramfit: --analytic: expected --device N with --analytic/);
  });

  it("--max-mem 0 and check --need 0", async () => {
    expectUsageError(await runCli(["batch", ...RAW, "--gpu", "H100-80GB", "--max-mem", "0"]), 'vramfit: --max-mem: expected a size above 0 (a cap of 0 leaves no memory), got "0"');
    expectUsageError(await runCli(["check", "--need", "0", "--gpu", "H100-80GB"]), 'vramfit: --need: expected a size above 0 (0 bytes always fit), got "0"');
  });

  it("an option given twice (commander would keep the last)", async () => {
    expectUsageError(await runCli(["plan", "--model", "gpt2", "--model", "bert-large"]), 'vramfit: --model: expected --model once (it was given twice), got "bert-large"');
    expectUsageError(await runCli(["batch", ...RAW, "--memory", "1GiB", "--memory", "2GiB"]), /^vramfit: --memory: expected --memory once/);
  });
});

describe("small things users hit (issue 13, item 9)", () => {
  it("commander's own errors carry the same prefix, on one line, the echoed argument cut short", async () => {
    expectUsageError(await runCli(["batch", "--bogus"]), "vramfit: unknown option '--bogus'");
    expectUsageError(await runCli(["batch", "--mdoel", "gpt2"]), "vramfit: unknown option '--mdoel' (Did you mean --model?)");
    const long = await runCli(["batch", `--${"x".repeat(5000)}`]);
    expectUsageError(long, /^vramfit: unknown option '--x+… \(\d+ characters\)$/);
    expect(long.stderr.length).toBeLessThan(400);
  });

  it("8PiB, the limit itself, is a size; one rounding rule for fractions of a unit", async () => {
    // A budget of exactly 2^53 bytes (a need of 8 PiB would pass 2^53 once the job's context is charged).
    const run = await runCli(["check", "--need", "1GiB", "--memory", "8PiB", "--json"]);
    expect(run.status).toBe(0);
    expect(JSON.parse(run.stdout).device.totalBytes).toBe(2 ** 53);
    const context = 512 * 2 ** 20; // the job's CUDA context, charged on top of every need
    // 1.1 KiB = 1,126 B, a small block in a 2 MiB segment; 1e-3 GiB = 1,073,742 B, over 1 MiB: a 20 MiB segment.
    for (const [text, segment] of [["1.1KiB", 2 * 2 ** 20], ["1e-3GiB", 20 * 2 ** 20]] as const) {
      const r = await runCli(["check", "--need", text, "--memory", "1GiB", "--json"]);
      expect(r.status, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout).needBytes, text).toBe(segment + context);
    }
  });

  it("--lock-timeout 1h", async () => {
    expect((await runCli(["batch", ...RAW, "--gpu", "H100-80GB", "--lock-timeout", "1h"])).status).toBe(0);
  });

  it("--device takes a UUID; a malformed one is one line", async () => {
    // GPU-abc is a UUID's prefix now (issue 25): a malformed one has a character no UUID has.
    expectUsageError(await runCli(["batch", ...RAW, "--device", "GPU-xyz"]), /^vramfit: --device: expected a CUDA device ordinal \(0, 1, …\) or a UUID or its first characters \(GPU-…, MIG-…, as nvidia-smi -L prints it\), or all, got "GPU-xyz"$/);
  });

  it("plan --help offers no --device all; check --help shows no plan default for --batch", async () => {
    const plan = (await runCli(["plan", "--help"])).stdout;
    expect(plan).toMatch(/--device <n\|uuid> /);
    expect(plan).not.toMatch(/--device <n\|uuid\|all>/);
    const check = (await runCli(["check", "--help"])).stdout;
    expect(check).toMatch(/--batch <n> +the batch size to check\n/);
    expect(check).not.toContain("plan: 1");
    expect(plan).toMatch(/--batch <n> +the batch size to break down \(default: 1\)/);
  });
});

describe("options that change nothing here are said so, once, on stderr (issue 25, item 9)", () => {
  const warnings = (stderr: string) => stderr.split("\n").filter((line) => line.startsWith("warning: "));

  it("--zero 3 on one GPU warns that it partitions nothing; with --gpus 2, with --offload, and for gpus --fit (which finds the count) it does not", async () => {
    const one = await runCli(["plan", "--model", "gpt2", "--zero", "3", "--batch", "1"]);
    expect(one.status).toBe(0);
    expect(warnings(one.stderr)).toEqual(["warning: --zero 3 over one GPU partitions nothing (its states are divided by --gpus, 1): give --gpus N, or --offload to move them to the host"]);
    for (const args of [["--gpus", "2"], ["--offload", "optimizer"]]) {
      expect(warnings((await runCli(["plan", "--model", "gpt2", "--zero", "3", "--batch", "1", ...args])).stderr)).toEqual([]);
    }
    expect(warnings((await runCli(["gpus", "--fit", "--model", "gpt2", "--zero", "3"])).stderr)).toEqual([]);
  });

  it("--optimizer sgd --optimizer-impl fused is PyTorch's (torch/optim/sgd.py has fused since 2.x), so it is accepted, with a warning that it moves no byte; adamw's fused is not warned about", async () => {
    const sgd = await runCli(["plan", "--model", "gpt2", "--optimizer", "sgd", "--optimizer-impl", "fused", "--batch", "1"]);
    expect(sgd.status).toBe(0);
    expect(warnings(sgd.stderr)).toEqual(["warning: --optimizer-impl fused changes no memory with --optimizer sgd: every implementation of it updates in place, with no temporary"]);
    const adamw = await runCli(["plan", "--model", "gpt2", "--optimizer", "adamw", "--optimizer-impl", "fused", "--batch", "1"]);
    expect(warnings(adamw.stderr)).toEqual([]);
  });

  it("VRAMFIT_ADDON_PATH naming something that is not an addon is the reason, in one line, not a silent fall back to the package's addon", async () => {
    for (const [path, reason] of [
      ["/etc/passwd", "backend  none: native addon does not load: VRAMFIT_ADDON_PATH names /etc/passwd, which is not a vramfit.node (a Node addon's file name ends in .node)"],
      ["/nonexistent/vramfit.node", "backend  none: native addon not found: VRAMFIT_ADDON_PATH names /nonexistent/vramfit.node, which does not exist"],
    ]) {
      const run = await runCli(["info"], { VRAMFIT_ADDON_PATH: path!, VRAMFIT_CUDA_LIBRARY: "libcuda.so.1" });
      expect(run.stdout.split("\n")[0]).toBe(reason);
      expect(run.stderr).toBe("");
    }
  });
});
