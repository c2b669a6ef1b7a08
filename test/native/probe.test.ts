// probe(): allocation boundaries, granularity rounding, the reserve and the cap, cleanup,
// serialization, and threading.
import { beforeAll, describe, expect, it } from "vitest";

import type { Addon, NativeProbeOptions, NativeProbeResult } from "../../src/native/addonTypes.js";
import { GiB, MiB, rejection, startSimulator } from "./simulator.js";

const G = 2 * MiB; // the simulator's default allocation granularity, as on real GPUs
const totalBytes = GiB;
const freeBytes = GiB - 100 * MiB; // 462 granules
const syncDelayMs = 50;

let addon: Addon;

/** A probe's full result: the fields each test cares about, over those of a probe that fits and touched nothing. */
function outcome(fields: Partial<NativeProbeResult> & Pick<NativeProbeResult, "freeBytesAtPeak">): NativeProbeResult {
  const fits = fields.fits ?? true;
  return {
    fits,
    failedIndex: -1,
    allocated: 0,
    limit: fits ? null : "out-of-memory",
    allocatedBytes: 0,
    freeBytesAtStart: freeBytes,
    minFreeBytes: Math.min(freeBytes, fields.freeBytesAtPeak),
    headroomBytes: 0,
    virtualMemory: false,
    ...fields,
  };
}

beforeAll(async () => {
  ({ addon } = await startSimulator({
    devices: [{ name: "NVIDIA L4", totalBytes, usedBytes: 100 * MiB }],
    syncDelayMs,
    contextBytes: 0, // the arithmetic below is the allocations' alone
  }));
  expect(await addon.memGetInfo(0)).toEqual({ freeBytes, totalBytes });
});

describe("the fit boundary", () => {
  it("exactly the free memory fits, leaving nothing free at the peak", async () => {
    expect(await addon.probe(0, [freeBytes], { touch: true })).toEqual(outcome({ allocated: 1, allocatedBytes: freeBytes, freeBytesAtPeak: 0 }));
  });

  it("one granule more does not fit, and the failure is a result, not an error", async () => {
    expect(await addon.probe(0, [freeBytes + G], { touch: true })).toEqual(outcome({ fits: false, failedIndex: 0, freeBytesAtPeak: freeBytes, headroomBytes: freeBytes }));
  });

  it("reports the index that ran out and the free memory with the earlier ones held", async () => {
    expect(await addon.probe(0, [100 * MiB, 200 * MiB, freeBytes, 4], { touch: false })).toEqual(
      outcome({ fits: false, failedIndex: 2, allocated: 2, allocatedBytes: 300 * MiB, freeBytesAtPeak: freeBytes - 300 * MiB, headroomBytes: freeBytes - 300 * MiB }),
    );
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
    expect(tooMany).toEqual(outcome({ fits: false, failedIndex: 2, allocated: 2, allocatedBytes: freeBytes - 2 * G + 1, freeBytesAtPeak: G, headroomBytes: G }));
    const exact = await addon.probe(0, [freeBytes - 4 * G, G + 1, G + 1], { touch: true });
    expect(exact).toEqual(outcome({ allocated: 3, allocatedBytes: freeBytes - 2 * G + 2, freeBytesAtPeak: 0 }));
  });

  it("skips zero-byte sizes instead of failing on them", async () => {
    expect(await addon.probe(0, [0, G, 0], { touch: true })).toEqual(outcome({ allocated: 1, allocatedBytes: G, freeBytesAtPeak: freeBytes - G }));
    expect(await addon.probe(0, [], { touch: false })).toEqual(outcome({ freeBytesAtPeak: freeBytes }));
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
      expect(result).toEqual(outcome({ allocated: 1, allocatedBytes: size, freeBytesAtPeak: freeBytes - size }));
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

describe("the reserve: free memory the probe must leave", () => {
  const R = 100 * MiB;

  it("takes free memory down to the reserve exactly, and no further", async () => {
    expect(await addon.probe(0, [freeBytes - R], { touch: true, reserveBytes: R })).toEqual(
      outcome({ allocated: 1, allocatedBytes: freeBytes - R, freeBytesAtPeak: R }),
    );
  });

  it("refuses, before allocating, the allocation that would cross it: a result naming the limit", async () => {
    const result = await addon.probe(0, [G, freeBytes - R - G + 1, G], { touch: true, reserveBytes: R });
    // The driver could have given these bytes (they are below freeBytes): only the reserve says no.
    expect(result).toEqual(outcome({ fits: false, failedIndex: 1, limit: "reserve", allocated: 1, allocatedBytes: G, freeBytesAtPeak: freeBytes - G, headroomBytes: freeBytes - G - R }));
    expect(await addon.memGetInfo(0)).toEqual({ freeBytes, totalBytes });
  });

  it("gives back at once an allocation the driver's rounding took below it", async () => {
    // 823 MiB passes the check against 924 − 101 MiB, but the driver takes 824 MiB of pages.
    const reserve = R + MiB;
    const result = await addon.probe(0, [freeBytes - reserve], { touch: false, reserveBytes: reserve });
    expect(result).toEqual(outcome({ fits: false, failedIndex: 0, limit: "reserve", freeBytesAtPeak: freeBytes, minFreeBytes: R, headroomBytes: freeBytes - reserve - MiB }));
    expect(await addon.memGetInfo(0)).toEqual({ freeBytes, totalBytes });
  });

  it("refuses the first allocation when free memory is already below it, skipping empty sizes", async () => {
    const result = await addon.probe(0, [0, G], { touch: false, reserveBytes: freeBytes + G });
    expect(result).toEqual(outcome({ fits: false, failedIndex: 1, limit: "reserve", freeBytesAtPeak: freeBytes }));
    // Nothing to allocate takes nothing: that fits whatever the reserve.
    expect((await addon.probe(0, [0], { touch: false, reserveBytes: freeBytes + G })).fits).toBe(true);
  });

  it("reads free memory after every allocation, so it reports the lowest it saw", async () => {
    const result = await addon.probe(0, [G, 2 * G, 3 * G], { touch: false, reserveBytes: G });
    expect(result).toEqual(outcome({ allocated: 3, allocatedBytes: 6 * G, freeBytesAtPeak: freeBytes - 6 * G }));
  });

  it("0 is no reserve: the driver alone says what fits", async () => {
    expect((await addon.probe(0, [freeBytes], { touch: false, reserveBytes: 0 })).fits).toBe(true);
  });
});

describe("limitBytes: the most the probe may allocate (--max-mem)", () => {
  it("refuses the allocation that would exceed it, counting requested bytes", async () => {
    const result = await addon.probe(0, [100 * MiB, 200 * MiB, 300 * MiB], { touch: false, limitBytes: 500 * MiB });
    expect(result).toEqual(
      outcome({ fits: false, failedIndex: 2, limit: "max-mem", allocated: 2, allocatedBytes: 300 * MiB, freeBytesAtPeak: freeBytes - 300 * MiB, headroomBytes: 200 * MiB }),
    );
  });

  it("allows exactly the cap", async () => {
    const result = await addon.probe(0, [100 * MiB, 200 * MiB, 300 * MiB], { touch: false, limitBytes: 600 * MiB });
    expect(result).toEqual(outcome({ allocated: 3, allocatedBytes: 600 * MiB, freeBytesAtPeak: freeBytes - 600 * MiB }));
  });

  it("is checked before the reserve, and the reserve before the driver", async () => {
    const both = await addon.probe(0, [freeBytes + G], { touch: false, limitBytes: G, reserveBytes: G });
    expect([both.limit, both.failedIndex]).toEqual(["max-mem", 0]);
    const reserveAndDriver = await addon.probe(0, [freeBytes + G], { touch: false, reserveBytes: G });
    expect([reserveAndDriver.limit, reserveAndDriver.failedIndex]).toEqual(["reserve", 0]);
  });

  it("left nothing allocated", async () => {
    expect(await addon.memGetInfo(0)).toEqual({ freeBytes, totalBytes });
  });
});

describe("argument checks", () => {
  /** Sizes that are numbers but not byte counts: refused in an array and in a Float64Array alike. */
  const NOT_BYTE_COUNTS: [string, number[]][] = [
    ["a negative size", [-1]],
    ["NaN", [G, Number.NaN]],
    ["a fraction", [1.5]],
    ["Infinity", [Number.POSITIVE_INFINITY]],
    ["more than 2^53", [2 ** 54]],
  ];

  it.each([
    ...NOT_BYTE_COUNTS,
    ["a string", ["1024"]],
    ["a hole", [G, , G]],
  ])("rejects %s in sizes with ERR_INVALID_ARGUMENT", async (_, sizes) => {
    const error = await rejection(addon.probe(0, sizes as number[], { touch: false }));
    expect(error.code).toBe("ERR_INVALID_ARGUMENT");
    expect(error.message).toMatch(/^sizes\[\d\]: expected a non-negative integer number of bytes/);
  });

  it.each(NOT_BYTE_COUNTS)("rejects %s in a Float64Array of sizes the same way", async (_, sizes) => {
    const error = await rejection(addon.probe(0, Float64Array.from(sizes), { touch: false }));
    expect(error.code).toBe("ERR_INVALID_ARGUMENT");
    expect(error.message).toMatch(/^sizes\[\d\]: expected a non-negative integer number of bytes/);
  });

  it("answers a Float64Array of sizes as it answers the array (src/fit/device.ts passes one)", async () => {
    const sizes = [100 * MiB, 200 * MiB, freeBytes, 4];
    expect(await addon.probe(0, Float64Array.from(sizes), { touch: false })).toEqual(await addon.probe(0, sizes, { touch: false }));
    expect(await addon.probe(0, Float64Array.from([100 * MiB, G + 1]), { touch: false, pageBytes: Float64Array.from([0, 0]) })).toEqual(
      await addon.probe(0, [100 * MiB, G + 1], { touch: false, pageBytes: [0, 0] }),
    );
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

  it.each([
    ["reserveBytes", -1, "-1"],
    ["reserveBytes", "1GiB", '"1GiB"'],
    ["limitBytes", 1.5, "1.5"],
    ["limitBytes", 2 ** 54, String(2 ** 54)],
  ])("rejects options.%s = %s with ERR_INVALID_ARGUMENT", async (name, value, shown) => {
    const error = await rejection(addon.probe(0, [G], { touch: false, [name]: value } as unknown as NativeProbeOptions));
    expect(error.code).toBe("ERR_INVALID_ARGUMENT");
    expect(error.message).toBe(`options.${name}: expected a non-negative integer number of bytes (at most 2^53), got ${shown}`);
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
