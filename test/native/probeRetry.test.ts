// The device decides the retry (issue 23, item 2): where cuMemAlloc grants less than the free figure the budget was made from, the step is replayed at the room the device gave, so PyTorch's out-of-memory path frees its cache where the real driver refused.
import { beforeAll, describe, expect, it } from "vitest";

import { deviceSteps } from "../../src/fit/allocator.js";
import { deviceFits } from "../../src/fit/device.js";
import type { Addon } from "../../src/native/addonTypes.js";
import { GiB, MiB, startSimulator } from "./simulator.js";
import { twoPhaseStep } from "./twoPhaseStep.js";

// Both devices report 924 MiB free; `hidden=` keeps all but 100 MiB (device 0) or 58 MiB (device 1)
// of it from cuMemAlloc, as a real device's free figure can overstate what the driver grants.
const freeBytes = GiB - 100 * MiB;
const grantable = [100 * MiB, 58 * MiB];
let addon: Addon;

beforeAll(async () => {
  const devices = grantable.map((bytes, k) => ({ name: `NVIDIA L4 ${k}`, totalBytes: GiB, usedBytes: 100 * MiB, extras: [`hidden=${freeBytes - bytes}`] }));
  ({ addon } = await startSimulator({ devices, contextBytes: 0 }));
  for (const ordinal of [0, 1]) expect((await addon.memGetInfo(ordinal)).freeBytes).toBe(freeBytes);
});

const plan = twoPhaseStep; // ./twoPhaseStep.ts: 50 MiB forward, 60 MiB backward

/** A probe evaluator at the budget the free figure gives (no reserve), recording the bytes each probe holds at its peak. */
function atFreeFigure(ordinal: number, starts: number[] = [], signal?: AbortSignal, floorBytes = 0) {
  return deviceFits(addon, ordinal, plan, {
    allocator: "pytorch",
    capacityBytes: freeBytes,
    floorBytes,
    touch: true,
    ...(signal !== undefined && { signal }),
    onProbe: (event) => {
      if (event.phase === "start") starts.push(event.bytes);
    },
  });
}

describe("the simulator's hidden bytes", () => {
  it("are free to cuMemGetInfo but never granted by cuMemAlloc", async () => {
    expect(await addon.probe(0, [100 * MiB], { touch: true })).toMatchObject({ fits: true });
    expect(await addon.probe(0, [102 * MiB], { touch: false })).toMatchObject({ fits: false, limit: "out-of-memory" });
    expect((await addon.memGetInfo(0)).freeBytes).toBe(freeBytes);
  });
});

describe("a refused allocation reports the room the device still had", () => {
  it("out of memory: the largest 2 MiB multiple under the refused size that the driver granted then, nothing kept", async () => {
    // 50 MiB held, 50 MiB more grantable: the 60 MiB allocation fails, 50 MiB would not have.
    const result = await addon.probe(0, [50 * MiB, 60 * MiB], { touch: false });
    expect(result).toMatchObject({ fits: false, failedIndex: 1, limit: "out-of-memory", allocatedBytes: 50 * MiB, headroomBytes: 50 * MiB });
    // Under the refused size: with 70 MiB held, a 40 MiB allocation fails and 30 MiB is the room.
    expect(await addon.probe(0, [70 * MiB, 40 * MiB], { touch: false })).toMatchObject({ fits: false, allocatedBytes: 70 * MiB, headroomBytes: 30 * MiB });
    // Within the reserve: 900 MiB must stay free of the 924 the driver reports, so 24 MiB is the room, not 50.
    expect(await addon.probe(0, [20 * MiB, 60 * MiB], { touch: false, reserveBytes: 880 * MiB })).toMatchObject({ fits: false, limit: "reserve", allocatedBytes: 20 * MiB, headroomBytes: 24 * MiB });
    // Within the cap.
    expect(await addon.probe(0, [50 * MiB, 60 * MiB], { touch: false, limitBytes: 80 * MiB })).toMatchObject({ fits: false, limit: "max-mem", headroomBytes: 30 * MiB });
    expect((await addon.memGetInfo(0)).freeBytes).toBe(freeBytes);
  });
});

describe("the probe replays the step again at the room the device gave", () => {
  it("fits only through the retry: the replay at the free figure holds both segments, the device grants 100 MiB, PyTorch's cache release makes it fit", async () => {
    // The replay at the free figure frees nothing: 110 MiB held at once.
    expect(deviceSteps(plan, 1, "pytorch", undefined, freeBytes)).toEqual({ sizes: [50 * MiB, 60 * MiB], releases: [], atCapacity: true });
    const starts: number[] = [];
    const evaluator = atFreeFigure(0, starts);
    expect(await evaluator.fits(1)).toBe(true);
    // Two probes: 110 MiB refused at the gradient, then the replay at 50 + 50 MiB, which gives the activation's segment back first.
    expect(evaluator.probes()).toBe(2);
    expect(starts).toEqual([110 * MiB, 60 * MiB]);
    expect((await addon.memGetInfo(0)).freeBytes).toBe(freeBytes);
  });

  it("does not fit where the replay itself runs out at the device's room: 58 MiB is under the gradient's 60", async () => {
    const starts: number[] = [];
    const evaluator = atFreeFigure(1, starts);
    expect(await evaluator.fits(1)).toBe(false);
    // The replay at 58 MiB runs out of memory: no second probe.
    expect(evaluator.probes()).toBe(1);
    expect((await addon.memGetInfo(1)).freeBytes).toBe(freeBytes);
  });

  it("the floor refusing is a retry too: the room is the free memory above it", async () => {
    // The floor leaves 80 MiB (another process took memory since the budget was read, say): the
    // gradient's 60 MiB is refused with 50 held and 30 above the floor; the replay at 80 MiB gives the activation back.
    const starts: number[] = [];
    const evaluator = atFreeFigure(0, starts, undefined, freeBytes - 80 * MiB);
    expect(await evaluator.fits(1)).toBe(true);
    expect(starts).toEqual([110 * MiB, 60 * MiB]);
    expect((await addon.memGetInfo(0)).freeBytes).toBe(freeBytes);
  });

  it("a cancelled search stops before the retry, everything freed", async () => {
    const controller = new AbortController();
    const evaluator = atFreeFigure(0, [], controller.signal);
    const reason = new Error("stop");
    const abortAfterFirst = evaluator.fits(1);
    controller.abort(reason);
    await expect(abortAfterFirst).rejects.toBe(reason);
    expect(evaluator.probes()).toBe(1);
    expect((await addon.memGetInfo(0)).freeBytes).toBe(freeBytes);
  });
});
