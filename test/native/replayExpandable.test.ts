// The addon's replay through expandable segments (native/addon/expandable_replay.h) gives the figures and the map log of the TypeScript one (src/fit/expandableSegments.ts), limit or not, configured or not.
import { describe, expect, it } from "vitest";
import { parseAllocConf } from "../../src/fit/allocConf.js";
import { expandableProbeSteps, replayExpandable } from "../../src/fit/expandableSegments.js";
import { nativeExpandableReplay } from "../../src/native/binding.js";
import { buildPlan } from "../../src/plan/buildPlan.js";
import { allocationTrace } from "../../src/step/allocationTrace.js";
import { presetWorkload } from "../../src/workload/presets.js";
import { randomStep } from "./randomStep.js";

const MiB = 2 ** 20;

const CONFS = ["", "max_split_size_mb:64", "roundup_power2_divisions:4", "large_segment_size_mb:64,roundup_power2_divisions:[1:2,64:8,>:1]"].map((text) => parseAllocConf(`expandable_segments:True${text === "" ? "" : `,${text}`}`));

/**
 * Native and TypeScript replays agree at no limit and at capacities from the mapped peak down to
 * below the allocated one, figures and map log, and so do the pages a device probe replays
 * (expandableProbeSteps, from the native page log); returns how many of those needed the unmaps
 * (retries) and how many did not fit.
 */
function agree(step: { order: Int32Array; bytes: Float64Array }, label: string): { retried: number; failed: number; released: number } {
  let retried = 0;
  let failed = 0;
  let released = 0;
  for (const conf of CONFS) {
    const { allocatedPeakBytes: low, reservedPeakBytes: high } = replayExpandable(step, Number.POSITIVE_INFINITY, conf, { typescript: true });
    for (const capacity of [Number.POSITIVE_INFINITY, high, (low + high) / 2, low + 20 * MiB, low, low * 0.9]) {
      const typescript = replayExpandable(step, capacity, conf, { segments: true, typescript: true });
      expect(replayExpandable(step, capacity, conf, { segments: true }), `${label} capacity ${capacity}`).toEqual(typescript);
      expect(replayExpandable(step, capacity, conf), `${label} capacity ${capacity}, no log`).toEqual({ ...typescript, mapLog: undefined });
      const probe = expandableProbeSteps(step, capacity, conf, { typescript: true });
      expect(expandableProbeSteps(step, capacity, conf), `${label} capacity ${capacity}, probe steps`).toEqual(probe);
      if (probe.releases.length > 0) released += 1;
      if (typescript.allocRetries > 0) retried += 1;
      if (!typescript.fits) failed += 1;
    }
  }
  return { retried, failed, released };
}

describe("replayExpandable, natively", () => {
  it("is there, and its map log is the TypeScript replay's on a hand-made step", () => {
    expect(typeof nativeExpandableReplay()).toBe("function");
    // 30 MiB (two 20 MiB pages), 1 MiB (one 2 MiB page), the 30 MiB freed, then 50 MiB: the cached
    // 40 MiB mapped block takes it with one more page mapped after it.
    const step = { order: Int32Array.of(0, 1, ~0, 2), bytes: Float64Array.of(30 * MiB, MiB, 50 * MiB) };
    const native = replayExpandable(step, Number.POSITIVE_INFINITY, CONFS[0], { segments: true });
    expect(native.mapLog).toEqual([40 * MiB, 2 * MiB, 20 * MiB]);
    expect(native).toMatchObject({ fits: true, reservedPeakBytes: 62 * MiB, allocatedPeakBytes: 51 * MiB, cudaMallocs: 3, cudaFrees: 0, allocRetries: 0, failedAt: -1 });
    expect(native).toEqual(replayExpandable(step, Number.POSITIVE_INFINITY, CONFS[0], { segments: true, typescript: true }));
    // A probe's steps: the three maps, none given back, each in its pool's pages (20 MiB large, 2 MiB small).
    expect(expandableProbeSteps(step, Number.POSITIVE_INFINITY, CONFS[0])).toEqual({ sizes: [40 * MiB, 2 * MiB, 20 * MiB], releases: [], pageBytes: [20 * MiB, 2 * MiB, 20 * MiB], fits: true });
  });

  it.each(["resnet50", "bert-base", "gpt2"])("%s: the same figures and map log as the TypeScript replay, with no limit and under pressure", (name) => {
    const plan = buildPlan(presetWorkload(name)!, { mode: "train", precision: "amp", optimizer: "adamw" });
    let retried = 0;
    let released = 0;
    for (const batch of [1, 24]) {
      const counts = agree(allocationTrace(plan, batch), `${name} batch ${batch}`);
      retried += counts.retried;
      released += counts.released;
    }
    // The out-of-memory path (unmap, retry) ran, and a probe gave pages back, so the comparison covers both.
    expect(retried).toBeGreaterThan(0);
    expect(released).toBeGreaterThan(0);
  });

  it("random steps: the same figures and map log, pressure and failures included", () => {
    let retried = 0;
    let failed = 0;
    for (const seed of [1, 2, 3]) {
      const counts = agree(randomStep(2000, seed), `seed ${seed}`);
      retried += counts.retried;
      failed += counts.failed;
    }
    expect(retried).toBeGreaterThan(0);
    expect(failed).toBeGreaterThan(0);
  });
});
