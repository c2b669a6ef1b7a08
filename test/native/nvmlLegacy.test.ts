// An older NVML (no nvmlDeviceGetMemoryInfo_v2, only the unversioned process query, no MIG
// functions) under an older driver (no cuDeviceGetUuid_v2): every fallback, and where the match
// must give up. One driver and one NVML per process, so these get a file of their own.
import { beforeAll, describe, expect, it } from "vitest";

import { matchNvml } from "../../src/devices/nvmlMatch.js";
import type { Addon, NativeDevice, NvmlDevice } from "../../src/native/addonTypes.js";
import { GiB, configureSimulator, legacyNvmlSimulatorPath, legacySimulatorPath, loadAddon } from "./simulator.js";

const machine = {
  devices: [
    { name: "Tesla V100-SXM2-32GB", totalBytes: 32 * GiB, usedBytes: 2 * GiB, extras: ["reserved=268435456", `proc=77@${2 * GiB}`] },
    { name: "NVIDIA A100-SXM4-40GB", totalBytes: 40 * GiB, usedBytes: 0, extras: [`mig=${20 * GiB}+${10 * GiB}`] },
  ],
};

let addon: Addon;
let cuda: NativeDevice[];
let nvml: NvmlDevice[];

beforeAll(async () => {
  addon = loadAddon();
  configureSimulator(machine);
  expect((await addon.loadDriver(legacySimulatorPath)).uuidV2).toBe(false);
  expect(await addon.loadNvml(legacyNvmlSimulatorPath)).toEqual({
    libraryPath: legacyNvmlSimulatorPath,
    driverVersion: "550.54.15",
    memoryInfoV2: false,
    processQuery: "nvmlDeviceGetComputeRunningProcesses",
    mig: false,
  });
  cuda = await addon.devices();
  nvml = await addon.nvmlDevices();
});

describe("an older NVML", () => {
  it("answers memory with the v1 call: no reserved bytes, total without them", () => {
    expect(nvml[0]!.memory).toEqual({
      call: "nvmlDeviceGetMemoryInfo",
      totalBytes: 32 * GiB,
      reservedBytes: null,
      freeBytes: 30 * GiB,
      usedBytes: 2 * GiB,
    });
  });

  it("lists processes through the v1 struct (16 bytes each, no instance ids)", () => {
    expect(nvml[0]!.processes).toEqual([{ pid: 77, usedBytes: 2 * GiB, gpuInstanceId: null, computeInstanceId: null }]);
  });

  it("without the MIG functions lists no instances and takes MIG to be off", () => {
    expect(nvml.map((d) => [d.migIndex, d.migEnabled])).toEqual([
      [null, false],
      [null, false],
    ]);
  });
});

describe("an older driver", () => {
  it("names a MIG device by its GPU's UUID (cuDeviceGetUuid)", () => {
    expect(cuda[1]!.name).toBe("NVIDIA A100-SXM4-40GB MIG 21gb");
    expect(cuda[1]!.uuid).toBe(nvml[1]!.uuid);
  });

  it("so NVML's whole-GPU reading would be wrong for it; with MIG on, the match gives up", () => {
    const gpu = { ...nvml[1]!, migEnabled: true };
    expect(matchNvml(cuda[1]!, [gpu])).toMatchObject({
      kind: "cuda",
      reason: `MIG is enabled on ${gpu.uuid} and the CUDA driver does not say which instance this is (no cuDeviceGetUuid_v2)`,
    });
  });

  it("a plain GPU still matches", () => {
    expect(matchNvml(cuda[0]!, nvml)).toMatchObject({ kind: "nvml", uuid: cuda[0]!.uuid });
  });
});
