// `plan --svg FILE`: the chart's geometry is read back through its own axis labels, and must put
// the budget line at the budget and the answer at the batch `vramfit batch` finds.
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { NO_DRIVER, runCli, runJson, simulatedGpus } from "./runCli.js";

const GiB = 2 ** 30;
const dir = mkdtempSync(join(tmpdir(), "vramfit-svg-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Chart {
  svg: string;
  /** Batch size at an x coordinate, from the x axis's tick labels. */
  batchAt(x: number): number;
  /** Bytes at a y coordinate, from the y axis's tick labels (GiB). */
  bytesAt(y: number): number;
  attr(id: string, name: string): number;
}

/** Reads a chart back: a linear map from two tick labels per axis, and the marked elements' attributes. */
function readChart(path: string): Chart {
  const svg = readFileSync(path, "utf8");
  const ticks = (kind: string, coordinate: "x" | "y") =>
    [...svg.matchAll(new RegExp(`<text class="${kind}" x="([\\d.]+)" y="([\\d.]+)"[^>]*>([\\d.]+)</text>`, "g"))].map((m) => ({
      at: Number(coordinate === "x" ? m[1] : m[2]),
      value: Number(m[3]),
    }));
  const linear = (points: { at: number; value: number }[]) => {
    const first = points[0]!;
    const last = points.at(-1)!;
    return (at: number) => first.value + ((at - first.at) * (last.value - first.value)) / (last.at - first.at);
  };
  const xTicks = ticks("x-tick", "x");
  const yTicks = ticks("y-tick", "y");
  expect(xTicks.length).toBeGreaterThanOrEqual(3);
  expect(yTicks.length).toBeGreaterThanOrEqual(3);
  return {
    svg,
    batchAt: linear(xTicks),
    bytesAt: (y) => linear(yTicks)(y) * GiB,
    attr(id, name) {
      const element = svg.match(new RegExp(`<[a-z]+ id="${id}"[^>]*>`))?.[0];
      const value = element?.match(new RegExp(` ${name}="([\\d.]+)"`))?.[1];
      if (value === undefined) throw new Error(`no ${name} on #${id} in ${path}`);
      return Number(value);
    },
  };
}

const bertLarge = ["--model", "bert-large", "--seq", "512", "--precision", "amp", "--optimizer", "adamw"];

describe("vramfit plan --svg", () => {
  it("on a catalog GPU: the budget line at its memory, the answer at batch's answer, the asked batch marked", async () => {
    const file = join(dir, "h100.svg");
    const plan = await runJson<{ target: { maxBatch: number; budgetBytes: number; budgetSource: string } }>(["plan", ...bertLarge, "--batch", "32", "--gpu", "H100-80GB", "--svg", file], NO_DRIVER);
    expect(plan.status).toBe(0);
    const batch = await runJson<{ batchSize: number; budgetBytes: number; bytesAtBatch: number }>(["batch", ...bertLarge, "--gpu", "H100-80GB"], NO_DRIVER);
    expect(plan.json.target).toMatchObject({ maxBatch: batch.json.batchSize, budgetBytes: batch.json.budgetBytes, budgetSource: "analytic" });

    const chart = readChart(file);
    // 0.1 GiB: a tenth of a pixel on this chart's 0–120 GiB axis is 0.03 GiB.
    expect(Math.abs(chart.bytesAt(chart.attr("budget", "y1")) - batch.json.budgetBytes)).toBeLessThan(0.1 * GiB);
    expect(chart.batchAt(chart.attr("answer", "x1"))).toBeCloseTo(batch.json.batchSize, 0);
    // The answer's marker sits on the total curve at the bytes the batch takes.
    expect(Math.abs(chart.bytesAt(chart.attr("answer", "y2")) - batch.json.bytesAtBatch)).toBeLessThan(0.2 * GiB);
    expect(chart.batchAt(chart.attr("batch", "cx"))).toBeCloseTo(32, 0);
    expect(chart.svg).toContain(`largest batch ${batch.json.batchSize}</text>`);
    expect(chart.svg).toContain("budget 75.24 GiB: H100-80GB's memory less the 3.96 GiB reserve");
    for (const category of ["parameters", "gradients", "optimizerStates", "activations", "context"]) expect(chart.svg).toContain(`data-category="${category}"`);
  });

  it("on a GPU: the budget is the measured free memory, and the answer the one batch finds there", async () => {
    const file = join(dir, "device.svg");
    const gpus = simulatedGpus("NVIDIA H100 80GB HBM3:85520809984:3221225472");
    const plan = await runCli(["plan", ...bertLarge, "--svg", file], gpus);
    expect(plan.status).toBe(0);
    expect(plan.stdout).toContain(`chart     ${file}`);
    const batch = await runJson<{ batchSize: number; budgetBytes: number }>(["batch", ...bertLarge], gpus);
    expect(batch.json.budgetBytes).toBe(82_299_584_512 - 4_276_040_500); // free less the default 5% reserve
    const chart = readChart(file);
    expect(Math.abs(chart.bytesAt(chart.attr("budget", "y1")) - batch.json.budgetBytes)).toBeLessThan(0.1 * GiB);
    expect(chart.attr("answer", "data-batch")).toBe(batch.json.batchSize);
    expect(chart.batchAt(chart.attr("answer", "x1"))).toBeCloseTo(batch.json.batchSize, 0);
    expect(chart.svg).toContain("measured free on device 0 (NVIDIA H100 80GB HBM3) less the 3.98 GiB reserve");
    expect(chart.svg).not.toContain('id="batch"'); // no --batch given: nothing else marked
  });

  it("says so when not even batch 1 fits", async () => {
    const file = join(dir, "small.svg");
    const result = await runJson<{ target: { maxBatch: number } }>(["plan", "--model", "llama-2-7b", "--memory", "8GiB", "--svg", file]);
    expect(result.json.target.maxBatch).toBe(0);
    expect(readChart(file).svg).toContain('<text id="answer" data-batch="0"');
  });

  it("needs a target: with no GPU and no --gpu/--memory it exits 3 naming them, and writes nothing", async () => {
    const file = join(dir, "none.svg");
    const result = await runCli(["plan", ...bertLarge, "--svg", file], NO_DRIVER);
    expect(result.status).toBe(3);
    expect(result.stderr).toMatch(/no usable GPU: .*name a target with --gpu or --memory/);
    expect(existsSync(file)).toBe(false);
  });

  it("rejects a file it cannot write and --device all, in one line each (exit 2)", async () => {
    const unwritable = await runCli(["plan", ...bertLarge, "--gpu", "A100-80GB", "--svg", join(dir, "no", "such", "dir.svg")]);
    expect(unwritable.status).toBe(2);
    expect(unwritable.stderr).toMatch(/^vramfit: --svg: expected a file that can be written \(ENOENT\)/);
    const all = await runCli(["plan", ...bertLarge, "--device", "all", "--svg", join(dir, "all.svg")], simulatedGpus("A:85520809984"));
    expect(all.status).toBe(2);
    expect(all.stderr).toBe('vramfit: --device: expected a CUDA device ordinal (0, 1, …) or a UUID or its first characters (GPU-…, MIG-…, as nvidia-smi -L prints it), got "all"\n');
  });

  it("leaves plan --json as it was without a target", async () => {
    const result = await runJson(["plan", ...bertLarge, "--batch", "32"]);
    expect(result.json).not.toHaveProperty("target");
  });
});

describe("vramfit plan --timeline --svg", () => {
  it("draws the step's phases, stacked by category, the peak marked where --json puts it; no target needed", async () => {
    const file = join(dir, "timeline.svg");
    const args = ["plan", "--model", "gpt2", "--precision", "fp32", "--optimizer", "adam", "--attention", "eager", "--batch", "8", "--timeline", "--svg", file];
    const run = await runJson<{ peakPhase: string; timeline: { phase: string; bytes: number }[] }>(args, NO_DRIVER);
    expect(run.status).toBe(0);
    const svg = readFileSync(file, "utf8");
    const peak = run.json.timeline.reduce((best, p) => (p.bytes > best.bytes ? p : best));
    expect(svg).toContain(`<circle id="peak" data-phase="${run.json.peakPhase}" data-bytes="${peak.bytes}"`);
    // One layer per category present, the forward, backward and optimizer sections labelled.
    expect([...svg.matchAll(/<polygon class="layer" data-category="(\w+)"/g)].map((m) => m[1])).toEqual(["parameters", "optimizerStates", "gradients", "kvCache", "activations", "workspace"]);
    expect(svg).toMatch(/>forward<\/text>[\s\S]*>backward<\/text>[\s\S]*>optimizer\.step<\/text>[\s\S]*>zero_grad<\/text>/);
  });

  it("draws every category the plan has: DDP's communication buffers too, in plan --svg's colour", async () => {
    const timeline = join(dir, "timeline-ddp.svg");
    const chart = join(dir, "chart-ddp.svg");
    const ddp = ["plan", "--model", "gpt2", "--precision", "fp32", "--optimizer", "adam", "--gpus", "2", "--batch", "8"];
    const run = await runJson<{ breakdown: Record<string, number> }>([...ddp, "--timeline", "--svg", timeline], NO_DRIVER);
    expect(run.status).toBe(0);
    expect(run.json.breakdown.communication).toBeGreaterThan(0);
    expect((await runCli([...ddp, "--gpu", "A100-80GB", "--svg", chart], NO_DRIVER)).status).toBe(0);
    const fill = (svg: string) => /data-category="communication"[^>]* fill="(#[0-9a-f]{6})"/.exec(svg)?.[1];
    expect(fill(readFileSync(timeline, "utf8"))).toBe("#d55e00");
    expect(fill(readFileSync(chart, "utf8"))).toBe("#d55e00");
  });
});
