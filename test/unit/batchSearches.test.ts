// scripts/batch-searches.mjs: today's searches, step for step as their sources run them.
import { describe, expect, it } from "vitest";
import { accelerateFindExecutable, ultralyticsAutobatch } from "../../scripts/batch-searches.mjs";

const GiB = 2 ** 30;

describe("accelerate's find_executable_batch_size", () => {
  it("tries 128, then int(× 0.9) after each out-of-memory, and settles on the first that runs", async () => {
    const r = await accelerateFindExecutable((b) => b <= 100);
    expect(r.trace.map((t) => t.batch)).toEqual([128, 115, 103, 92]);
    expect(r).toMatchObject({ batchSize: 92, trials: 4 });
  });

  it("never tries above 128, and reaches 0 when nothing runs", async () => {
    expect((await accelerateFindExecutable(() => true)).batchSize).toBe(128);
    const none = await accelerateFindExecutable(() => false);
    expect(none.batchSize).toBe(0);
    expect(none.trace.at(-1)).toEqual({ batch: 1, fits: false });
  });
});

describe("Ultralytics' AutoBatch", () => {
  it("profiles 1–16 under 16 GiB (1–64 above) and solves the log-log line for 60 % of the total", async () => {
    // Memory exactly proportional to the batch (0.1 GiB a sample): the line is exact in log space.
    const small = await ultralyticsAutobatch((b) => 0.1 * GiB * b, 15 * GiB);
    expect(small.trace.map((t) => t.batch)).toEqual([1, 2, 4, 8, 16]);
    expect(small.batchSize).toBe(90); // 0.6 × 15 / 0.1
    const large = await ultralyticsAutobatch((b) => 0.1 * GiB * b, 80 * GiB);
    expect(large.trace.map((t) => t.batch)).toEqual([1, 2, 4, 8, 16, 32, 64]);
    expect(large.batchSize).toBe(480);
  });

  it("overshoots when fixed memory flattens the log-log line", async () => {
    // 0.673 GiB fixed + 0.1712 GiB a sample on 79.2 GiB: the largest batch that fits is 458, AutoBatch says 818.
    const r = await ultralyticsAutobatch((b) => (0.673 + 0.1712 * b) * GiB, 79.2 * GiB);
    expect(r.batchSize).toBeGreaterThan(800);
  });

  it("falls back to the last safe profiled batch at a failure, and to 16 outside [1, 1024]", async () => {
    const failing = await ultralyticsAutobatch((b) => (b >= 16 ? null : 0.1 * GiB * b), 15 * GiB);
    expect(failing.batchSize).toBe(8);
    expect((await ultralyticsAutobatch((b) => 0.001 * GiB * b, 15 * GiB)).batchSize).toBe(16); // 9000: out of range
  });
});
