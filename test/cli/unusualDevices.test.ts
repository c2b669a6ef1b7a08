// Odd machines: an integrated GPU (device memory is system memory), MIG instances, a GPU that
// falls off the bus between listing and probing, and driver failures in the middle of a command.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { nvmlSimulator, root, runCli, runJson, simulatedGpus } from "./runCli.js";

const GiB = 2 ** 30;
const MEMINFO_8GIB = resolve(root, "test", "fixtures", "meminfo", "8GiB-available.txt");
const ORIN = `Jetson AGX Orin:${32 * GiB}:${GiB}`;
// 1e8 parameters, amp + AdamW: 96 + 96 + 573 pages of 2 MiB = 1,604,321,280 B, then 256 MiB a sample.
const SMALL = ["--params", "1e8", "--per-sample", "256MiB"];

interface BatchJson {
  batchSize: number;
  budgetBytes: number;
  bytesAtBatch: number;
  probes: number;
  device: { uuid: string; freeBytes: number; totalBytes: number };
}

function ledger(): string {
  return join(mkdtempSync(join(tmpdir(), "vramfit-odd-")), "ledger");
}

function expectOneLine(run: { stderr: string }, pattern: RegExp): void {
  const lines = run.stderr.trimEnd().split("\n");
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(pattern);
}

describe("an integrated GPU", () => {
  it("never probes past what the OS can give (MemAvailable), whatever the driver says is free", async () => {
    const env = simulatedGpus(`${ORIN}:integrated=1`, { VRAMFIT_PROC_MEMINFO: MEMINFO_8GIB });
    const run = await runJson<BatchJson>(["batch", ...SMALL], env);
    expect(run.json.device.freeBytes).toBe(8 * GiB); // the driver says 31 GiB
    expect(run.json.budgetBytes).toBe(8 * GiB);
    expect(run.json.batchSize).toBe(26); // (8 GiB − 1,604,321,280 B) / 256 MiB = 26.02
    expect(run.json.bytesAtBatch).toBeLessThanOrEqual(8 * GiB);
    const check = await runJson<{ fits: boolean; probes: number }>(["check", "--need", "9GiB"], env);
    expect(check.json).toMatchObject({ fits: false, probes: 0 }); // refused before any allocation
  });

  it("(a discrete GPU with the same memory is not capped)", async () => {
    const run = await runJson<BatchJson>(["batch", ...SMALL], simulatedGpus(ORIN, { VRAMFIT_PROC_MEMINFO: MEMINFO_8GIB }));
    expect(run.json.budgetBytes).toBe(31 * GiB);
  });
});

describe("MIG", () => {
  const A100_MIG = simulatedGpus(`NVIDIA A100-SXM4-80GB:85899345920:0:mig=${40 * GiB}+${20 * GiB}`, { VRAMFIT_NVML_LIBRARY: nvmlSimulator });

  it("a MIG instance is a device of its own: its UUID, its memory, found by CUDA_VISIBLE_DEVICES=MIG-…", async () => {
    const info = await runJson<{ devices: { name: string; uuid: string; totalBytes: number; freeBytes: number; memorySource: string }[] }>(["info"], A100_MIG);
    expect(info.json.devices).toHaveLength(1); // CUDA shows one MIG device per process
    const [instance] = info.json.devices;
    expect(instance).toMatchObject({ name: "NVIDIA A100-SXM4-80GB MIG 43gb", totalBytes: 40 * GiB, freeBytes: 40 * GiB, memorySource: "nvml" });
    expect(instance!.uuid).toMatch(/^MIG-[0-9a-f]{8}-/);
    const run = await runJson<BatchJson>(["batch", ...SMALL], { ...A100_MIG, CUDA_VISIBLE_DEVICES: instance!.uuid });
    expect(run.json.device.uuid).toBe(instance!.uuid);
    expect(run.json.budgetBytes).toBe(40 * GiB); // the instance's memory, not the GPU's 80 GB
  });
});

describe("a GPU that falls off the bus after it was listed", () => {
  it("fails the command naming the device, after the other device's probe has finished and freed", async () => {
    const state = ledger();
    const env = simulatedGpus(`NVIDIA H100 80GB HBM3:85520809984:0;NVIDIA H100 80GB HBM3:85520809984:0`, {
      CUDASIM_STATE: state,
      CUDASIM_LOST: "1",
      CUDASIM_SYNC_DELAY_MS: "300",
    });
    const run = await runCli(["batch", ...SMALL, "--device", "all", "--json"], env);
    expect(run.status).toBe(4);
    expect(run.stdout).toBe("");
    expectOneLine(run, /^vramfit: device 1 \(GPU-[0-9a-f-]{36}\): cuDevicePrimaryCtxRetain failed: CUDA-capable device\(s\) is\/are busy or unavailable \(CUDA_ERROR_DEVICE_UNAVAILABLE = 46\)$/);
    const after = await runJson<{ devices: { freeBytes: number }[] }>(["info"], { ...env, CUDASIM_LOST: "", CUDA_VISIBLE_DEVICES: "0" });
    expect(after.json.devices[0]!.freeBytes).toBe(85520809984);
  });

  it("info says which one through NVML and CUDA alike", async () => {
    const env = simulatedGpus(`NVIDIA H100 80GB HBM3:85520809984:0;Tesla T4:15843721216:0`, { VRAMFIT_NVML_LIBRARY: nvmlSimulator, CUDASIM_LOST: "1" });
    const run = await runCli(["info", "--json"], env);
    expect(run.status).toBe(4);
    expectOneLine(run, /^vramfit: device 1 \(GPU-[0-9a-f-]{36}\): cuDevicePrimaryCtxRetain failed: .*CUDA_ERROR_DEVICE_UNAVAILABLE = 46\)$/);
  });
});

describe("a driver call failing mid-command", () => {
  it("exits 4 with one line naming the call, and leaves nothing allocated", async () => {
    const state = ledger();
    const env = simulatedGpus("NVIDIA H100 80GB HBM3:85520809984:0", { CUDASIM_STATE: state });
    const run = await runCli(["batch", ...SMALL], { ...env, CUDASIM_FAIL: "cuMemAlloc_v2:999:2" });
    expect(run.status).toBe(4);
    expect(run.stdout).toBe("");
    expectOneLine(run, /^vramfit: device 0 \(GPU-[0-9a-f-]{36}\): cuMemAlloc_v2 failed: unknown error \(CUDA_ERROR_UNKNOWN = 999\)$/);
    const after = await runJson<{ devices: { freeBytes: number }[] }>(["info"], env);
    expect(after.json.devices[0]!.freeBytes).toBe(85520809984);
  });

  it("an old driver without a function vramfit needs is a clear reason, not a crash", async () => {
    const run = await runJson<{ reason: string }>(["info"], { VRAMFIT_CUDA_LIBRARY: "libm.so.6" });
    expect(run.status).toBe(0);
    expect(run.json.reason).toBe("the CUDA driver libm.so.6 lacks cuInit: it is too old for vramfit");
  });
});
