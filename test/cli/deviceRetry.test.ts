// Where the driver grants less than the free figure the budget was made from, the device answer is PyTorch's at the room the device really gave: the probe's retry replays the step there (issue 23 item 2).
import { describe, expect, it } from "vitest";
import { replayStep } from "../../src/fit/allocator.js";
import { buildPlan } from "../../src/plan/buildPlan.js";
import { presetWorkload } from "../../src/workload/presets.js";
import { runJson, simulatedGpus } from "./runCli.js";

interface BatchJson {
  batchSize: number;
  source: string;
  predictedBatchSize: number;
  budgetBytes: number;
  jobContextBytes: number;
}

// An A100-40GB with 512 MiB taken by another process, whose driver keeps 8 GiB of what
// cuMemGetInfo calls free from cuMemAlloc (the simulator's hidden=): vramfit's own context costs
// nothing here (runCli's CUDASIM_CONTEXT_BYTES=0), so the job's segments have 31.5 GiB, while the
// budget, made from the free figure, leaves them 37 GiB.
const GiB = 2 ** 30;
const total = 40 * GiB;
const used = 0.5 * GiB;
const hidden = 8 * GiB;
const room = total - used - hidden;
const A100 = `NVIDIA A100-SXM4-40GB:${total}:${used}:hidden=${hidden}`;

describe("the device search where the free figure overstates what the driver grants", () => {
  it.each(["resnet50", "gpt2"])("%s: the largest batch is the one PyTorch's allocator completes in the room the device gave, not in the budget", async (name) => {
    const run = await runJson<BatchJson>(["batch", "--model", name], simulatedGpus(A100));
    expect(run.status, run.stderr).toBe(0);
    expect(run.json.source).toBe("device");
    const plan = buildPlan(presetWorkload(name)!, { mode: "train", precision: "amp", optimizer: "adamw" });
    const fits = (batch: number, capacity: number) => replayStep(plan, batch, { kind: "pytorch" }, capacity).fits;
    const b = run.json.batchSize;
    // The answer's definition (nonMonotone.test.ts), judged at the device's room.
    expect(fits(b, room)).toBe(true);
    expect(fits(b + 1, room)).toBe(false);
    // The budget's own replay at b holds more than that room at its peak: a probe of its calls
    // alone (vramfit before the retry) runs out of memory there, and answered lower.
    const atBudget = replayStep(plan, b, { kind: "pytorch" }, run.json.budgetBytes - run.json.jobContextBytes);
    expect(atBudget.fits).toBe(true);
    expect(atBudget.reservedPeakBytes).toBeGreaterThan(room);
    expect(b).toBeLessThan(run.json.predictedBatchSize);
  });
});
