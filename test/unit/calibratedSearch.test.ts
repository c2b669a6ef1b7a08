// The search over real runs, driven through the library with a runner function: the simulated job's
// memory (test/job/simJob.mjs, the arithmetic of sim-job.c on the simulated driver) decides each run.
import { describe, expect, it } from "vitest";
import { VramfitError } from "../../src/errors.js";
import { findMaxBatchByRunning, type RunOutcome } from "../../src/index.js";
import { deviceBytes, requestedBytes, trueMaxBatch, type SimJob, type SimulatorMemory } from "../job/simJob.mjs";

const MiB = 2 ** 20;
const GiB = 2 ** 30;

/** A runner for a simulated job on `freeBytes`, reporting the peak NVML would (or the job's own line). */
function simulated(job: SimJob, freeBytes: number, simulator: SimulatorMemory = {}, peak: "device" | "requested" | "none" = "device") {
  const batches: number[] = [];
  const run = (batch: number): RunOutcome => {
    batches.push(batch);
    const bytes = deviceBytes(job, batch, simulator);
    const fits = bytes <= freeBytes;
    if (!fits || peak === "none") return { fits, exitCode: fits ? 0 : 1 };
    return { fits, exitCode: 0, peakBytes: peak === "device" ? bytes : requestedBytes(job, batch), peakSource: peak === "device" ? "nvml-process" : "job" };
  };
  return { run, batches };
}

/** Deterministic pseudo-random numbers (a 32-bit LCG), so that every run of the suite sees the same jobs. */
function randoms(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

interface Case {
  job: SimJob;
  freeBytes: number;
  simulator: SimulatorMemory;
}

/** (fixed, perSample, free) triples with answers from 0 to tens of thousands, some with small tensors and noise. */
function cases(count: number): Case[] {
  const random = randoms(12);
  return Array.from({ length: count }, (_, i) => {
    const fixedBytes = Math.floor(random() * 30 * GiB);
    const perSampleBytes = Math.floor(2 ** (17 + random() * 15)); // 128 KiB … 4 GiB
    const freeBytes = Math.floor(fixedBytes * (0.95 + random()) + random() * 60 * GiB);
    const job: SimJob = { fixedBytes, perSampleBytes, parts: 1 + (i % 4) };
    if (i % 3 === 1) Object.assign(job, { smallCount: 3, smallBytes: 1536 * 1024 });
    if (i % 5 === 2) Object.assign(job, { noiseBytes: Math.floor(perSampleBytes / 2), seed: i });
    return { job, freeBytes, simulator: { contextBytes: i % 2 === 0 ? 0 : 500 * MiB } };
  });
}

const CASES = cases(300);

describe("findMaxBatchByRunning with a runner (no device)", () => {
  it("answers the job's true largest batch for 300 (fixed, perSample, free) triples, each batch run at most once", async () => {
    const runsPerAnswer: number[] = [];
    for (const { job, freeBytes, simulator } of CASES) {
      const { run, batches } = simulated(job, freeBytes, simulator);
      const result = await findMaxBatchByRunning(run, { budgetBytes: freeBytes });
      const truth = trueMaxBatch(job, freeBytes, simulator);
      expect(result.batchSize, JSON.stringify({ job, freeBytes, simulator, batches })).toBe(truth);
      expect(new Set(batches).size).toBe(batches.length);
      expect(result.runs).toBe(batches.length);
      expect(result.trace.map((r) => r.batch)).toEqual(batches);
      runsPerAnswer.push(result.runs);
    }
    // Adversarial on purpose: a sample as small as 128 KiB against 2 MiB pages, fixed memory up to
    // 30 GiB, answers up to hundreds of thousands. Realistic jobs are in scripts/bench.mjs.
    const sorted = [...runsPerAnswer].sort((a, b) => a - b);
    expect(sorted[Math.floor(sorted.length / 2)]).toBeLessThanOrEqual(5);
    expect(Math.max(...runsPerAnswer)).toBeLessThanOrEqual(30);
  });

  it("is right with the job's own peak line (no context, no rounding in it) too", async () => {
    for (const { job, freeBytes, simulator } of CASES.slice(0, 100)) {
      const { run } = simulated(job, freeBytes, simulator, "requested");
      expect((await findMaxBatchByRunning(run, { budgetBytes: freeBytes })).batchSize).toBe(trueMaxBatch(job, freeBytes, simulator));
    }
  });

  it("calibrates on 1 and the batch the first peak proves safe, predicts, and verifies with the next batch: 4 runs", async () => {
    // 10 GiB fixed, 100 MiB per sample, 30 GiB free, no context: peak(1) = 10.1 GiB (rounded), so 30 / 10.1 → 2.
    const job = { fixedBytes: 10 * GiB, perSampleBytes: 100 * MiB };
    const { run, batches } = simulated(job, 30 * GiB);
    const result = await findMaxBatchByRunning(run, { budgetBytes: 30 * GiB });
    expect(result.batchSize).toBe(204); // (30 − 10) GiB / 100 MiB = 204.8
    expect(batches).toEqual([1, 2, 204, 205]);
    expect(result).toMatchObject({ method: "calibration", predictedBatchSize: 204, calibration: { batches: [1, 2], fixedBytes: 10 * GiB, perSampleBytes: 100 * MiB } });
  });

  it("needs 3 runs when the safe second batch is the answer (no fixed memory)", async () => {
    const job = { fixedBytes: 0, perSampleBytes: 64 * MiB };
    const { run, batches } = simulated(job, 8 * GiB);
    expect((await findMaxBatchByRunning(run, { budgetBytes: 8 * GiB })).batchSize).toBe(128);
    expect(batches).toEqual([1, 128, 129]);
  });

  it("runs the given calibration batches first", async () => {
    const job = { fixedBytes: 2 * GiB, perSampleBytes: 30 * MiB };
    const { run, batches } = simulated(job, 10 * GiB);
    const result = await findMaxBatchByRunning(run, { budgetBytes: 10 * GiB, calibrate: [4, 16] });
    expect(batches.slice(0, 2)).toEqual([4, 16]);
    expect(result.batchSize).toBe(trueMaxBatch(job, 10 * GiB));
  });

  it("with an exact model runs its answer and the next: 2 runs, no calibration", async () => {
    const job = { fixedBytes: 6 * GiB, perSampleBytes: 250 * MiB };
    const { run, batches } = simulated(job, 40 * GiB);
    const result = await findMaxBatchByRunning(run, { budgetBytes: 40 * GiB, model: { fixedBytes: 6 * GiB, perSampleBytes: 250 * MiB } });
    expect(result.batchSize).toBe(139); // 34 GiB / 250 MiB = 139.26
    expect(batches).toEqual([139, 140]);
    expect(result).toMatchObject({ method: "model", predictedBatchSize: 139, model: { batchSize: 139, agreed: true } });
    expect(result.calibration).toBeUndefined();
  });

  it("calibrates when the first run disagrees with the model by more than its error", async () => {
    const job = { fixedBytes: 6 * GiB, perSampleBytes: 250 * MiB };
    const { run, batches } = simulated(job, 40 * GiB);
    // The model thinks a sample takes half as much: its answer runs out of memory.
    const result = await findMaxBatchByRunning(run, { budgetBytes: 40 * GiB, model: { fixedBytes: 6 * GiB, perSampleBytes: 125 * MiB } });
    expect(result.batchSize).toBe(139);
    expect(batches[0]).toBe(278);
    expect(result).toMatchObject({ method: "calibration", model: { batchSize: 278, agreed: false } });
    expect(result.runs).toBeLessThanOrEqual(5);
  });

  it("uses a fitting seed's peak as its second calibration point", async () => {
    const job = { fixedBytes: 6 * GiB, perSampleBytes: 250 * MiB };
    const { run, batches } = simulated(job, 40 * GiB);
    // The model thinks a sample takes twice as much: its answer fits, but its bytes are far off.
    const result = await findMaxBatchByRunning(run, { budgetBytes: 40 * GiB, model: { fixedBytes: 6 * GiB, perSampleBytes: 500 * MiB } });
    expect(result.batchSize).toBe(139);
    expect(batches).toEqual([69, 1, 139, 140]);
    expect(result.calibration?.batches).toEqual([1, 69]);
  });

  it("answers 0 after one run when batch 1 runs out of memory", async () => {
    const { run, batches } = simulated({ fixedBytes: 20 * GiB, perSampleBytes: GiB }, 20 * GiB);
    expect((await findMaxBatchByRunning(run, { budgetBytes: 20 * GiB })).batchSize).toBe(0);
    expect(batches).toEqual([1]);
  });

  it("stops at --max-batch", async () => {
    const { run, batches } = simulated({ fixedBytes: 0, perSampleBytes: MiB }, 80 * GiB);
    expect((await findMaxBatchByRunning(run, { budgetBytes: 80 * GiB, maxBatch: 64 })).batchSize).toBe(64);
    expect(Math.max(...batches)).toBe(64);
  });

  it("refuses to search unbounded when nothing measures the peak, and searches by runs alone under --max-batch", async () => {
    const job = { fixedBytes: GiB, perSampleBytes: 300 * MiB };
    const error = await findMaxBatchByRunning(simulated(job, 16 * GiB, {}, "none").run, { budgetBytes: 16 * GiB }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(VramfitError);
    expect(error).toMatchObject({ code: "ERR_JOB_UNMEASURED" });
    expect((error as Error).message).toMatch(/VRAMFIT_PEAK_BYTES .*--max-batch/);
    const result = await findMaxBatchByRunning(simulated(job, 16 * GiB, {}, "none").run, { budgetBytes: 16 * GiB, maxBatch: 4096 });
    expect(result).toMatchObject({ batchSize: trueMaxBatch(job, 16 * GiB), method: "search", predictedBatchSize: null });
  });

  it("says so when the peak does not grow with the batch (a job that ignores it)", async () => {
    const same = (): RunOutcome => ({ fits: true, peakBytes: 3 * GiB });
    const error = await findMaxBatchByRunning(same, { budgetBytes: 16 * GiB }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "ERR_JOB_UNMEASURED" });
    expect((error as Error).message).toMatch(/did not grow from batch 1 .* to batch 5/);
  });

  it.each([
    ["calibrating", {}],
    ["seeded by an exact model", { model: { fixedBytes: 2 * GiB, perSampleBytes: 64 * MiB } }],
  ])("stops, saying why, when the peak stops following the batch (a job capping it at 300), %s (issue 25)", async (_, extra) => {
    const job = { fixedBytes: 2 * GiB, perSampleBytes: 64 * MiB };
    const { run, batches } = simulated(job, 80 * GiB);
    // min(batch, 300), as a job that caps its batch at its dataset's length: it fits at every batch.
    const capped = (batch: number): RunOutcome => run(Math.min(batch, 300));
    const error = await findMaxBatchByRunning(capped, { budgetBytes: 80 * GiB, ...extra }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(VramfitError);
    expect(error).toMatchObject({ code: "ERR_JOB_UNMEASURED" });
    expect((error as Error).message).toMatch(/^the job's peak stopped growing with the batch: \d+ bytes at batch \d+, \d+ at batch \d+, where .* min\(batch, len\(dataset\)\)\); give --max-batch/);
    expect(batches.length).toBeLessThanOrEqual(5); // it ran 58 times, answering 2^53 − 1
    // With --max-batch the user asks for the search anyway: bounded, it answers the cap.
    const bounded = await findMaxBatchByRunning(capped, { budgetBytes: 80 * GiB, maxBatch: 5000 });
    expect(bounded.batchSize).toBe(5000);
  });

  it("passes a runner's failure through, after the runs before it", async () => {
    const failing = (batch: number): RunOutcome => {
      if (batch > 1) throw new VramfitError("ERR_JOB_FAILED", `batch ${batch}: crashed`);
      return { fits: true, peakBytes: GiB };
    };
    await expect(findMaxBatchByRunning(failing, { budgetBytes: 8 * GiB })).rejects.toMatchObject({ code: "ERR_JOB_FAILED" });
  });

  it.each([
    [{ calibrate: [3, 1] }, /calibrate: expected two batch sizes B1 < B2/],
    [{ calibrate: [0, 4] }, /calibrate/],
    [{ runTimeoutMs: -1 }, /options\.runTimeoutMs: expected a whole number from 1 to/],
    [{ calibrate: [1, 2], budget: 5 }, /options\.budget: expected no such field/],
    [{ model: { fixedBytes: 1, perSample: 2 } }, /options\.model\.perSample: expected no such field/],
    [{ device: "all", onRun: 3 }, /options\.onRun: expected a function/],
    [{ maxBatch: 0 }, /maxBatch/],
    [{ budgetBytes: -5 }, /budgetBytes/],
  ])("rejects bad options %j", async (options, message) => {
    await expect(findMaxBatchByRunning(() => ({ fits: true }), options as never)).rejects.toThrow(message);
  });

  it("takes every budget and job-model option findMaxBatch takes: a reserve as a percentage, the allocator, the context (issue 25)", async () => {
    const job = { fixedBytes: 2 * GiB, perSampleBytes: 30 * MiB };
    const options = { budgetBytes: 10 * GiB, reservePercent: 5, maxMemBytes: 20 * GiB, allocator: "raw", jobContextBytes: 0 } as const;
    expect((await findMaxBatchByRunning(simulated(job, 10 * GiB).run, options)).batchSize).toBe(trueMaxBatch(job, 10 * GiB));
    await expect(findMaxBatchByRunning(simulated(job, 10 * GiB).run, { ...options, reserveBytes: GiB })).rejects.toThrow(/one reserve: in bytes or as a percentage, not both/);
  });

  it("rejects a job that is neither a command nor a function, and an empty command", async () => {
    await expect(findMaxBatchByRunning(42 as never, { budgetBytes: GiB })).rejects.toMatchObject({ code: "ERR_INVALID_ARGUMENT" });
    await expect(findMaxBatchByRunning("  ", { budgetBytes: GiB })).rejects.toThrow(/command: expected a command to run/);
    await expect(findMaxBatchByRunning(() => ({ fit: true }) as never, { budgetBytes: GiB })).rejects.toThrow(/RunOutcome/);
  });

  it("stops between runs when aborted", async () => {
    const controller = new AbortController();
    const run = (batch: number): RunOutcome => {
      if (batch === 1) controller.abort(new Error("stop"));
      return { fits: true, peakBytes: GiB + batch * MiB };
    };
    await expect(findMaxBatchByRunning(run, { budgetBytes: 8 * GiB, signal: controller.signal })).rejects.toThrow("stop");
  });
});
