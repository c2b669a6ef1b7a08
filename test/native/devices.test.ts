// devices() and memGetInfo() on a three-device machine: two identical H100s and a Jetson.
import { beforeAll, describe, expect, it } from "vitest";

import type { Addon, NativeDevice } from "../../src/native/addonTypes.js";
import { DEFAULT_CONTEXT_BYTES, GiB, MiB, rejection, startSimulator } from "./simulator.js";

const h100 = { name: "NVIDIA H100 80GB HBM3", totalBytes: 85_520_809_984 };
const machine = {
  devices: [
    { ...h100, usedBytes: 3 * GiB },
    { ...h100, usedBytes: 512 * MiB },
    { name: "Orin (nvgpu)", totalBytes: 30 * GiB + 123, usedBytes: 7, extras: ["cc=8.7", "sm=16", "integrated=1"] },
  ],
};

let addon: Addon;
let devices: NativeDevice[];

beforeAll(async () => {
  ({ addon } = await startSimulator(machine));
  devices = await addon.devices();
});

describe("devices()", () => {
  it("lists every device in ordinal order with the driver's names and sizes", () => {
    expect(devices.map((device) => [device.ordinal, device.name, device.totalBytes])).toEqual([
      [0, "NVIDIA H100 80GB HBM3", 85_520_809_984],
      [1, "NVIDIA H100 80GB HBM3", 85_520_809_984],
      [2, "Orin (nvgpu)", 30 * GiB + 123],
    ]);
  });

  it("formats UUIDs like nvidia-smi, distinct even for identical devices, stable across calls", async () => {
    for (const device of devices) {
      expect(device.uuid).toMatch(/^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    }
    expect(new Set(devices.map((device) => device.uuid)).size).toBe(3);
    expect((await addon.devices()).map((device) => device.uuid)).toEqual(devices.map((device) => device.uuid));
  });

  it("reports each device's PCI bus id", () => {
    expect(devices.map((device) => device.pciBusId)).toEqual(["0000:1B:00.0", "0000:1C:00.0", "0000:1D:00.0"]);
  });

  it("reads compute capability, SM count and the integrated flag from the attributes", () => {
    expect(devices.map(({ computeCapability, multiprocessorCount, integrated }) => ({
      computeCapability,
      multiprocessorCount,
      integrated,
    }))).toEqual([
      { computeCapability: { major: 9, minor: 0 }, multiprocessorCount: 132, integrated: false },
      { computeCapability: { major: 9, minor: 0 }, multiprocessorCount: 132, integrated: false },
      { computeCapability: { major: 8, minor: 7 }, multiprocessorCount: 16, integrated: true },
    ]);
  });
});

describe("memGetInfo()", () => {
  it("returns total minus what others use and the context it created, to the byte, per device", async () => {
    const context = DEFAULT_CONTEXT_BYTES;
    expect(await addon.memGetInfo(0)).toEqual({ freeBytes: 85_520_809_984 - 3 * GiB - context, totalBytes: 85_520_809_984 });
    expect(await addon.memGetInfo(1)).toEqual({ freeBytes: 85_520_809_984 - 512 * MiB - context, totalBytes: 85_520_809_984 });
    expect(await addon.memGetInfo(2)).toEqual({ freeBytes: 30 * GiB + 116 - context, totalBytes: 30 * GiB + 123 });
  });

  it("rejects an ordinal the driver does not have with ERR_INVALID_DEVICE", async () => {
    const error = await rejection(addon.memGetInfo(3));
    expect(error.code).toBe("ERR_INVALID_DEVICE");
    expect(error.message).toBe("device 3 does not exist: the driver sees 3 devices (ordinals 0\u20132)");
  });

  it.each([-1, 1.5, Number.NaN, "0", undefined])("rejects the ordinal %s with ERR_INVALID_ARGUMENT", async (bad) => {
    const error = await rejection(addon.memGetInfo(bad as number));
    expect(error.code).toBe("ERR_INVALID_ARGUMENT");
    expect(error.message).toMatch(/^device ordinal: expected a non-negative integer, got /);
  });
});
