// `--alloc-conf`, PYTORCH_CUDA_ALLOC_CONF from the environment, and `plan --events`, through the built CLI.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parseEventsLog } from "../../src/step/eventsFile.js";
import { NO_DRIVER, runCli, runJson } from "./runCli.js";

const dir = mkdtempSync(join(tmpdir(), "vramfit-events-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("the allocator's configuration", () => {
  it("says which configuration it modelled, from the option or the environment", async () => {
    const fromOption = await runJson(["batch", "--model", "resnet50", "--gpu", "A100-40GB", "--alloc-conf", "max_split_size_mb:128"]);
    expect(fromOption.json).toMatchObject({ allocator: "pytorch", allocConf: "max_split_size_mb:128" });
    const inherited = await runCli(["batch", "--model", "resnet50", "--gpu", "A100-40GB"], { ...NO_DRIVER, PYTORCH_CUDA_ALLOC_CONF: "expandable_segments:True" });
    expect(inherited.status).toBe(0);
    expect(inherited.stdout).toContain("allocator PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, from PYTORCH_CUDA_ALLOC_CONF");
    // --allocator expandable is the same configuration, and says so.
    const chosen = await runCli(["batch", "--model", "resnet50", "--gpu", "A100-40GB", "--allocator", "expandable"], NO_DRIVER);
    expect(chosen.stdout).toContain("allocator PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, from --allocator expandable\n");
  });

  it("refuses a bad value in one line, exit 2, naming where it came from", async () => {
    const bad = await runCli(["check", "--model", "resnet50", "--batch", "8", "--gpu", "A100-40GB"], { ...NO_DRIVER, PYTORCH_CUDA_ALLOC_CONF: "max_split_size_mb:8" });
    expect(bad.status).toBe(2);
    expect(bad.stderr.trim().split("\n")).toEqual(['vramfit: PYTORCH_CUDA_ALLOC_CONF: expected max_split_size_mb as a whole number of MiB ≥ 20, got "max_split_size_mb:8"']);
  });

  it("answers expandable segments under a memory fraction below the answer without it, and says it modelled both", async () => {
    const whole = await runJson(["batch", "--model", "resnet50", "--gpu", "A100-40GB", "--allocator", "expandable"]);
    const capped = await runJson(["batch", "--model", "resnet50", "--gpu", "A100-40GB", "--alloc-conf", "expandable_segments:True,per_process_memory_fraction:0.5"]);
    expect(capped.json).toMatchObject({ allocator: "expandable", allocConf: "expandable_segments:True,per_process_memory_fraction:0.5" });
    const [wholeBatch, cappedBatch] = [whole.json.batchSize as number, capped.json.batchSize as number];
    // Half the device for the allocator: well under the whole device's answer, and not nothing.
    expect(cappedBatch).toBeLessThan(0.6 * wholeBatch);
    expect(cappedBatch).toBeGreaterThan(0.4 * wholeBatch);
    const text = await runCli(["batch", "--model", "resnet50", "--gpu", "A100-40GB", "--allocator", "expandable"], { ...NO_DRIVER, PYTORCH_CUDA_ALLOC_CONF: "per_process_memory_fraction:0.5" });
    expect(text.status).toBe(0);
    expect(text.stdout).toContain("allocator PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True,per_process_memory_fraction:0.5, from PYTORCH_CUDA_ALLOC_CONF and --allocator expandable\n");
  });

  it("advises a check that does not fit under a configuration from the batch that configuration reaches (advice took no allocator settings: exit 2)", async () => {
    const conf = "expandable_segments:True,per_process_memory_fraction:0.5";
    const batch = await runJson(["batch", "--model", "resnet50", "--gpu", "A100-40GB", "--alloc-conf", conf]);
    const check = await runJson<{ fits: boolean; needBytes: number; budgetBytes: number; jobContextBytes: number; device: { totalBytes: number }; allocConf: string; advice: { kind: string; fromBatchSize: number; batchSize: number }[] }>(["check", "--model", "resnet50", "--batch", "600", "--gpu", "A100-40GB", "--alloc-conf", conf]);
    expect(check.status, check.stderr).toBe(1);
    expect(check.json).toMatchObject({ fits: false, allocConf: conf });
    const checkpointing = check.json.advice.find((advice) => advice.kind === "checkpointing")!;
    expect(checkpointing.fromBatchSize).toBe(batch.json.batchSize);
    expect(checkpointing.batchSize).toBeGreaterThan(600);
    // What the step needs is its reservation with no limit, not the replay's peak where the fraction
    // stopped it (which stays at the cap): more than the cap, and here less than the budget, so the
    // line names the cap.
    const allowed = Math.floor(0.5 * check.json.device.totalBytes);
    expect(check.json.needBytes - check.json.jobContextBytes).toBeGreaterThan(allowed);
    expect(check.json.needBytes).toBeLessThan(check.json.budgetBytes);
    const text = await runCli(["check", "--model", "resnet50", "--batch", "600", "--gpu", "A100-40GB", "--alloc-conf", conf, "--no-advice"], NO_DRIVER);
    expect(text.stdout.split("\n")[0]).toMatch(/^does not fit: needs [0-9.]+ GiB of a 37\.42 GiB budget on A100-40GB \[analytic\], where per_process_memory_fraction lets PyTorch's allocator reserve 19\.70 GiB$/);
  });

  it("refuses a configuration that cannot go with the allocator asked for, naming the option or variable, not the library's name", async () => {
    const inherited = await runCli(["check", "--model", "resnet50", "--batch", "8", "--gpu", "A100-40GB", "--allocator", "expandable"], { ...NO_DRIVER, PYTORCH_CUDA_ALLOC_CONF: "expandable_segments:False" });
    expect(inherited.status).toBe(2);
    expect(inherited.stderr.trim().split("\n")).toEqual(['vramfit: PYTORCH_CUDA_ALLOC_CONF: expected no expandable_segments:False with the expandable allocator, got "expandable_segments:False"']);
  });
});

describe("plan --events", () => {
  it("writes the step's events at the batch, after a header naming the workload and setup", async () => {
    const file = join(dir, "gpt2.events");
    const run = await runJson(["plan", "--model", "gpt2", "--batch", "2", "--events", file, "--alloc-conf", "roundup_power2_divisions:4"]);
    expect(run.status).toBe(0);
    // The breakdown is the configured allocator's: its rounding shows in what the allocator holds.
    expect(run.json.allocConf).toBe("roundup_power2_divisions:4");
    const plain = await runJson(["plan", "--model", "gpt2", "--batch", "2"]);
    expect(plain.json.allocConf).toBe("");
    expect((run.json.breakdown as { allocator: number }).allocator).toBeGreaterThan((plain.json.breakdown as { allocator: number }).allocator);
    const text = readFileSync(file, "utf8");
    expect(text.split("\n").slice(0, 3)).toEqual(["# vramfit-events 1", `# workload: ${run.json.description as string}`, expect.stringMatching(/^# assumed: /)]);
    expect(text).toContain("# batch: 2\n");
    expect(text).toContain("# PYTORCH_CUDA_ALLOC_CONF: roundup_power2_divisions:4 (from --alloc-conf)\n");
    const events = parseEventsLog(text);
    // Every tensor of the plan is allocated once (none is empty in gpt2's step).
    expect(events.filter((e) => e.kind === "alloc").length).toBe(run.json.tensorCount);
  });
});
