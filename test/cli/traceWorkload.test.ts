// `--trace FILE` is a workload: batch, check, plan and gpus answer for a traced step, probe it on a (simulated) device, and refuse what a trace cannot say.
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { findMaxBatch, planTrace } from "../../src/index.js";
import { deviceSteps } from "../../src/fit/allocator.js";
import { readmeBlock } from "../../scripts/readme-library-example.mjs";
import { root, runCli, runJson, simulatedGpus } from "./runCli.js";

const TRACE = join(root, "test/fixtures/trace/hand-made.json");
const json = () => JSON.parse(readFileSync(TRACE, "utf8")) as Record<string, unknown> & { events: unknown[][] };
const plan = planTrace({ path: TRACE, json: json() });
const scratch = mkdtempSync(join(tmpdir(), "vramfit-trace-"));

interface BatchJson {
  batchSize: number;
  source: string;
  probes: number;
  predictedBatchSize: number;
  budgetBytes: number;
  bytesAtBatch: number;
  jobContextBytes: number;
}

describe("--trace FILE as a workload", () => {
  it("batch: the library's answer for the traced plan, analytically on a catalog GPU", async () => {
    const run = await runJson<BatchJson>(["batch", "--trace", TRACE, "--gpu", "A100-40GB"]);
    expect(run.status).toBe(0);
    const library = await findMaxBatch(plan, { gpu: "A100-40GB" });
    expect(run.json.batchSize).toBe(library.batchSize);
    expect(run.json.batchSize).toBeGreaterThan(0);
    expect(run.json.bytesAtBatch).toBeLessThanOrEqual(run.json.budgetBytes);
  });

  it("batch on a simulated A10: probes allocate the trace's own segments, in the replay's order", async () => {
    const log = join(scratch, "memory.log");
    const run = await runJson<BatchJson>(["batch", "--trace", TRACE], simulatedGpus("NVIDIA A10:24146608128", { CUDASIM_MEMORY_LOG: log }));
    expect(run.status).toBe(0);
    expect(run.json.source).toBe("device");
    expect(run.json.probes).toBeGreaterThanOrEqual(1);
    expect(run.json.batchSize).toBeGreaterThan(0);
    // The first probe, at the predicted batch: every charge up to its first release.
    const lines = readFileSync(log, "utf8").trim().split("\n");
    const first = lines.slice(0, lines.findIndex((l) => l.includes(" uncharge "))).map((l) => Number(/bytes=(\d+)/.exec(l)![1]));
    // At the device's capacity for the step (the budget less the job's context), as the probe replays it:
    // its allocations up to the first segment the out-of-memory path gives back (deviceSteps' releases).
    const steps = deviceSteps(plan, run.json.predictedBatchSize, "pytorch", undefined, run.json.budgetBytes - run.json.jobContextBytes);
    expect(first).toEqual(steps.sizes.slice(0, steps.releases[0] ?? steps.sizes.length));
    // The cuBLAS workspaces the trace could not see are among them: 4 MiB in a 20 MiB segment, 32 MiB its own.
    expect(first.slice(9, 11)).toEqual([20 * 2 ** 20, 32 * 2 ** 20]);
  });

  it("check, plan --timeline and gpus --fit answer for it", async () => {
    const fits = await runJson<{ fits: boolean }>(["check", "--trace", TRACE, "--batch", "8", "--gpu", "A10"]);
    expect([fits.status, fits.json.fits]).toEqual([0, true]);
    const short = await runCli(["check", "--trace", TRACE, "--batch", "400", "--gpu", "A10"]);
    expect(short.status).toBe(1);
    expect(short.stdout).toContain("advice    none for a traced step");
    const planned = await runJson<{ peakPhase: string; timeline: { phase: string }[] }>(["plan", "--trace", TRACE, "--batch", "8", "--timeline"]);
    expect(planned.status).toBe(0);
    expect(planned.json.peakPhase).toBe("optimizer (traced) aten::_foreach_sqrt");
    const timeline = await runCli(["plan", "--trace", TRACE, "--batch", "8", "--timeline"]);
    expect(timeline.stdout).toMatch(/^backward \(traced\)\s+aten::mm\s/m);
    const gpus = await runJson<{ id: string; batchSize: number }[]>(["gpus", "--fit", "--trace", TRACE]);
    expect(gpus.status).toBe(0);
    expect(gpus.json.find((g) => g.id === "A100-40GB")!.batchSize).toBe((await findMaxBatch(plan, { gpu: "A100-40GB" })).batchSize);
  });

  it("refuses, in one line with exit 2, what a trace cannot say", async () => {
    const refused = async (args: string[], message: string) => {
      const run = await runCli(args);
      expect(run.status).toBe(2);
      expect(run.stderr.trim().split("\n")).toHaveLength(1);
      expect(run.stderr).toContain(message);
    };
    await refused(["batch", "--trace", TRACE, "--seq", "512", "--gpu", "A10"], "--seq: expected no --seq with --trace (the trace's run is baked in: trace again with --seq)");
    await refused(["batch", "--trace", TRACE, "--precision", "bf16", "--gpu", "A10"], "--precision: expected no --precision with --trace");
    await refused(["plan", "--trace", TRACE, "--model", "gpt2"], "--model: expected no other workload source with --trace FILE");
    await refused(["batch", "--trace", TRACE, "--solve", "seq", "--batch", "2", "--gpu", "A10"], "--trace: expected a workload vramfit plans with --solve seq");
    await refused(["gpus", "--fit", "--trace", TRACE, "--min-batch", "64"], "--min-batch: expected no --min-batch with --trace");
    await refused(["check", "--trace", TRACE, "--need", "1GiB"], "--need: expected either --need SIZE or a workload with --batch N, not both");
    const bad = json();
    bad.events[3]![5] = "temporaries";
    const badFile = join(scratch, "bad.json");
    writeFileSync(badFile, JSON.stringify(bad));
    await refused(["batch", "--trace", badFile, "--gpu", "A10"], `${badFile}: events[3][5]: expected one of parameters, gradients,`);
    await refused(["batch", "--trace", join(scratch, "missing.json"), "--gpu", "A10"], "--trace: expected a readable JSON file (ENOENT)");
  });

  it("the README's trace example is vramfit's answer for the trace vramfit wrote (regenerate: node scripts/readme-examples.mjs)", async () => {
    const block = readmeBlock(readFileSync(join(root, "README.md"), "utf8"), "trace-example").split("\n");
    expect(block[0]).toMatch(/^\$ vramfit trace --hf-config \S+ --seq 1024 --precision bf16 --gpu H100-80GB --out step\.json$/);
    expect(block[1]).toBe("$ vramfit batch --trace step.json --gpu H100-80GB");
    // test/fixtures/trace/SOURCES.md: the file `vramfit trace` wrote with the options above.
    const run = await runCli(["batch", "--trace", join(root, "test/fixtures/trace/llama-3.2-1b.trace.json"), "--gpu", "H100-80GB"]);
    const withoutTime = (text: string) => text.replace(/\s+[\d.]+ m?s$/gm, "");
    expect(withoutTime(run.stdout.trimEnd())).toBe(withoutTime(block.slice(2).join("\n")));
  });

  it("charges what the trace cannot see once each: its cuBLAS/cuBLASLt workspaces, and the target's context as for any workload", async () => {
    type Planned = { totalBytes: number; breakdown: { workspace: number; context: number } };
    const planOf = async (trace: Record<string, unknown>, extra: string[] = []) => {
      const file = join(scratch, `charged-${Math.random().toString(36).slice(2)}.json`);
      writeFileSync(file, JSON.stringify(trace));
      const run = await runJson<Planned>(["plan", "--trace", file, "--batch", "8", ...extra]);
      expect(run.status).toBe(0);
      return run.json;
    };
    const MiB = 2 ** 20;
    const given = await planOf(json());
    const bare = await planOf({ ...json(), charged: {} });
    // hand-made.json charges one 4 MiB cuBLAS workspace and a 32 MiB cuBLASLt one: each once, nothing else.
    expect(given.breakdown.workspace - bare.breakdown.workspace).toBe(4 * MiB + 32 * MiB);
    // The context is the target's (vramfit's job context, docs/memory-model.md), not the trace's.
    expect(given.breakdown.context).toBe(512 * MiB);
    // A writer that measured its job's context replaces that estimate rather than adding to it; --job-context wins.
    const measured = await planOf({ ...json(), charged: { ...(json().charged as object), contextBytes: 300 * MiB } });
    expect(measured.breakdown.context).toBe(300 * MiB);
    expect(given.totalBytes - measured.totalBytes).toBe(212 * MiB);
    expect((await planOf({ ...json(), charged: { contextBytes: 300 * MiB } }, ["--job-context", "100MiB"])).breakdown.context).toBe(100 * MiB);
  });

  it("a trace whose events did not line up answers at its one batch only", async () => {
    const single = json();
    single.affine = false;
    single.batch = 4;
    single.affineReason = "a different number of allocations at batch 2";
    for (const e of single.events) if (e[0] === "a") [e[2], e[3]] = [(e[2] as number) + 4 * (e[3] as number), 0];
    const file = join(scratch, "single.json");
    writeFileSync(file, JSON.stringify(single));
    const search = await runCli(["batch", "--trace", file, "--gpu", "A10"]);
    expect(search.status).toBe(2);
    expect(search.stderr).toContain("(a different number of allocations at batch 2): it answers only at its batch: check --batch 4 or plan --batch 4");
    expect((await runCli(["check", "--trace", file, "--batch", "5", "--gpu", "A10"])).stderr).toContain("--batch: expected 4, the one batch");
    const at4 = await runJson<{ fits: boolean; needBytes: number }>(["check", "--trace", file, "--batch", "4", "--gpu", "A10"]);
    const affineAt4 = await runJson<{ needBytes: number }>(["check", "--trace", TRACE, "--batch", "4", "--gpu", "A10"]);
    expect(at4.status).toBe(0);
    expect(at4.json.needBytes).toBe(affineAt4.json.needBytes);
    const planned = await runJson<{ batch: number }>(["plan", "--trace", file]);
    expect(planned.json.batch).toBe(4);
  });
});
