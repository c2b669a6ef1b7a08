// probe() replaying a step's driver calls: segments given back during the probe (options.releases), as PyTorch's allocator frees its cache before it retries (issue 23, item 2).
import { beforeAll, describe, expect, it } from "vitest";

import { deviceFits } from "../../src/fit/device.js";
import { deviceSteps } from "../../src/fit/allocator.js";
import type { Addon } from "../../src/native/addonTypes.js";
import { GiB, MiB, startSimulator } from "./simulator.js";
import { twoPhaseStep } from "./twoPhaseStep.js";

const freeBytes = GiB - 100 * MiB;
let addon: Addon;

beforeAll(async () => {
  ({ addon } = await startSimulator({ devices: [{ name: "NVIDIA L4", totalBytes: GiB, usedBytes: 100 * MiB }], contextBytes: 0 }));
  expect((await addon.memGetInfo(0)).freeBytes).toBe(freeBytes);
});

describe("releases", () => {
  it("frees a segment before the allocation that needs its room, and nothing leaks", async () => {
    // 600 + 500 MiB do not fit in 924 MiB; with the 600 MiB segment given back first they do.
    expect((await addon.probe(0, [600 * MiB, 500 * MiB], { touch: true })).fits).toBe(false);
    const result = await addon.probe(0, [600 * MiB, 500 * MiB], { touch: true, releases: [1, 0] });
    expect(result).toMatchObject({ fits: true, allocated: 2, allocatedBytes: 500 * MiB });
    expect((await addon.memGetInfo(0)).freeBytes).toBe(freeBytes);
  });

  it("holds the reserve and the cap against what is held at each moment", async () => {
    // 600 MiB, given back, then 500 MiB: with a 400 MiB reserve only 524 MiB may be held at once.
    expect(await addon.probe(0, [600 * MiB, 500 * MiB], { touch: false, reserveBytes: 400 * MiB, releases: [1, 0] })).toMatchObject({ fits: false, limit: "reserve", failedIndex: 0 });
    expect(await addon.probe(0, [500 * MiB, 500 * MiB], { touch: false, reserveBytes: 400 * MiB, releases: [1, 0] })).toMatchObject({ fits: true });
    expect(await addon.probe(0, [500 * MiB, 500 * MiB], { touch: false, limitBytes: 600 * MiB, releases: [1, 0] })).toMatchObject({ fits: true });
    expect(await addon.probe(0, [500 * MiB, 500 * MiB], { touch: false, limitBytes: 600 * MiB })).toMatchObject({ fits: false, limit: "max-mem" });
    expect((await addon.memGetInfo(0)).freeBytes).toBe(freeBytes);
  });

  it("refuses a release of what is not held, freeing everything", async () => {
    await expect(addon.probe(0, [100 * MiB, 100 * MiB, 100 * MiB], { touch: false, releases: [1, 0, 2, 0] })).rejects.toMatchObject({ code: "ERR_INVALID_ARGUMENT" });
    expect((await addon.memGetInfo(0)).freeBytes).toBe(freeBytes);
  });
});

describe("a step's replay at the budget's capacity on the device", () => {
  const plan = twoPhaseStep; // ./twoPhaseStep.ts: 50 MiB forward, 60 MiB backward

  it("at 100 MiB the cached segment is given back before the gradient's: the probe makes those calls and fits", async () => {
    expect(deviceSteps(plan, 1, "pytorch")).toEqual({ sizes: [50 * MiB, 60 * MiB], releases: [], atCapacity: false });
    expect(deviceSteps(plan, 1, "pytorch", undefined, 100 * MiB)).toEqual({ sizes: [50 * MiB, 60 * MiB], releases: [1, 0], atCapacity: true });
    // The floor leaves the probe exactly 100 MiB of the device's free memory.
    const floorBytes = freeBytes - 100 * MiB;
    const atCapacity = deviceFits(addon, 0, plan, { allocator: "pytorch", floorBytes, touch: true, capacityBytes: 100 * MiB });
    expect(await atCapacity.fits(1)).toBe(true);
    const unconstrained = deviceFits(addon, 0, plan, { allocator: "pytorch", floorBytes, touch: true });
    expect(await unconstrained.fits(1)).toBe(false);
    expect((await addon.memGetInfo(0)).freeBytes).toBe(freeBytes);
  });
});
