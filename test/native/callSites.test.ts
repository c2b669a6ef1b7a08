// Every driver and NVML call site, failed in turn. The calls each operation makes are read from
// the simulator's trace (CUDASIM_TRACE), not listed by hand, so a call site added later is
// covered too. For each function and each of its first 4 calls in the operation, CUDASIM_FAIL
// lets the calls before it through and fails it (and every later call of that function); then:
// the right code, call and message; no memory left behind; and the same call works afterwards.
import { readFileSync, rmSync } from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";

import type { Addon } from "../../src/native/addonTypes.js";
import { GiB, MiB, nvmlSimulatorPath, rejection, startSimulator, temporaryPath, withFault } from "./simulator.js";

const DEVICE_BYTES = 4 * GiB;
const DEVICES = 48; // a fresh device (no primary context yet) for every injection
const traceFile = temporaryPath("trace");

let addon: Addon;
let next = 1; // device 0 is the MIG instance; CUDA operations use the plain GPUs after it

function fresh(): number {
  if (next >= DEVICES) throw new Error("out of fresh devices: raise DEVICES");
  return next++;
}

/** The driver and NVML functions `body` calls, in order. */
async function traced(body: () => Promise<unknown>): Promise<string[]> {
  rmSync(traceFile, { force: true });
  process.env.CUDASIM_TRACE = traceFile;
  try {
    await body();
  } finally {
    delete process.env.CUDASIM_TRACE;
  }
  return readFileSync(traceFile, "utf8").trim().split("\n");
}

/** (function, calls let through) for every function in the trace and each of its first 4 calls. */
function injections(calls: string[]): [string, number][] {
  const counts = new Map<string, number>();
  for (const call of calls) counts.set(call, (counts.get(call) ?? 0) + 1);
  return [...counts].flatMap(([fn, n]) => Array.from({ length: Math.min(n, 4) }, (_, k): [string, number] => [fn, k]));
}

beforeAll(async () => {
  const devices = [
    // First in NVML's (PCI) order, so NVML's MIG call sites come early in its trace.
    { name: "NVIDIA A100-SXM4-40GB", totalBytes: 40 * GiB, extras: ["bus=01", `mig=${20 * GiB}+${10 * GiB}`] },
    ...Array.from({ length: DEVICES - 1 }, () => ({ name: "NVIDIA A10", totalBytes: DEVICE_BYTES, extras: ["proc=9@0"] })),
  ];
  // No context cost: "no memory left behind" is then free memory back at the device's total.
  ({ addon } = await startSimulator({ devices, syncDelayMs: 0, contextBytes: 0 }));
});

async function expectNoLeak(ordinal: number, leakedBytes = 0): Promise<void> {
  expect((await addon.memGetInfo(ordinal)).freeBytes).toBe(DEVICE_BYTES - leakedBytes);
}

const CUDA_OPERATIONS = {
  "memGetInfo on a new device": (d: number) => addon.memGetInfo(d),
  "a touched probe that fits, on a new device": (d: number) => addon.probe(d, [64 * MiB, 128 * MiB + 1, 2 * MiB], { touch: true }),
  "a probe that runs out of memory": (d: number) => addon.probe(d, [GiB, 2 * GiB, 2 * GiB], { touch: false }),
};

describe("driver call sites", () => {
  for (const [name, operation] of Object.entries(CUDA_OPERATIONS)) {
    it(`${name}: each call failing is ERR_CUDA_UNKNOWN naming it, frees everything, and the next call works`, async () => {
      const traceDevice = fresh();
      const expected = await operation(traceDevice);
      const calls = await traced(() => operation(fresh()));
      expect(calls.length).toBeGreaterThan(3);
      for (const [fn, passed] of injections(calls)) {
        const d = fresh();
        const outcome = await withFault(`${fn}:999:${passed}`, () => operation(d).then((value) => ({ value }), (error: unknown) => ({ error })));
        const site = `${fn} after ${passed} calls`;
        // The one best-effort call: restoring the thread's previous context when a session ends.
        const ignored = fn === "cuCtxSetCurrent" && passed === 1;
        if (ignored) {
          expect(outcome, site).toEqual({ value: expected });
        } else {
          expect("error" in outcome, site).toBe(true);
          const error = (outcome as { error: { code: string; cudaCode: number; call: string; message: string } }).error;
          expect({ code: error.code, cudaCode: error.cudaCode, call: error.call, message: error.message }, site).toEqual({
            code: "ERR_CUDA_UNKNOWN",
            cudaCode: 999,
            call: fn,
            message: `${fn} failed: unknown error (CUDA_ERROR_UNKNOWN = 999)`,
          });
        }
        // A block whose cuMemFree_v2 failed is not retried (DeviceAllocations::FreeAll): it stays
        // allocated until the context goes, and is the only memory left behind.
        // The probe that runs out of memory first measures the device's headroom (probe.cc's Headroom): its
        // bisection's one granted trial is the last free GiB, allocated and freed before the probe's own
        // blocks; from a failed free on, every free fails, that trial's included.
        const blocks = name.startsWith("a touched") ? [64 * MiB, 130 * MiB, 2 * MiB] : [GiB, GiB, 2 * GiB];
        const leaked = fn === "cuMemFree_v2" ? blocks.slice(passed).reduce((a, b) => a + b, 0) : 0;
        await expectNoLeak(d, leaked);
        const afterwards = await operation(d); // rejects if the device were left unusable
        if (leaked === 0) expect(afterwards, `${site}: afterwards`).toEqual(expected);
      }
    });
  }

  it("devices(): each enumeration call failing rejects naming it", async () => {
    const expected = await addon.devices();
    const calls = await traced(() => addon.devices());
    for (const [fn, passed] of injections(calls)) {
      const error = await withFault(`${fn}:999:${passed}`, () => rejection(addon.devices()));
      expect({ code: error.code, call: error.call, message: error.message }, `${fn} after ${passed}`).toEqual({
        code: "ERR_CUDA_UNKNOWN",
        call: fn,
        message: `${fn} failed: unknown error (CUDA_ERROR_UNKNOWN = 999)`,
      });
      expect(await addon.devices()).toEqual(expected);
    }
  });

  it("a driver that cannot name its own error still gives the number", async () => {
    const d = fresh();
    const error = await withFault("cuMemAlloc_v2:801,cuGetErrorName:999,cuGetErrorString:999", () => rejection(addon.probe(d, [MiB], { touch: false })));
    expect({ code: error.code, cudaCode: error.cudaCode, message: error.message }).toEqual({
      code: "ERR_CUDA_801",
      cudaCode: 801,
      message: "cuMemAlloc_v2 failed: unrecognized error (CUresult 801)",
    });
    await expectNoLeak(d);
  });
});

describe("NVML call sites", () => {
  it("loading: a failed nvmlInit_v2 rejects and may be retried; a failed version query is only a missing version", async () => {
    const error = await withFault("nvmlInit_v2:999", () => rejection(addon.loadNvml(nvmlSimulatorPath)));
    expect({ code: error.code, nvmlCode: error.nvmlCode, call: error.call, message: error.message }).toEqual({
      code: "ERR_NVML_UNKNOWN",
      nvmlCode: 999,
      call: "nvmlInit_v2",
      message: "nvmlInit_v2 failed: Unknown Error (NVML_ERROR_UNKNOWN = 999)",
    });
    const info = await withFault("nvmlSystemGetDriverVersion:999", () => addon.loadNvml(nvmlSimulatorPath));
    expect(info.driverVersion).toBeNull();
  });

  it("nvmlDevices(): each call failing is recorded on its device (or rejects, for the count), and the next call works", async () => {
    const expected = await addon.nvmlDevices();
    const calls = await traced(() => addon.nvmlDevices());
    expect(new Set(calls)).toEqual(
      new Set([
        "nvmlDeviceGetCount_v2",
        "nvmlDeviceGetHandleByIndex_v2",
        "nvmlDeviceGetUUID",
        "nvmlDeviceGetMemoryInfo_v2",
        "nvmlDeviceGetComputeRunningProcesses_v3",
        "nvmlDeviceGetMigMode",
        "nvmlDeviceGetMaxMigDeviceCount",
        "nvmlDeviceGetMigDeviceHandleByIndex",
        "nvmlDeviceGetComputeMode",
      ]),
    );
    for (const [fn, passed] of injections(calls)) {
      const site = `${fn} after ${passed}`;
      const message = `${fn} failed: Unknown Error (NVML_ERROR_UNKNOWN = 999)`;
      const outcome = await withFault(`${fn}:999:${passed}`, () => addon.nvmlDevices().then((value) => ({ value }), (error: unknown) => ({ error })));
      if (fn === "nvmlDeviceGetCount_v2") {
        expect("error" in outcome && (outcome.error as Error).message, site).toBe(message);
      } else {
        expect("value" in outcome, site).toBe(true);
        const errors = (outcome as { value: typeof expected }).value.flatMap((d) => d.errors);
        expect(errors.length, site).toBeGreaterThan(0);
        for (const error of errors) {
          expect({ code: error.code, nvmlCode: error.nvmlCode, call: error.call, message: error.message }, site).toEqual({
            code: "ERR_NVML_UNKNOWN",
            nvmlCode: 999,
            call: fn,
            message,
          });
        }
      }
      expect(await addon.nvmlDevices(), `${site}: afterwards`).toEqual(expected);
    }
  });
});
