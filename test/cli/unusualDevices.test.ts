// Odd machines: an integrated GPU (device memory is system memory), MIG instances, a GPU that
// falls off the bus between listing and probing, and driver failures in the middle of a command.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { nvmlSimulator, root, runCli, runJson, simulatedGpus, spawnCollected } from "./runCli.js";

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
    // Less the default reserve, 5% of 32 GiB = 1,717,986,919 B.
    expect(run.json.budgetBytes).toBe(8 * GiB - 1717986919);
    expect(run.json.batchSize).toBe(17); // (6,871,947,673 − 1,604,321,280 − 536,870,912 of job context) / 256 MiB = 17.6
    expect(run.json.bytesAtBatch).toBeLessThanOrEqual(8 * GiB);
    // The addon's floor counts the 23 GiB the driver calls free but the OS cannot give: it refuses the allocation.
    const check = await runJson<{ fits: boolean; probes: number; limit: string }>(["check", "--need", "9GiB"], env);
    expect(check.json).toMatchObject({ fits: false, probes: 1, limit: "reserve" });
  });

  it("(a discrete GPU with the same memory is not capped)", async () => {
    const run = await runJson<BatchJson>(["batch", ...SMALL], simulatedGpus(ORIN, { VRAMFIT_PROC_MEMINFO: MEMINFO_8GIB }));
    expect(run.json.budgetBytes).toBe(31 * GiB - 1717986919);
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
    expect(run.json.budgetBytes).toBe(38 * GiB); // the instance's memory less 5% of it, not the GPU's 80 GB
  });
});

describe("a GPU that falls off the bus after it was listed (one failing GPU does not hide the others)", () => {
  it("batch --device all answers for the healthy device and gives the lost one an error row: exit 6, memory freed", async () => {
    const state = ledger();
    const env = simulatedGpus(`NVIDIA H100 80GB HBM3:85520809984:0;NVIDIA H100 80GB HBM3:85520809984:0`, {
      CUDASIM_STATE: state,
      CUDASIM_LOST: "1",
      CUDASIM_SYNC_DELAY_MS: "300",
    });
    const run = await runJson<({ batchSize: number; device: { ordinal: number } } | { error: { code: string; message: string }; device: { ordinal: number; freeBytes: null } })[]>(
      ["batch", ...SMALL, "--device", "all"],
      env,
    );
    expect(run.status).toBe(6); // a partial result: not 0, and not 1 ("does not fit" is certain, this is not)
    expect(run.json).toHaveLength(2);
    // (85,520,809,984 − 4,276,040,500 of reserve − 1,604,321,280 of states − 536,870,912 of context) / 256 MiB = 294.7
    expect(run.json[0]).toMatchObject({ device: { ordinal: 0 }, batchSize: 294 });
    const lost = run.json[1] as { error: { code: string; message: string }; device: { ordinal: number; freeBytes: null } };
    expect(lost.device).toMatchObject({ ordinal: 1, freeBytes: null });
    expect(lost.error.code).toBe("ERR_CUDA_DEVICE_UNAVAILABLE");
    expect(lost.error.message).toMatch(/^device 1 \(GPU-[0-9a-f-]{36}\): cuDevicePrimaryCtxRetain failed: CUDA-capable device\(s\) is\/are busy or unavailable \(CUDA_ERROR_DEVICE_UNAVAILABLE = 46\)$/);
    const human = await runCli(["batch", ...SMALL, "--device", "all"], env);
    expect(human.status).toBe(6);
    expect(human.stdout).toMatch(/1: NVIDIA H100 80GB HBM3 +failed/);
    expect(human.stdout).toMatch(/^error {5}device 1 \(GPU-[0-9a-f-]{36}\): cuDevicePrimaryCtxRetain failed/m);
    const after = await runJson<{ devices: { freeBytes: number }[] }>(["info"], { ...env, CUDASIM_LOST: "", CUDA_VISIBLE_DEVICES: "0" });
    expect(after.json.devices[0]!.freeBytes).toBe(85520809984);
  });

  it("check --device all: the healthy device's answer and an error row, exit 6; a healthy device that does not fit still exits 1", async () => {
    const env = simulatedGpus(`NVIDIA H100 80GB HBM3:85520809984:0;NVIDIA H100 80GB HBM3:85520809984:0`, { CUDASIM_LOST: "1" });
    const fits = await runJson<{ fits?: boolean; error?: { code: string } }[]>(["check", "--need", "10GiB", "--device", "all"], env);
    expect(fits.status).toBe(6);
    expect(fits.json.map((r) => r.fits ?? r.error!.code)).toEqual([true, "ERR_CUDA_DEVICE_UNAVAILABLE"]);
    const tooBig = await runJson<{ fits?: boolean }[]>(["check", "--need", "79GiB", "--device", "all"], env);
    expect(tooBig.status).toBe(1);
    expect(tooBig.json[0]!.fits).toBe(false);
  });

  it("info lists the healthy device and marks the lost one with its error, through NVML and CUDA alike: exit 6", async () => {
    const env = simulatedGpus(`NVIDIA H100 80GB HBM3:85520809984:0;Tesla T4:15843721216:0`, { VRAMFIT_NVML_LIBRARY: nvmlSimulator, CUDASIM_LOST: "1" });
    const run = await runJson<{ devices: { ordinal: number; name: string; freeBytes: number | null; memorySource: string | null; error: { code: string; message: string } | null }[] }>(["info"], env);
    expect(run.status).toBe(6);
    expect(run.json.devices.map((d) => [d.ordinal, d.name, d.freeBytes, d.memorySource])).toEqual([
      [0, "NVIDIA H100 80GB HBM3", 85520809984, "nvml"],
      [1, "Tesla T4", null, null],
    ]);
    expect(run.json.devices[0]!.error).toBeNull();
    expect(run.json.devices[1]!.error!.message).toMatch(/^device 1 \(GPU-[0-9a-f-]{36}\): cuDevicePrimaryCtxRetain failed: .*CUDA_ERROR_DEVICE_UNAVAILABLE = 46\)$/);
    const human = await runCli(["info"], env);
    expect(human.status).toBe(6);
    expect(human.stdout).toMatch(/^0 +NVIDIA H100 80GB HBM3 /m);
    expect(human.stdout).toMatch(/^1 +Tesla T4 +GPU-\S+ +14\.76 GiB +- +- +failed/m);
  });

  it("every device lost: nothing to show, exit 4 with the first device's error", async () => {
    const env = simulatedGpus(`NVIDIA H100 80GB HBM3:85520809984:0;NVIDIA H100 80GB HBM3:85520809984:0`, { CUDASIM_LOST: "0,1" });
    const run = await runCli(["batch", ...SMALL, "--device", "all", "--json"], env);
    expect(run.status).toBe(4);
    expect(run.stdout).toBe("");
    expectOneLine(run, /^vramfit: device 0 \(GPU-[0-9a-f-]{36}\): cuDevicePrimaryCtxRetain failed/);
  });

  it("the library's devices() lists both, the lost one with its error, instead of throwing", async () => {
    const env = simulatedGpus(`NVIDIA H100 80GB HBM3:85520809984:0;Tesla T4:15843721216:0`, { CUDASIM_LOST: "1" });
    const script = `import("${root}/dist/index.js").then(async (v) => console.log(JSON.stringify((await v.devices()).map((d) => [d.name, d.freeBytes, d.error?.code ?? null]))))`;
    const run = await spawnCollected(process.execPath, ["-e", script], { env: { PATH: process.env.PATH ?? "", ...env } }).finished;
    expect(run.stderr).toBe("");
    expect(JSON.parse(run.stdout)).toEqual([
      ["NVIDIA H100 80GB HBM3", 85520809984, null],
      ["Tesla T4", null, "ERR_CUDA_DEVICE_UNAVAILABLE"],
    ]);
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
