// probe(): allocation boundaries, granularity rounding, cleanup, serialization, and threading.
import { beforeAll, describe, expect, it } from "vitest";

import type { Addon } from "../../src/native/addonTypes.js";
import { GiB, MiB, rejection, startSimulator } from "./simulator.js";

const G = 2 * MiB; // the simulator's default allocation granularity, as on real GPUs
const totalBytes = GiB;
const freeBytes = GiB - 100 * MiB; // 462 granules
const syncDelayMs = 50;

let addon: Addon;

beforeAll(async () => {
  ({ addon } = await startSimulator({
    devices: [{ name: "NVIDIA L4", totalBytes, usedBytes: 100 * MiB }],
    syncDelayMs,
  }));
  expect(await addon.memGetInfo(0)).toEqual({ freeBytes, totalBytes });
});

describe("the fit boundary", () => {
  it("exactly the free memory fits, leaving nothing free at the peak", async () => {
    expect(await addon.probe(0, [freeBytes], { touch: true })).toEqual({
      fits: true,
      failedIndex: -1,
      allocated: 1,
      freeBytesAtPeak: 0,
    });
  });

  it("one granule more does not fit, and the failure is a result, not an error", async () => {
    expect(await addon.probe(0, [freeBytes + G], { touch: true })).toEqual({
      fits: false,
      failedIndex: 0,
      allocated: 0,
      freeBytesAtPeak: freeBytes,
    });
  });

  it("reports the index that ran out and the free memory with the earlier ones held", async () => {
    expect(await addon.probe(0, [100 * MiB, 200 * MiB, freeBytes, 4], { touch: false })).toEqual({
      fits: false,
      failedIndex: 2,
      allocated: 2,
      freeBytesAtPeak: freeBytes - 300 * MiB,
    });
  });
});

describe("granularity", () => {
  it("a single byte over a granule boundary costs a whole granule", async () => {
    const result = await addon.probe(0, [freeBytes - G + 1], { touch: false });
    expect(result.freeBytesAtPeak).toBe(0);
    expect((await addon.probe(0, [freeBytes + 1], { touch: false })).fits).toBe(false);
  });

  it("two tensors of one granule plus a byte take two granules each", async () => {
    // By raw bytes these need freeBytes - G + 2 and would fit; rounded they need freeBytes + G.
    const tooMany = await addon.probe(0, [freeBytes - 3 * G, G + 1, G + 1], { touch: true });
    expect(tooMany).toEqual({ fits: false, failedIndex: 2, allocated: 2, freeBytesAtPeak: G });
    const exact = await addon.probe(0, [freeBytes - 4 * G, G + 1, G + 1], { touch: true });
    expect(exact).toEqual({ fits: true, failedIndex: -1, allocated: 3, freeBytesAtPeak: 0 });
  });

  it("skips zero-byte sizes instead of failing on them", async () => {
    expect(await addon.probe(0, [0, G, 0], { touch: true })).toEqual({
      fits: true,
      failedIndex: -1,
      allocated: 1,
      freeBytesAtPeak: freeBytes - G,
    });
    expect(await addon.probe(0, [], { touch: false })).toEqual({
      fits: true,
      failedIndex: -1,
      allocated: 0,
      freeBytesAtPeak: freeBytes,
    });
  });
});

describe("cleanup", () => {
  it("1,000 probes, fitting and not, leave free memory exactly where it started", async () => {
    let seed = 12345;
    const random = (limit: number) => {
      seed = (seed * 48271) % 2147483647; // MINSTD: exact in doubles
      return seed % limit;
    };
    let fits = 0;
    for (let i = 0; i < 1000; i++) {
      const first = random(freeBytes / 2);
      // Even rounds stay well inside the free memory, odd rounds overshoot it by up to 64 MiB.
      const second = i % 2 === 0 ? random(freeBytes / 4) : freeBytes - first + random(64 * MiB) + 1;
      const result = await addon.probe(0, [first, second, random(3 * MiB)], { touch: i % 100 === 0 });
      if (result.fits) fits++;
      else expect(result.failedIndex).toBe(1);
    }
    expect(fits).toBe(500);
    expect(await addon.memGetInfo(0)).toEqual({ freeBytes, totalBytes });
  });
});

describe("concurrency", () => {
  it("serializes probes on one device: two that each need 60% of the memory both fit", async () => {
    const size = Math.floor(freeBytes * 0.6 / G) * G;
    // touch makes each probe hold its memory through a slow cuCtxSynchronize, so unserialized
    // probes would overlap and the second would run out of memory.
    const results = await Promise.all([
      addon.probe(0, [size], { touch: true }),
      addon.probe(0, [size], { touch: true }),
    ]);
    for (const result of results) {
      expect(result).toEqual({ fits: true, failedIndex: -1, allocated: 1, freeBytesAtPeak: freeBytes - size });
    }
  });

  it("runs off the JS thread: timers fire while a probe synchronizes", async () => {
    let timerFired = false;
    setTimeout(() => (timerFired = true), 5);
    const started = performance.now();
    await addon.probe(0, [G], { touch: true });
    expect(performance.now() - started).toBeGreaterThanOrEqual(syncDelayMs - 5);
    expect(timerFired).toBe(true);
  });
});

describe("argument checks", () => {
  it.each([
    ["a negative size", [-1]],
    ["NaN", [G, Number.NaN]],
    ["a fraction", [1.5]],
    ["Infinity", [Number.POSITIVE_INFINITY]],
    ["more than 2^53", [2 ** 54]],
    ["a string", ["1024"]],
    ["a hole", [G, , G]],
  ])("rejects %s in sizes with ERR_INVALID_ARGUMENT", async (_, sizes) => {
    const error = await rejection(addon.probe(0, sizes as number[], { touch: false }));
    expect(error.code).toBe("ERR_INVALID_ARGUMENT");
    expect(error.message).toMatch(/^sizes\[\d\]: expected a non-negative integer number of bytes/);
  });

  it("accepts 2^53 itself (and runs out of memory on it)", async () => {
    expect((await addon.probe(0, [2 ** 53], { touch: false })).failedIndex).toBe(0);
  });

  it("rejects sizes that are not an array", async () => {
    const error = await rejection(addon.probe(0, 1024 as unknown as number[], { touch: false }));
    expect(error.code).toBe("ERR_INVALID_ARGUMENT");
    expect(error.message).toBe("sizes: expected an array of byte counts, got 1024");
  });

  it("rejects a touch option that is not a boolean", async () => {
    const error = await rejection(addon.probe(0, [G], { touch: "yes" as unknown as boolean }));
    expect(error.code).toBe("ERR_INVALID_ARGUMENT");
    expect(error.message).toBe('options.touch: expected a boolean, got "yes"');
  });

  it("rejects an ordinal the driver does not have with ERR_INVALID_DEVICE", async () => {
    const error = await rejection(addon.probe(7, [G], { touch: false }));
    expect(error.code).toBe("ERR_INVALID_DEVICE");
    expect(error.message).toBe("device 7 does not exist: the driver sees 1 device (ordinals 0\u20130)");
  });

  it("left nothing allocated after all the rejections", async () => {
    expect(await addon.memGetInfo(0)).toEqual({ freeBytes, totalBytes });
  });
});
