// The addon's NVML side against the simulated NVML: struct layouts, the device list in NVML's own
// order, memory (v2, reserved), processes, MIG instances, integrated GPUs, and no CUDA context.
import { beforeAll, describe, expect, it } from "vitest";

import { matchNvml } from "../../src/devices/nvmlMatch.js";
import type { Addon, NativeDevice, NvmlDevice } from "../../src/native/addonTypes.js";
import { GiB, MiB, nvmlSimulatorPath, rejection, startNvml, startSimulator, withFault } from "./simulator.js";

const H100_TOTAL = 85_520_809_984;
const A100_TOTAL = 85_899_345_920;
const CONTEXT = 300 * MiB;
// CUDA's order (CUDASIM_DEVICES order, "fastest first") differs from NVML's (PCI bus order), so a
// match by index would pair the wrong GPUs.
const machine = {
  devices: [
    { name: "NVIDIA H100 80GB HBM3", totalBytes: H100_TOTAL, usedBytes: 3 * GiB, extras: ["reserved=536870912", "bus=4F", `proc=4242@${3 * GiB}`] },
    { name: "NVIDIA A100-SXM4-80GB", totalBytes: A100_TOTAL, usedBytes: 0, extras: ["bus=07", `mig=${40 * GiB}+${20 * GiB}`] },
    { name: "Orin (nvgpu)", totalBytes: 30 * GiB, usedBytes: 0, extras: ["integrated=1", "bus=01"] },
  ],
  contextBytes: CONTEXT,
};

let addon: Addon;
let cuda: NativeDevice[];
let nvml: NvmlDevice[];

beforeAll(async () => {
  ({ addon } = await startSimulator(machine));
  await startNvml();
  cuda = await addon.devices();
  nvml = await addon.nvmlDevices();
});

describe("NVML struct layouts", () => {
  // Transcribed from nvml.h (R535+): nvmlMemory_t, nvmlMemory_v2_t, nvmlProcessInfo_v1_t and
  // nvmlProcessInfo_v2_t (= nvmlProcessInfo_t, filled by the _v2 and _v3 process queries) on
  // LP64, and NVML_STRUCT_VERSION(Memory, 2) = sizeof(nvmlMemory_v2_t) | 2 << 24.
  it("match the documented sizes, offsets and version word", () => {
    expect(addon.nvmlAbi()).toEqual({
      nvmlMemory_t: { size: 24, offsets: { total: 0, free: 8, used: 16 } },
      nvmlMemory_v2_t: { size: 40, offsets: { version: 0, total: 8, reserved: 16, free: 24, used: 32 } },
      nvmlProcessInfo_v1_t: { size: 16, offsets: { pid: 0, usedGpuMemory: 8 } },
      nvmlProcessInfo_v2_t: { size: 24, offsets: { pid: 0, usedGpuMemory: 8, gpuInstanceId: 16, computeInstanceId: 20 } },
      nvmlMemory_v2: 0x02000028,
    });
  });
});

describe("loadNvml", () => {
  it("binds the newest functions this NVML has", async () => {
    expect(await addon.loadNvml(nvmlSimulatorPath)).toEqual({
      libraryPath: nvmlSimulatorPath,
      driverVersion: "550.54.15",
      memoryInfoV2: true,
      processQuery: "nvmlDeviceGetComputeRunningProcesses_v3",
      mig: true,
    });
  });

  it("rejects a second NVML", async () => {
    const error = await rejection(addon.loadNvml("/usr/lib/other/libnvidia-ml.so.1"));
    expect(error.code).toBe("ERR_INVALID_ARGUMENT");
  });
});

describe("nvmlDevices", () => {
  it("lists every GPU in PCI bus order, MIG instances after their GPU", () => {
    expect(nvml.map((d) => [d.index, d.migIndex, d.uuid?.slice(0, 4), d.migEnabled])).toEqual([
      [0, null, "GPU-", false],
      [1, null, "GPU-", true],
      [1, 0, "MIG-", null],
      [1, 1, "MIG-", null],
      [2, null, "GPU-", false],
    ]);
    expect(nvml[2]!.parentUuid).toBe(nvml[1]!.uuid);
  });

  it("reads nvmlDeviceGetMemoryInfo_v2: physical total, reserved, and used including reserved", () => {
    const h100 = nvml[4]!;
    expect(h100.memory).toEqual({
      call: "nvmlDeviceGetMemoryInfo_v2",
      totalBytes: H100_TOTAL + 512 * MiB,
      reservedBytes: 512 * MiB,
      freeBytes: H100_TOTAL - 3 * GiB,
      usedBytes: 3 * GiB + 512 * MiB,
    });
    expect(nvml[2]!.memory).toMatchObject({ totalBytes: 40 * GiB, freeBytes: 40 * GiB, reservedBytes: 0 });
  });

  it("lists the processes on each GPU with their memory (through the size query and the fetch)", () => {
    expect(nvml[4]!.processes).toEqual([{ pid: 4242, usedBytes: 3 * GiB, gpuInstanceId: null, computeInstanceId: null }]);
    expect(nvml[1]!.processes).toEqual([]);
  });

  it("an integrated GPU answers NOT_SUPPORTED, recorded on its entry, not thrown", () => {
    const orin = nvml[0]!;
    expect(orin.memory).toBeNull();
    expect(orin.processes).toBeNull();
    expect(orin.errors.map((e) => [e.code, e.nvmlCode, e.call, e.message])).toEqual([
      ["ERR_NVML_NOT_SUPPORTED", 3, "nvmlDeviceGetMemoryInfo_v2", "nvmlDeviceGetMemoryInfo_v2 failed: Not Supported (NVML_ERROR_NOT_SUPPORTED = 3)"],
      ["ERR_NVML_NOT_SUPPORTED", 3, "nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v3 failed: Not Supported (NVML_ERROR_NOT_SUPPORTED = 3)"],
    ]);
  });

  it("falls back to nvmlDeviceGetMemoryInfo when v2 refuses its struct version", async () => {
    const list = await withFault("nvmlDeviceGetMemoryInfo_v2:25", () => addon.nvmlDevices());
    expect(list[4]!.memory).toEqual({
      call: "nvmlDeviceGetMemoryInfo",
      totalBytes: H100_TOTAL,
      reservedBytes: null,
      freeBytes: H100_TOTAL - 3 * GiB,
      usedBytes: 3 * GiB,
    });
  });

  it("a lost GPU is an error on its entry; the other GPUs still answer", async () => {
    process.env.CUDASIM_LOST = "0"; // physical GPU 0: the H100
    try {
      const list = await addon.nvmlDevices();
      const lost = list.find((d) => d.index === 2)!;
      expect(lost.uuid).toBeNull();
      expect(lost.errors[0]).toMatchObject({ code: "ERR_NVML_GPU_IS_LOST", nvmlCode: 15, call: "nvmlDeviceGetHandleByIndex_v2" });
      expect(lost.errors[0]!.message).toBe("nvmlDeviceGetHandleByIndex_v2 failed: GPU is lost (NVML_ERROR_GPU_IS_LOST = 15)");
      expect(list.filter((d) => d.memory !== null)).toHaveLength(3);
    } finally {
      delete process.env.CUDASIM_LOST;
    }
  });
});

describe("matching NVML to CUDA by UUID", () => {
  it("pairs each CUDA ordinal with its own GPU although the indices differ", () => {
    // CUDA: 0 = H100, 1 = the A100's first MIG instance (one MIG device per process), 2 = Orin.
    expect(cuda.map((d) => d.name)).toEqual(["NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB MIG 43gb", "Orin (nvgpu)"]);
    const h100 = matchNvml(cuda[0]!, nvml);
    expect(h100).toMatchObject({ kind: "nvml", uuid: cuda[0]!.uuid });
    expect(h100.device?.index).toBe(2); // NVML index 2, CUDA ordinal 0
  });

  it("a MIG instance matches its MIG- entry and takes that UUID", () => {
    const mig = matchNvml(cuda[1]!, nvml);
    expect(mig.kind).toBe("nvml");
    if (mig.kind !== "nvml") return;
    expect(cuda[1]!.uuid).toMatch(/^MIG-/); // named as nvidia-smi -L names it
    expect(mig.uuid).toBe(cuda[1]!.uuid);
    expect(mig.memory.totalBytes).toBe(40 * GiB);
  });

  it("an integrated GPU falls back to CUDA, saying why", () => {
    expect(matchNvml(cuda[2]!, nvml)).toMatchObject({
      kind: "cuda",
      reason: "nvmlDeviceGetMemoryInfo_v2 failed: Not Supported (NVML_ERROR_NOT_SUPPORTED = 3)",
    });
  });
});

describe("no CUDA context", () => {
  it("NVML reads memory without one; CUDA's first memGetInfo creates one, which NVML then sees", async () => {
    const before = (await addon.nvmlDevices())[4]!;
    expect(before.memory!.freeBytes).toBe(H100_TOTAL - 3 * GiB); // no context of ours yet
    expect(before.processes!.map((p) => p.pid)).toEqual([4242]);
    expect((await addon.memGetInfo(0)).freeBytes).toBe(H100_TOTAL - 3 * GiB - CONTEXT);
    const after = (await addon.nvmlDevices())[4]!;
    expect(after.memory!.freeBytes).toBe(H100_TOTAL - 3 * GiB - CONTEXT);
    expect(after.processes).toContainEqual({ pid: process.pid, usedBytes: CONTEXT, gpuInstanceId: null, computeInstanceId: null });
  });
});
