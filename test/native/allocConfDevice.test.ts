// A memory fraction on the simulated driver: the device answer equals the analytic one, the fraction taken of the device's own total.
//
// The probe replays the step under per_process_memory_fraction (and the collection it enables) and
// holds the segments that replay makes, so where the fraction is below what the budget allows it
// decides both answers; the analytic side is the same model given the device's total by hand.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findMaxBatch, memGetInfo, releaseDevices } from "../../src/index.js";
import { formatAllocConf, parseAllocConf } from "../../src/fit/allocConf.js";
import { analyticMaxBatch } from "../../src/fit/analytic.js";
import { jobModel } from "../../src/fit/charges.js";
import { presetPlan } from "../reference/emulation.js";
import { simulatorPath, withFault } from "./simulator.js";

const GiB = 2 ** 30;
/** The simulated device's total: small enough that a fraction of it binds the presets below. */
const TOTAL = 24 * GiB;
const CONFIGS = ["per_process_memory_fraction:0.25,garbage_collection_threshold:0.5", "per_process_memory_fraction:0.4,large_segment_size_mb:32"];

beforeAll(() => {
  process.env.VRAMFIT_CUDA_LIBRARY = simulatorPath;
  process.env.VRAMFIT_NVML_LIBRARY = "/nonexistent/libnvidia-ml.so.1";
  process.env.CUDASIM_DEVICES = `vramfit test GPU:${TOTAL}:0`;
  process.env.CUDASIM_CONTEXT_BYTES = "0";
});

afterAll(async () => {
  await releaseDevices();
});

describe("per_process_memory_fraction on the simulated driver", () => {
  it.each(["resnet50", "bert-base"])("%s: the device answer is the analytic one, below the answer without a fraction", async (name) => {
    const plan = presetPlan(name);
    const options = { device: 0, reserveBytes: 0, jobContextBytes: 0, lock: false, keepWarm: true } as const;
    const without = await findMaxBatch(plan, options);
    for (const allocConf of CONFIGS) {
      const device = await findMaxBatch(plan, { ...options, allocConf });
      expect(device.source).toBe("device");
      expect(device.allocConf).toBe(formatAllocConf(parseAllocConf(allocConf)));
      const analytic = await analyticMaxBatch(plan, device.budgetBytes, jobModel({ allocConf, jobContextBytes: 0 }, TOTAL));
      expect(device.batchSize, allocConf).toBe(analytic.batchSize);
      expect(device.batchSize, allocConf).toBeLessThan(without.batchSize);
      expect(device.bytesAtBatch, allocConf).toBeLessThanOrEqual(Math.floor(Number(allocConf.split(",")[0]!.split(":")[1]) * TOTAL));
    }
  }, 60_000);
});

describe("expandable segments on the simulated driver, page by page through its virtual-memory API", () => {
  it.each(["resnet50", "bert-base", "gpt2"])("%s: at three budgets the device answer is the analytic one, and the pages' memory all comes back", async (name) => {
    const plan = presetPlan(name);
    const allocConf = "expandable_segments:True";
    const events: number[] = [];
    for (const budget of [2 * GiB, 6 * GiB, 16 * GiB]) {
      const device = await findMaxBatch(plan, { device: 0, maxMemBytes: budget, reserveBytes: 0, jobContextBytes: 0, lock: false, keepWarm: true, allocConf, onProbe: (event) => event.phase === "start" && events.push(event.allocations) });
      const analytic = await analyticMaxBatch(plan, budget, jobModel({ allocConf, jobContextBytes: 0 }, TOTAL));
      expect({ source: device.source, batch: device.batchSize }, `${budget}`).toEqual({ source: "device", batch: analytic.batchSize });
    }
    expect(events.length).toBeGreaterThan(0);
    expect((await memGetInfo(0)).freeBytes).toBe(TOTAL);
    // The pages are cuMemCreate's: with every cuMemCreate refused, nothing fits (cuMemAlloc would still give it).
    const refused = await withFault("cuMemCreate:2", () => findMaxBatch(plan, { device: 0, maxMemBytes: 6 * GiB, reserveBytes: 0, jobContextBytes: 0, lock: false, keepWarm: true, allocConf }));
    expect(refused.batchSize).toBe(0);
    expect((await memGetInfo(0)).freeBytes).toBe(TOTAL);
  }, 60_000);

  it.each(["resnet50", "bert-base"])("%s: under per_process_memory_fraction too, the device answer is the analytic one, below the answer without the fraction", async (name) => {
    // The fraction is PyTorch's test before it maps (alloc_block), so the probe maps the pages of the
    // replay under it; the pages may pass the cap by less than one page (map_block maps whole pages).
    const plan = presetPlan(name);
    const options = { device: 0, reserveBytes: 0, jobContextBytes: 0, lock: false, keepWarm: true } as const;
    const without = await findMaxBatch(plan, { ...options, allocConf: "expandable_segments:True" });
    const allocConf = "expandable_segments:True,per_process_memory_fraction:0.3";
    const device = await findMaxBatch(plan, { ...options, allocConf });
    const analytic = await analyticMaxBatch(plan, device.budgetBytes, jobModel({ allocConf, jobContextBytes: 0 }, TOTAL));
    expect({ source: device.source, allocConf: device.allocConf, batch: device.batchSize }).toEqual({ source: "device", allocConf, batch: analytic.batchSize });
    expect(device.batchSize).toBeLessThan(without.batchSize);
    expect(device.bytesAtBatch).toBeLessThan(Math.floor(0.3 * TOTAL) + 20 * 2 ** 20);
    expect((await memGetInfo(0)).freeBytes).toBe(TOTAL);
  }, 60_000);
});
