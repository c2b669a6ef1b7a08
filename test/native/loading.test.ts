// Loading the driver: the failures that come before any device, then a load that works.
// The tests run in order in one process: every failed load leaves the driver unloaded.
import { describe, expect, it } from "vitest";

import { GiB, configureSimulator, loadAddon, rejection, simulatorPath, withFault } from "./simulator.js";

const addon = loadAddon();
const oneDevice = { devices: [{ name: "NVIDIA A100-SXM4-40GB", totalBytes: 40 * GiB }], driverVersion: 12020 };

describe("before loadDriver", () => {
  it("rejects every device call with ERR_DRIVER_NOT_LOADED", async () => {
    // One call at a time: a promise that rejects before it is awaited is an unhandled rejection.
    for (const call of [() => addon.devices(), () => addon.memGetInfo(0), () => addon.probe(0, [1], { touch: false })]) {
      const error = await rejection(call());
      expect(error.code).toBe("ERR_DRIVER_NOT_LOADED");
      expect(error.message).toMatch(/loadDriver\(\)/);
    }
  });
});

describe("loadDriver failures", () => {
  it("a missing library is ERR_DRIVER_NOT_FOUND with dlerror's text", async () => {
    const error = await rejection(addon.loadDriver("/nonexistent/libcuda.so.1"));
    expect(error.code).toBe("ERR_DRIVER_NOT_FOUND");
    expect(error.message).toBe(
      "driver not found: /nonexistent/libcuda.so.1: cannot open shared object file: No such file or directory",
    );
  });

  it("a missing library rejects without a turn of the event loop (opened on the JS thread, not the pool)", async () => {
    // Microtasks alone run below: a rejection that came back from libuv's pool would need the
    // loop's poll phase, so `settled` would still be false (load_driver.cc says why it matters).
    let settled = false;
    const failed = rejection(addon.loadDriver("/nonexistent/libcuda.so.1")).then((error) => {
      settled = true;
      return error;
    });
    for (let i = 0; i < 20; i++) await Promise.resolve();
    expect(settled).toBe(true);
    expect((await failed).code).toBe("ERR_DRIVER_NOT_FOUND");
  });

  it("a library without the driver's functions is ERR_DRIVER_SYMBOL naming the first one missing", async () => {
    const error = await rejection(addon.loadDriver("libm.so.6"));
    expect(error.code).toBe("ERR_DRIVER_SYMBOL");
    expect(error.message).toMatch(/\bcuInit\b/);
  });

  it("a driver that sees no device is ERR_NO_DEVICE from cuInit", async () => {
    configureSimulator({ devices: [] });
    const error = await rejection(addon.loadDriver(simulatorPath));
    expect(error.code).toBe("ERR_NO_DEVICE");
    expect(error.cudaCode).toBe(100);
    expect(error.call).toBe("cuInit");
    expect(error.message).toBe("cuInit failed: no CUDA-capable device is detected (CUDA_ERROR_NO_DEVICE = 100)");
  });

  it("a malformed CUDASIM_DEVICES fails cuInit instead of looking like a machine without GPUs", async () => {
    configureSimulator(oneDevice);
    process.env.CUDASIM_DEVICES = "NVIDIA A100-SXM4-40GB:40GiB";
    const error = await rejection(addon.loadDriver(simulatorPath));
    expect(error).toMatchObject({ code: "ERR_CUDA_INVALID_VALUE", cudaCode: 1, call: "cuInit" });
  });

  it.each(["cuDriverGetVersion", "cuDeviceGetCount"])("%s failing after cuInit is ERR_CUDA_<NAME> naming it; the load can be retried", async (call) => {
    configureSimulator(oneDevice);
    const error = await withFault(`${call}:999`, () => rejection(addon.loadDriver(simulatorPath)));
    expect({ code: error.code, call: error.call, message: error.message }).toEqual({
      code: "ERR_CUDA_UNKNOWN",
      call,
      message: `${call} failed: unknown error (CUDA_ERROR_UNKNOWN = 999)`,
    });
  });

  it("any other cuInit failure is ERR_CUDA_<NAME>", async () => {
    configureSimulator(oneDevice);
    const error = await withFault("cuInit:803", () => rejection(addon.loadDriver(simulatorPath)));
    expect(error.code).toBe("ERR_CUDA_SYSTEM_DRIVER_MISMATCH");
    expect(error.cudaCode).toBe(803);
    expect(error.call).toBe("cuInit");
  });
});

describe("loadDriver", () => {
  it("loads the simulator after the failures and reports its version", async () => {
    configureSimulator(oneDevice);
    const info = await addon.loadDriver(simulatorPath);
    expect(info).toEqual({ version: 12020, libraryPath: simulatorPath, uuidV2: true });
    expect((await addon.devices()).map((device) => device.name)).toEqual(["NVIDIA A100-SXM4-40GB"]);
  });

  it("resolves a second call with the same path to the same info", async () => {
    expect(await addon.loadDriver(simulatorPath)).toEqual({ version: 12020, libraryPath: simulatorPath, uuidV2: true });
  });

  it("rejects a second driver", async () => {
    const error = await rejection(addon.loadDriver("/usr/lib/other/libcuda.so.1"));
    expect(error.code).toBe("ERR_INVALID_ARGUMENT");
    expect(error.message).toContain(simulatorPath);
  });

  it("rejects a path that is not a string", async () => {
    const error = await rejection(addon.loadDriver(42 as unknown as string));
    expect(error.code).toBe("ERR_INVALID_ARGUMENT");
  });
});
