// Driver failures injected with CUDASIM_FAIL: each surfaces as ERR_CUDA_<NAME> with cudaCode and
// call, and no probe leaves memory behind, except where the driver refuses to free it.
import { beforeAll, describe, expect, it } from "vitest";

import type { Addon } from "../../src/native/addonTypes.js";
import { GiB, MiB, rejection, startSimulator, withFault } from "./simulator.js";

const G = 2 * MiB;
const device = { name: "NVIDIA A10", totalBytes: 2 * GiB, usedBytes: 0 };
const freeBytes = 2 * GiB;
const sizes = [64 * MiB, 128 * MiB + 1, G];
const STICKY_SUFFIX =
  "; a sticky error leaves the context unusable, so vramfit released its context (if the next call fails the same way, the process must be restarted)";

let addon: Addon;

beforeAll(async () => {
  // Device 1 stays untouched until the tests that need a fresh primary context.
  ({ addon } = await startSimulator({ devices: [device, device], contextBytes: 0 })); // free = total: no context cost
  expect((await addon.memGetInfo(0)).freeBytes).toBe(freeBytes);
});

async function expectNoLeak(ordinal = 0): Promise<void> {
  expect((await addon.memGetInfo(ordinal)).freeBytes).toBe(freeBytes);
}

describe("errors during a probe", () => {
  it.each([
    // rule, code, cudaCode, call, the driver's description, touch
    ["cuMemAlloc_v2:719:1", "ERR_CUDA_LAUNCH_FAILED", 719, "cuMemAlloc_v2", "unspecified launch failure", false],
    ["cuMemAlloc_v2:1:2", "ERR_CUDA_INVALID_VALUE", 1, "cuMemAlloc_v2", "invalid argument", false],
    ["cuMemsetD8_v2:700:1", "ERR_CUDA_ILLEGAL_ADDRESS", 700, "cuMemsetD8_v2", "an illegal memory access was encountered", true],
    ["cuCtxSynchronize:214", "ERR_CUDA_ECC_UNCORRECTABLE", 214, "cuCtxSynchronize", "uncorrectable ECC error encountered", true],
    ["cuMemGetInfo_v2:999", "ERR_CUDA_UNKNOWN", 999, "cuMemGetInfo_v2", "unknown error", false],
    ["cuCtxSetCurrent:201", "ERR_CUDA_INVALID_CONTEXT", 201, "cuCtxSetCurrent", "invalid device context", false],
    ["cuCtxGetCurrent:4", "ERR_CUDA_DEINITIALIZED", 4, "cuCtxGetCurrent", "driver shutting down", false],
  ] as const)("%s rejects with %s and frees what was allocated", async (rule, code, cudaCode, call, text, touch) => {
    const error = await withFault(rule, () => rejection(addon.probe(0, sizes, { touch })));
    expect({ code: error.code, cudaCode: error.cudaCode, call: error.call }).toEqual({ code, cudaCode, call });
    const name = `CUDA_ERROR_${code.slice("ERR_CUDA_".length)}`;
    // After a sticky error (700, 719) the context is unusable: the addon releases it and says so.
    const sticky = cudaCode === 700 || cudaCode === 719 ? STICKY_SUFFIX : "";
    expect(error.message).toBe(`${call} failed: ${text} (${name} = ${cudaCode})${sticky}`);
    await expectNoLeak();
  });

  it("an injected out-of-memory is still a result, not an error", async () => {
    const result = await withFault("cuMemAlloc_v2:2:1", () => addon.probe(0, sizes, { touch: true }));
    expect(result).toEqual({
      fits: false,
      failedIndex: 1,
      allocated: 1,
      freeBytesAtPeak: freeBytes - 64 * MiB,
      limit: "out-of-memory",
      allocatedBytes: 64 * MiB,
      freeBytesAtStart: freeBytes,
      minFreeBytes: freeBytes - 64 * MiB,
      headroomBytes: 0, // the rule refuses the headroom's trials too
      virtualMemory: false,
    });
    await expectNoLeak();
  });

  it("a CUresult the driver cannot name is ERR_CUDA_<number>", async () => {
    const error = await withFault("cuMemAlloc_v2:12345", () => rejection(addon.probe(0, sizes, { touch: false })));
    expect(error.code).toBe("ERR_CUDA_12345");
    expect(error.cudaCode).toBe(12345);
    expect(error.message).toBe("cuMemAlloc_v2 failed: unrecognized error (CUresult 12345)");
  });

  it("memGetInfo reports its own failure", async () => {
    const error = await withFault("cuMemGetInfo_v2:709", () => rejection(addon.memGetInfo(0)));
    expect(error).toMatchObject({ code: "ERR_CUDA_CONTEXT_IS_DESTROYED", cudaCode: 709, call: "cuMemGetInfo_v2" });
  });

  it("devices() reports a failed attribute query", async () => {
    const error = await withFault("cuDeviceGetAttribute:801", () => rejection(addon.devices()));
    expect(error).toMatchObject({ code: "ERR_CUDA_NOT_SUPPORTED", cudaCode: 801, call: "cuDeviceGetAttribute" });
  });
});

describe("the primary context", () => {
  it("a failed retain rejects, and the next call retains it after all", async () => {
    const error = await withFault("cuDevicePrimaryCtxRetain:46", () => rejection(addon.probe(1, [G], { touch: false })));
    expect(error).toMatchObject({ code: "ERR_CUDA_DEVICE_UNAVAILABLE", cudaCode: 46, call: "cuDevicePrimaryCtxRetain" });
    expect((await addon.probe(1, [G], { touch: false })).fits).toBe(true);
  });

  it("is retained once per device, not once per call", async () => {
    // Only the first retain happens, so a rule failing every later retain never fires.
    const result = await withFault("cuDevicePrimaryCtxRetain:999:0", () => addon.probe(0, [G], { touch: false }));
    expect(result.fits).toBe(true);
  });
});

describe("a failing cuMemFree_v2", () => {
  // Decision: the probe still frees every other block, then rejects with the first failure. A
  // block the driver would not free is not retried; it stays allocated (here: two of the three
  // granules) until the context goes.
  it("rejects with the failure and frees the other blocks", async () => {
    const error = await withFault("cuMemFree_v2:999:1", () => rejection(addon.probe(1, [G, G, G], { touch: true })));
    expect(error).toMatchObject({ code: "ERR_CUDA_UNKNOWN", cudaCode: 999, call: "cuMemFree_v2" });
    expect((await addon.memGetInfo(1)).freeBytes).toBe(freeBytes - 2 * G);
    expect(await addon.releaseDevice(1)).toBe(true); // the context goes, and the two blocks with it
    expect((await addon.memGetInfo(1)).freeBytes).toBe(freeBytes);
  });

  it("with a sticky error the context itself is released, and with it what could not be freed", async () => {
    const error = await withFault("cuMemFree_v2:700:1", () => rejection(addon.probe(1, [G, G, G], { touch: true })));
    expect(error).toMatchObject({ code: "ERR_CUDA_ILLEGAL_ADDRESS", cudaCode: 700, call: "cuMemFree_v2" });
    expect(error.message).toContain(STICKY_SUFFIX);
    expect(await addon.releaseDevice(1)).toBe(false); // already released
    expect((await addon.memGetInfo(1)).freeBytes).toBe(freeBytes);
  });
});
