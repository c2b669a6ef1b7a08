// probeEach() and memGetInfoEach(): one call for several devices, each device's answer the one probe()/memGetInfo() gives it, and a failing device's error its own.
import { beforeAll, describe, expect, it } from "vitest";

import { VramfitError } from "../../src/errors.js";
import type { Addon, NativeProbeOptions } from "../../src/native/addonTypes.js";
import { GiB, MiB, rejection, startSimulator } from "./simulator.js";

let addon: Addon;
const H100 = { name: "NVIDIA H100 80GB HBM3", totalBytes: 80 * GiB };

beforeAll(async () => {
  ({ addon } = await startSimulator({
    // Devices 0 and 2 alike; device 1 has 70 GiB in use by another process.
    devices: [H100, { ...H100, usedBytes: 70 * GiB }, H100],
    contextBytes: 0,
  }));
});

const SIZES = Float64Array.from([4 * GiB, 2 * GiB, 6 * GiB, 512 * MiB]); // 8.5 GiB at once: within 80 GiB free less the reserve, not 10
const OPTIONS: NativeProbeOptions = { touch: true, reserveBytes: 2 * GiB, releases: [2, 0] }; // the first segment is given back before the third

describe("probeEach", () => {
  it("answers each device as probe() answers it alone, in the order asked", async () => {
    const each = await addon.probeEach!([2, 1, 0], SIZES, OPTIONS);
    const alone = [await addon.probe(2, SIZES, OPTIONS), await addon.probe(1, SIZES, OPTIONS), await addon.probe(0, SIZES, OPTIONS)];
    expect(each).toEqual(alone);
    expect(each.map((r) => !(r instanceof Error) && r.fits)).toEqual([true, false, true]);
  });

  it("gives a device that fails its own error; the others still answer", async () => {
    process.env.CUDASIM_LOST = "1";
    let each;
    try {
      each = await addon.probeEach!([0, 1], SIZES, OPTIONS);
    } finally {
      delete process.env.CUDASIM_LOST;
    }
    expect(each[0]).toEqual(await addon.probe(0, SIZES, OPTIONS));
    expect(each[1]).toBeInstanceOf(VramfitError);
    expect((each[1] as VramfitError).code).toMatch(/^ERR_CUDA_/);
  });

  it("refuses an empty list or a device named twice, as an argument error", async () => {
    expect((await rejection(addon.probeEach!([], SIZES, OPTIONS))).code).toBe("ERR_INVALID_ARGUMENT");
    expect((await rejection(addon.probeEach!([0, 0], SIZES, OPTIONS))).message).toMatch(/each device once/);
    expect((await rejection(addon.probeEach!([0, 7], SIZES, OPTIONS))).code).toBe("ERR_INVALID_DEVICE");
  });
});

describe("memGetInfoEach", () => {
  it("reads each device as memGetInfo() does", async () => {
    expect(await addon.memGetInfoEach!([1, 0])).toEqual([await addon.memGetInfo(1), await addon.memGetInfo(0)]);
    expect((await addon.memGetInfo(1)).freeBytes).toBe(10 * GiB);
  });
});
