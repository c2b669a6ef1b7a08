// `info` and `check --need` through NVML: no CUDA context where NVML answers (the driver's trace
// shows no cuDevicePrimaryCtxRetain), CUDA where it cannot, and which one answered.
import { readFileSync, rmSync } from "node:fs";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { nvmlSimulator, runCli, runJson, simulatedGpus } from "./runCli.js";

const GiB = 2 ** 30;
const MiB = 2 ** 20;
const CONTEXT = 300 * MiB;
const H100 = 85520809984;
const T4 = 15843721216;
const ORIN = 32 * GiB;
// CUDA order: H100, T4, Orin. NVML (PCI bus) order: T4, H100, and Orin, which NVML cannot measure.
const MACHINE = `NVIDIA H100 80GB HBM3:${H100}:${3 * GiB}:reserved=${512 * MiB}:bus=4F:proc=4242@${3 * GiB};Tesla T4:${T4}:0:bus=0A;Orin:${ORIN}:${GiB}:integrated=1:bus=50`;

interface InfoDevice {
  ordinal: number;
  name: string;
  uuid: string;
  totalBytes: number;
  freeBytes: number;
  usedBytes: number;
  memorySource: "nvml" | "cuda";
  memorySourceReason: string | null;
  reservedBytes: number | null;
  processes: { pid: number; usedBytes: number | null }[] | null;
}
interface InfoJson {
  backend: string;
  nvml: { available: boolean; driverVersion: string | null; reason: string | null };
  devices: InfoDevice[];
}

function traced(extra: Record<string, string> = {}): { env: Record<string, string>; calls: () => string[] } {
  const trace = join(mkdtempSync(join(tmpdir(), "vramfit-trace-")), "trace");
  rmSync(trace, { force: true });
  const env = simulatedGpus(MACHINE, { VRAMFIT_NVML_LIBRARY: nvmlSimulator, CUDASIM_CONTEXT_BYTES: String(CONTEXT), CUDASIM_TRACE: trace, ...extra });
  return { env, calls: () => readFileSync(trace, "utf8").trim().split("\n") };
}

describe("vramfit info with NVML", () => {
  it("answers from NVML where it can, with no context; from CUDA (one context) where it cannot", async () => {
    const { env, calls } = traced();
    const run = await runJson<InfoJson>(["info"], env);
    expect(run.status).toBe(0);
    expect(run.json.nvml).toMatchObject({ available: true, driverVersion: "550.54.15", reason: null });
    const [h100, t4, orin] = run.json.devices;
    expect(h100).toMatchObject({
      ordinal: 0,
      name: "NVIDIA H100 80GB HBM3",
      totalBytes: H100,
      freeBytes: H100 - 3 * GiB, // no context of ours in it
      usedBytes: 3 * GiB,
      memorySource: "nvml",
      memorySourceReason: null,
      reservedBytes: 512 * MiB,
      processes: [{ pid: 4242, usedBytes: 3 * GiB }],
    });
    expect(t4).toMatchObject({ ordinal: 1, name: "Tesla T4", freeBytes: T4, memorySource: "nvml", processes: [] });
    // The integrated GPU: NVML answers NOT_SUPPORTED, so CUDA measures, and its context shows.
    expect(orin).toMatchObject({ ordinal: 2, memorySource: "cuda", freeBytes: ORIN - GiB - CONTEXT, reservedBytes: null, processes: null });
    expect(orin!.memorySourceReason).toBe("nvmlDeviceGetMemoryInfo_v2 failed: Not Supported (NVML_ERROR_NOT_SUPPORTED = 3)");
    expect(calls().filter((c) => c === "cuDevicePrimaryCtxRetain")).toHaveLength(1); // Orin's, only
  });

  it("creates no context at all when NVML answers for every visible device", async () => {
    const { env, calls } = traced({ CUDA_VISIBLE_DEVICES: "0,1" });
    const run = await runJson<InfoJson>(["info"], env);
    expect(run.json.devices.map((d) => d.memorySource)).toEqual(["nvml", "nvml"]);
    const seen = calls();
    expect(seen).not.toContain("cuDevicePrimaryCtxRetain");
    expect(seen).not.toContain("cuMemGetInfo_v2");
  });

  it("matches by UUID, not index, under CUDA_VISIBLE_DEVICES", async () => {
    const { env } = traced({ CUDA_VISIBLE_DEVICES: "1,0" });
    const run = await runJson<InfoJson>(["info"], env);
    // CUDA ordinal 0 is now the T4 (NVML index 0 as well, by chance); ordinal 1 the H100 (NVML index 1).
    expect(run.json.devices.map((d) => [d.ordinal, d.name, d.freeBytes])).toEqual([
      [0, "Tesla T4", T4],
      [1, "NVIDIA H100 80GB HBM3", H100 - 3 * GiB],
    ]);
    const { env: byOrder } = traced({ CUDA_VISIBLE_DEVICES: "0,1" });
    const natural = await runJson<InfoJson>(["info"], byOrder);
    // Here CUDA ordinal 0 is the H100, which NVML lists second: an index match would report the T4's memory.
    expect(natural.json.devices.map((d) => [d.name, d.freeBytes])).toEqual([
      ["NVIDIA H100 80GB HBM3", H100 - 3 * GiB],
      ["Tesla T4", T4],
    ]);
  });

  it("without NVML reads every device through CUDA and says why", async () => {
    const { env, calls } = traced({ VRAMFIT_NVML_LIBRARY: "/nonexistent/libnvidia-ml.so.1" });
    const run = await runJson<InfoJson>(["info"], env);
    expect(run.json.nvml).toMatchObject({ available: false });
    expect(run.json.nvml.reason).toMatch(/^NVML not found: \/nonexistent\/libnvidia-ml\.so\.1: cannot open shared object file/);
    expect(run.json.devices.map((d) => [d.memorySource, d.freeBytes])).toEqual([
      ["cuda", H100 - 3 * GiB - CONTEXT],
      ["cuda", T4 - CONTEXT],
      ["cuda", ORIN - GiB - CONTEXT],
    ]);
    expect(run.json.devices[0]!.memorySourceReason).toMatch(/^NVML not found/);
    expect(calls().filter((c) => c === "cuDevicePrimaryCtxRetain")).toHaveLength(3);
  });

  it("an NVML too old for vramfit (a missing function) is a clear reason, not a crash", async () => {
    const run = await runJson<InfoJson>(["info"], traced({ VRAMFIT_NVML_LIBRARY: "libm.so.6" }).env);
    expect(run.status).toBe(0);
    expect(run.json.nvml.reason).toBe("NVML libm.so.6 lacks nvmlInit_v2: it is too old for vramfit");
  });

  it("an NVML query that fails falls back to CUDA for that device, with NVML's error as the reason", async () => {
    const run = await runJson<InfoJson>(["info"], traced({ CUDASIM_FAIL: "nvmlDeviceGetMemoryInfo_v2:999:1" }).env);
    // NVML's order is T4 then H100: the T4's call passes, the H100's fails.
    expect(run.json.devices.map((d) => d.memorySource)).toEqual(["cuda", "nvml", "cuda"]);
    expect(run.json.devices[0]!.memorySourceReason).toBe("nvmlDeviceGetMemoryInfo_v2 failed: Unknown Error (NVML_ERROR_UNKNOWN = 999)");
  });

  it("prints a table with where each reading came from and who uses the GPU", async () => {
    const run = await runCli(["info"], traced().env);
    expect(run.stdout).toMatch(/^backend {2}cuda, driver 12\.4; NVML 550\.54\.15\n/);
    expect(run.stdout).toMatch(/NVIDIA H100 80GB HBM3 .* nvml +1: pid 4242 3 GiB\n/);
    const [reason, note, ...rest] = run.stderr.trimEnd().split("\n");
    expect(reason).toBe("device 2: memory read through CUDA (a context): nvmlDeviceGetMemoryInfo_v2 failed: Not Supported (NVML_ERROR_NOT_SUPPORTED = 3)");
    // The integrated Orin's budget is capped at MemAvailable, which info's free is not: said once.
    expect(note).toMatch(/^note: device 2 \(.*\) is integrated, its memory is system memory: batch and check never budget past the OS's MemAvailable/);
    expect(rest).toEqual([]);
  });
});

describe("vramfit check --need with NVML", () => {
  it("answers from NVML's free memory, charging the context the job will create: no probe, no context", async () => {
    const { env, calls } = traced({ CUDA_VISIBLE_DEVICES: "0" });
    // free 82,299,584,512 less the default reserve (5% of the total, 4,276,040,500) = 78,023,544,012 B;
    // the need is charged with the job's 512 MiB context: up to 72.16 GiB fits.
    const budget = H100 - 3 * GiB - 4276040500;
    const fits = await runJson<{ fits: boolean; budgetBytes: number; needBytes: number; probes: number; memorySource: string; source: string }>(["check", "--need", "72GiB"], env);
    expect(fits.status).toBe(0);
    expect(fits.json).toMatchObject({ fits: true, budgetBytes: budget, needBytes: 72 * GiB + 512 * MiB, probes: 0, memorySource: "nvml", source: "device" });
    const no = await runJson<{ fits: boolean }>(["check", "--need", "72.2GiB"], env);
    expect(no.status).toBe(1);
    expect(calls()).not.toContain("cuDevicePrimaryCtxRetain");
    expect(calls()).not.toContain("cuMemAlloc_v2");
  });

  it("a workload at --batch N is still probed (through CUDA)", async () => {
    const { env, calls } = traced({ CUDA_VISIBLE_DEVICES: "1" });
    const run = await runJson<{ fits: boolean; probes: number; memorySource: string }>(["check", "--params", "1e8", "--per-sample", "1GiB", "--batch", "1"], env);
    expect(run.json).toMatchObject({ fits: true, probes: 1, memorySource: "cuda" });
    expect(calls()).toContain("cuMemAlloc_v2");
  });
});

describe("vramfit batch on a busy GPU", () => {
  const WORKLOAD = ["batch", "--params", "1e9", "--per-sample", "1GiB", "--json"];

  it("warns on stderr when other processes hold memory on the device", async () => {
    const run = await runCli(WORKLOAD, traced({ CUDA_VISIBLE_DEVICES: "0" }).env);
    expect(run.status).toBe(0);
    expect(run.stderr).toBe(
      "warning: device 0 (NVIDIA H100 80GB HBM3) is in use by 1 other process holding 3 GiB (pid 4242 3 GiB); the answer is for the memory free now, and every probe leaves 5% of the total (--reserve) free for them\n",
    );
  });

  it("--device all: the busy device's warning under its own ordinal, once; nothing for the idle one", async () => {
    const { env } = traced({ CUDA_VISIBLE_DEVICES: "1,0" });
    const run = await runCli([...WORKLOAD, "--device", "all"], env);
    expect(run.stderr).toBe(
      "warning: device 1 (NVIDIA H100 80GB HBM3) is in use by 1 other process holding 3 GiB (pid 4242 3 GiB); the answer is for the memory free now, and every probe leaves 5% of the total (--reserve) free for them\n",
    );
  });

  it("says nothing when the device is idle", async () => {
    const run = await runCli(WORKLOAD, traced({ CUDA_VISIBLE_DEVICES: "1" }).env);
    expect(run.stderr).toBe("");
  });
});

describe("--analytic on a machine with a GPU", () => {
  const SEVEN_B = ["batch", "--params", "7e9", "--per-sample", "1GiB", "--precision", "fp32", "--optimizer", "sgd", "--analytic"];

  it("reads NVML's free memory without a context, labels it, and answers as the probes would", async () => {
    const { env, calls } = traced({ CUDA_VISIBLE_DEVICES: "0" });
    const run = await runJson<{ batchSize: number; budgetBytes: number; memorySource: string; reason: string; probes: number; device: { freeBytes: number } }>(SEVEN_B, env);
    // free 82,299,584,512 (3 GiB are another process's), not the 85,520,809,984 total; less the
    // default reserve, 56,002,347,008 B of segments and the 512 MiB context: 20 (the total gave 23).
    expect(run.json).toMatchObject({ batchSize: 20, memorySource: "nvml", probes: 0, device: { freeBytes: H100 - 3 * GiB } });
    expect(run.json.reason).toBe("--analytic: free memory read through NVML (no CUDA context), not probed");
    expect(calls()).not.toContain("cuDevicePrimaryCtxRetain");
    const probed = await runJson<{ batchSize: number }>(SEVEN_B.filter((a) => a !== "--analytic"), env);
    expect(probed.json.batchSize).toBe(20);
  });

  it("uses the total only when NVML cannot read the device (an integrated GPU), and says so", async () => {
    const { env, calls } = traced({ CUDA_VISIBLE_DEVICES: "2" });
    const run = await runJson<{ memorySource: string; reason: string; device: { freeBytes: number; totalBytes: number } }>(["batch", "--params", "1e8", "--per-sample", "256MiB", "--analytic"], env);
    expect(run.json.memorySource).toBe("total");
    expect(run.json.device.freeBytes).toBe(run.json.device.totalBytes);
    expect(run.json.reason).toMatch(/^--analytic: the device's total memory \(NVML cannot read its free memory: nvmlDeviceGetMemoryInfo_v2 failed: Not Supported/);
    expect(calls()).not.toContain("cuDevicePrimaryCtxRetain");
  });
});
