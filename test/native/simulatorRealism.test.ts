// Where the simulator behaves like the driver rather than like vramfit's model, so that a test can
// catch the model being wrong: small allocations share pages, a context costs memory, device work
// fails at the next synchronization, a broken context stays broken, compute modes refuse contexts.
// docs/simulator.md cites the behaviour each one follows.
import { readFileSync, rmSync } from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";

import type { Addon } from "../../src/native/addonTypes.js";
import {
  DEFAULT_CONTEXT_BYTES,
  GiB,
  MiB,
  devicesText,
  inAnotherProcess,
  rejection,
  startNvml,
  startSimulator,
  temporaryPath,
} from "./simulator.js";

const TOTAL = 8 * GiB;
const PAGE = 2 * MiB;
const A100 = "NVIDIA A100-SXM4-40GB";
const devices = [
  { name: "NVIDIA L4", totalBytes: TOTAL }, // 0: allocations and faults
  { name: A100, totalBytes: TOTAL, usedBytes: GiB, extras: ["mode=exclusive-process", `proc=4242@${GiB}`] }, // 1: another user has it
  { name: A100, totalBytes: TOTAL, extras: ["mode=prohibited"] }, // 2
  { name: A100, totalBytes: TOTAL, extras: ["mode=exclusive-process"] }, // 3: shared with a second process
];
const stateFile = temporaryPath("ledger");
const machine = { CUDASIM_DEVICES: devicesText(devices), CUDASIM_STATE: stateFile };
const STICKY_SUFFIX =
  "; a sticky error leaves the context unusable, so vramfit released its context (if the next call fails the same way, the process must be restarted)";

let addon: Addon;

beforeAll(async () => {
  // No contextBytes: the simulator's default context cost is part of what is tested here.
  ({ addon } = await startSimulator({ devices, stateFile }));
  await startNvml();
});

/** Device bytes a probe of `sizes` holds at its peak on device 0. */
async function taken(sizes: number[]): Promise<number> {
  const result = await addon.probe(0, sizes, { touch: false });
  expect(result.fits).toBe(true);
  return result.freeBytesAtStart - result.freeBytesAtPeak;
}

/** What NVML lists this process as holding on GPU `index` (0 when it is not listed). */
async function heldByMe(index: number): Promise<number> {
  const processes = (await addon.nvmlDevices())[index]!.processes!;
  return processes.find((p) => p.pid === process.pid)?.usedBytes ?? 0;
}

describe("small allocations share pages, as the driver's do", () => {
  it("1,000 allocations of 1 KiB take one 2 MiB page, not the 1,000 a page each would", async () => {
    expect(await taken(Array.from({ length: 1000 }, () => 1024))).toBe(PAGE);
  });

  it("up to 1 MiB they pack into pages; above, each takes whole pages", async () => {
    expect(await taken([MiB, MiB])).toBe(PAGE);
    expect(await taken([MiB, MiB, 1])).toBe(2 * PAGE);
    expect(await taken([MiB + 1])).toBe(PAGE);
    expect(await taken([MiB + 1, MiB + 1])).toBe(2 * PAGE);
  });

  it("each is rounded up to 512 bytes inside its page", async () => {
    expect(await taken(Array.from({ length: 4096 }, () => 512))).toBe(PAGE);
    // 4,088 × 513 B would fit one page unrounded; rounded to 1,024 B each they need two.
    expect(await taken(Array.from({ length: 4088 }, () => 513))).toBe(2 * PAGE);
  });

  it("gives a page back with the last allocation in it: free memory is back where it was", async () => {
    expect((await addon.memGetInfo(0)).freeBytes).toBe(TOTAL - DEFAULT_CONTEXT_BYTES);
  });

  it("is configurable: CUDASIM_SMALL_ALLOC_MAX=0 gives every allocation its own page, CUDASIM_ALLOC_ALIGNMENT the rounding", () => {
    const body = (sizes: string) => `const r = await addon.probe(0, ${sizes}, { touch: false }); return r.freeBytesAtStart - r.freeBytesAtPeak;`;
    const l4 = devicesText([devices[0]!]);
    expect(inAnotherProcess({ CUDASIM_DEVICES: l4, CUDASIM_SMALL_ALLOC_MAX: "0" }, body("Array(100).fill(1024)"))).toBe(100 * PAGE);
    // 600 KiB: three to a page rounded to 512 B, two to a page rounded to 1 MiB.
    expect(inAnotherProcess({ CUDASIM_DEVICES: l4 }, body(`Array(3).fill(${600 * 1024})`))).toBe(PAGE);
    expect(inAnotherProcess({ CUDASIM_DEVICES: l4, CUDASIM_ALLOC_ALIGNMENT: String(MiB) }, body(`Array(3).fill(${600 * 1024})`))).toBe(2 * PAGE);
  });
});

describe("a primary context costs device memory", () => {
  it("256 MiB by default, seen by cuMemGetInfo and by NVML as this process's, until it is released", async () => {
    expect((await addon.memGetInfo(0)).freeBytes).toBe(TOTAL - DEFAULT_CONTEXT_BYTES);
    expect(await heldByMe(0)).toBe(DEFAULT_CONTEXT_BYTES);
    expect(await addon.releaseDevice(0)).toBe(true);
    expect(await heldByMe(0)).toBe(0);
  });

  it("CUDASIM_CONTEXT_BYTES sets it", () => {
    const body = "return (await addon.memGetInfo(0)).freeBytes;";
    const l4 = devicesText([devices[0]!]);
    expect(inAnotherProcess({ CUDASIM_DEVICES: l4, CUDASIM_CONTEXT_BYTES: "0" }, body)).toBe(TOTAL);
    expect(inAnotherProcess({ CUDASIM_DEVICES: l4, CUDASIM_CONTEXT_BYTES: String(500 * MiB) }, body)).toBe(TOTAL - 500 * MiB);
  });
});

describe("device work that fails does so at the next synchronization", () => {
  const blocks = [PAGE, PAGE, PAGE];

  it("a failed memset is reported by cuCtxSynchronize, not by cuMemsetD8_v2; the context stays usable", async () => {
    process.env.CUDASIM_ASYNC_FAIL = "cuMemsetD8_v2:999:1"; // the second memset's work fails
    try {
      const error = await rejection(addon.probe(0, blocks, { touch: true }));
      expect({ code: error.code, cudaCode: error.cudaCode, call: error.call, message: error.message }).toEqual({
        code: "ERR_CUDA_UNKNOWN",
        cudaCode: 999,
        call: "cuCtxSynchronize",
        message: "cuCtxSynchronize failed: unknown error (CUDA_ERROR_UNKNOWN = 999)",
      });
    } finally {
      delete process.env.CUDASIM_ASYNC_FAIL;
    }
    expect((await addon.memGetInfo(0)).freeBytes).toBe(TOTAL - DEFAULT_CONTEXT_BYTES); // the blocks were freed
    expect(await heldByMe(0)).toBe(DEFAULT_CONTEXT_BYTES); // and the context kept
    expect((await addon.probe(0, blocks, { touch: true })).fits).toBe(true);
  });

  it("after a sticky error every call in the context fails: the frees fail, and the context's end returns the memory", async () => {
    await addon.releaseDevice(0);
    const log = temporaryPath("memory-log");
    process.env.CUDASIM_MEMORY_LOG = log;
    process.env.CUDASIM_ASYNC_FAIL = "cuMemsetD8_v2:700:1";
    let error;
    try {
      error = await rejection(addon.probe(0, blocks, { touch: true }));
    } finally {
      delete process.env.CUDASIM_ASYNC_FAIL;
      delete process.env.CUDASIM_MEMORY_LOG;
    }
    expect({ code: error.code, cudaCode: error.cudaCode, call: error.call }).toEqual({ code: "ERR_CUDA_ILLEGAL_ADDRESS", cudaCode: 700, call: "cuCtxSynchronize" });
    expect(error.message).toBe(`cuCtxSynchronize failed: an illegal memory access was encountered (CUDA_ERROR_ILLEGAL_ADDRESS = 700)${STICKY_SUFFIX}`);
    // The context and three pages charged; no cuMemFree_v2 succeeded; the release took it all back at once.
    const changes = readFileSync(log, "utf8").trim().split("\n").map((line) => line.split(" ").slice(0, 4).join(" "));
    expect(changes).toEqual([
      `${process.pid} charge pool=0 bytes=${DEFAULT_CONTEXT_BYTES}`,
      `${process.pid} charge pool=0 bytes=${PAGE}`,
      `${process.pid} charge pool=0 bytes=${PAGE}`,
      `${process.pid} charge pool=0 bytes=${PAGE}`,
      `${process.pid} uncharge pool=0 bytes=${DEFAULT_CONTEXT_BYTES + 3 * PAGE}`,
    ]);
    rmSync(log);
    expect(await heldByMe(0)).toBe(0);
    // The next call creates a new context, without the error.
    expect(await addon.probe(0, blocks, { touch: true })).toMatchObject({ fits: true, freeBytesAtStart: TOTAL - DEFAULT_CONTEXT_BYTES });
  });
});

describe("compute modes", () => {
  it("devices() and nvmlDevices() report each device's mode", async () => {
    const expected = ["default", "exclusive-process", "prohibited", "exclusive-process"];
    expect((await addon.devices()).map((d) => d.computeMode)).toEqual(expected);
    expect((await addon.nvmlDevices()).map((d) => d.computeMode)).toEqual(expected);
  });

  it("exclusive-process, held by another user's process: the driver's CUDA_ERROR_DEVICE_UNAVAILABLE, and vramfit names the mode", async () => {
    const error = await rejection(addon.probe(1, [PAGE], { touch: false }));
    expect({ code: error.code, cudaCode: error.cudaCode, call: error.call, message: error.message }).toEqual({
      code: "ERR_DEVICE_EXCLUSIVE_PROCESS",
      cudaCode: 46,
      call: "cuDevicePrimaryCtxRetain",
      message:
        "device 1 is in exclusive-process compute mode and another process has a context on it, so vramfit cannot create one " +
        "(cuDevicePrimaryCtxRetain failed: CUDA-capable device(s) is/are busy or unavailable (CUDA_ERROR_DEVICE_UNAVAILABLE = 46))",
    });
  });

  it("prohibited: no process may create a context", async () => {
    const error = await rejection(addon.memGetInfo(2));
    expect({ code: error.code, cudaCode: error.cudaCode, message: error.message }).toEqual({
      code: "ERR_DEVICE_PROHIBITED",
      cudaCode: 46,
      message:
        "device 2 is in prohibited compute mode: no process may create a context on it " +
        "(cuDevicePrimaryCtxRetain failed: CUDA-capable device(s) is/are busy or unavailable (CUDA_ERROR_DEVICE_UNAVAILABLE = 46))",
    });
  });

  it("exclusive-process between two processes: the first to create its context has the device until it releases it", async () => {
    const attempt = "return addon.memGetInfo(3).then((m) => m.freeBytes, (e) => e.code);";
    expect((await addon.memGetInfo(3)).freeBytes).toBe(TOTAL - DEFAULT_CONTEXT_BYTES);
    expect(inAnotherProcess(machine, attempt)).toBe("ERR_DEVICE_EXCLUSIVE_PROCESS");
    expect(await addon.releaseDevice(3)).toBe(true);
    // The other process has it now, for as long as it lives (it exits, releasing it, at the end).
    expect(inAnotherProcess(machine, `${attempt.replace("return ", "const free = await ")}; return [free, await addon.memGetInfo(3).then(() => "again")];`)).toEqual([
      TOTAL - DEFAULT_CONTEXT_BYTES,
      "again",
    ]);
    expect((await addon.memGetInfo(3)).freeBytes).toBe(TOTAL - DEFAULT_CONTEXT_BYTES);
  });
});
