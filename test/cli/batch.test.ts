// `vramfit batch` end to end: the seeded device search on the simulator, and the analytic fallback.
import { describe, expect, it } from "vitest";
import { NO_DRIVER, runCli, runJson, simulatedGpus } from "./runCli.js";

const GiB = 2 ** 30;
const H100_3GIB_USED = "NVIDIA H100 80GB HBM3:85520809984:3221225472";
const SEVEN_B_FP32_SGD = ["batch", "--params", "7e9", "--per-sample", "1GiB", "--precision", "fp32", "--optimizer", "sgd"];

interface BatchJson {
  batchSize: number;
  source: string;
  reason?: string;
  device: { ordinal: number | null; name: string; uuid: string | null; totalBytes: number; freeBytes: number; id?: string };
  budgetBytes: number;
  bytesAtBatch: number;
  fixedBytes: number;
  perSampleBytes: number;
  probes: number;
  predictedBatchSize: number;
  reserveBytes: number;
  elapsedMs: number;
}

describe("vramfit batch on a simulated H100 with 3 GiB used by another process", () => {
  // By hand, throughout: free = 85,520,809,984 − 3,221,225,472 = 82,299,584,512 B. Weights and
  // gradients are 28e9 B each, a segment of their own rounded up to 2 MiB: 28,001,173,504 B, together
  // 56,002,347,008 B. The job's context is 512 MiB (536,870,912 B): vramfit's own costs nothing on
  // this simulator and NVML is not loaded, so all of it is charged. The default reserve is 5% of the
  // total: ⌈85,520,809,984 × 0.05⌉ = 4,276,040,500 B.
  const segments = 56002347008;
  const context = 536870912;

  it("measures on the device: the model's answer and the next batch probed, the next refused at the reserve", async () => {
    const run = await runJson<BatchJson>(SEVEN_B_FP32_SGD, simulatedGpus(H100_3GIB_USED));
    expect(run.status).toBe(0);
    const r = run.json;
    // budget = 82,299,584,512 − 4,276,040,500 = 78,023,544,012; less segments and context:
    // 21,484,326,092 B = 20.008 GiB → 20 samples of 1 GiB; 21 would take free memory below the reserve.
    expect(r.source).toBe("device");
    expect(r.batchSize).toBe(20);
    expect(r.predictedBatchSize).toBe(20);
    expect(r.probes).toBe(2); // 20 fits, 21 is refused by the addon at the reserve
    expect(r.device).toMatchObject({ ordinal: 0, name: "NVIDIA H100 80GB HBM3", totalBytes: 85520809984, freeBytes: 82299584512 });
    expect(r.device.uuid).toMatch(/^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(r.reserveBytes).toBe(4276040500);
    expect(r.budgetBytes).toBe(78023544012);
    expect(r.bytesAtBatch).toBe(segments + 20 * GiB + context);
    expect(r.fixedBytes).toBe(56e9);
    expect(r.perSampleBytes).toBe(GiB);
    expect(r.elapsedMs).toBeGreaterThan(0);
  });

  it("corrects a wrong prediction with probes: a 1 GiB allocation granularity costs 2 samples", async () => {
    // No reserve, no job context: each 28e9 B segment takes 27 GiB of 1 GiB pages, 54 GiB in all,
    // leaving 22.65 GiB → 22. The model assumes 2 MiB pages and predicts 24; 24 and 23 fail, 22 fits.
    const args = [...SEVEN_B_FP32_SGD, "--reserve", "0", "--job-context", "0"];
    const run = await runJson<BatchJson>(args, simulatedGpus(H100_3GIB_USED, { CUDASIM_GRANULARITY: String(GiB) }));
    expect(run.json.batchSize).toBe(22);
    expect(run.json.probes).toBe(3);
  });

  it("honours --reserve, --max-mem and --max-batch", async () => {
    const env = simulatedGpus(H100_3GIB_USED);
    const reserved = await runJson<BatchJson>([...SEVEN_B_FP32_SGD, "--reserve", "4GiB"], env);
    expect(reserved.json.budgetBytes).toBe(82299584512 - 4 * GiB);
    expect(reserved.json.batchSize).toBe(19); // 78,004,617,216 − segments − context = 19.99 GiB
    const percent = await runJson<BatchJson>([...SEVEN_B_FP32_SGD, "--reserve", "10%"], env);
    expect(percent.json.reserveBytes).toBe(8552080999); // ⌈85,520,809,984 × 0.1⌉
    expect(percent.json.batchSize).toBe(16); // 82,299,584,512 − 8,552,080,999 − segments − context = 16.02 GiB
    const capped = await runJson<BatchJson>([...SEVEN_B_FP32_SGD, "--max-mem", "60GiB"], env);
    expect(capped.json.budgetBytes).toBe(60 * GiB);
    expect(capped.json.batchSize).toBe(7); // 60 GiB − 52.16 GiB − 0.5 GiB = 7.34 GiB; 8 is refused at --max-mem
    const limited = await runJson<BatchJson>([...SEVEN_B_FP32_SGD, "--max-batch", "10"], env);
    expect(limited.json.batchSize).toBe(10);
  });

  it("--reserve 0 and --job-context 0 give the whole free memory to the tensors, as before there was a context model", async () => {
    const run = await runJson<BatchJson>([...SEVEN_B_FP32_SGD, "--reserve", "0", "--job-context", "0"], simulatedGpus(H100_3GIB_USED));
    expect(run.json.batchSize).toBe(24); // 82,299,584,512 − 56,002,347,008 = 24.49 GiB
    expect(run.json.budgetBytes).toBe(82299584512);
  });

  it("exits 1 with batchSize 0 when even batch 1 does not fit", async () => {
    const run = await runJson<BatchJson>(["batch", "--params", "20e9", "--per-sample", "1GiB", "--precision", "fp32", "--optimizer", "sgd"], simulatedGpus(H100_3GIB_USED));
    expect(run.status).toBe(1);
    expect(run.json.batchSize).toBe(0);
    expect(run.json.probes).toBe(1); // batch 1 is probed: the addon refuses the segment that would cross the reserve
    const human = await runCli(["batch", "--params", "20e9", "--per-sample", "1GiB", "--precision", "fp32"], simulatedGpus(H100_3GIB_USED));
    expect(human.status).toBe(1);
    expect(human.stdout).toContain("does not fit");
  });

  it("--device all answers for every device, each with its own free memory", async () => {
    const env = simulatedGpus(`${H100_3GIB_USED};NVIDIA H100 80GB HBM3:85520809984:0`);
    const run = await runJson<BatchJson[]>([...SEVEN_B_FP32_SGD, "--device", "all"], env);
    expect(run.json.map((r) => [r.device.ordinal, r.batchSize])).toEqual([
      [0, 20],
      [1, 23], // 85,520,809,984 − 4,276,040,500 − segments − context = 23.01 GiB
    ]);
    expect(run.json[0]!.device.uuid).not.toBe(run.json[1]!.device.uuid);
  });

  it("--analytic without NVML: the device's total memory, labelled, without probing or a context", async () => {
    const run = await runJson<BatchJson & { memorySource: string }>([...SEVEN_B_FP32_SGD, "--analytic"], simulatedGpus(H100_3GIB_USED));
    expect(run.json.source).toBe("analytic");
    expect(run.json.probes).toBe(0);
    expect(run.json.memorySource).toBe("total");
    expect(run.json.reason).toMatch(/^--analytic: the device's total memory \(NVML cannot read its free memory: /);
    // total 85,520,809,984 − 4,276,040,500 − segments − context = 23.01 GiB → 23
    expect(run.json.batchSize).toBe(23);
  });
});

describe("vramfit batch with no GPU", () => {
  it("falls back to the analytic model for common GPUs and says why", async () => {
    const run = await runJson<BatchJson[]>(SEVEN_B_FP32_SGD, NO_DRIVER);
    expect(run.status).toBe(1); // 7B fp32 cannot train on an RTX 4090 or an A100 40GB
    expect(run.json.map((r) => r.device.id)).toEqual(["RTX-4090", "A100-40GB", "A100-80GB", "H100-80GB"]);
    for (const r of run.json) {
      expect(r.source).toBe("analytic");
      expect(r.reason).toMatch(/^no usable GPU: driver not found: .*\/nonexistent\/libcuda\.so\.1/);
    }
    // H100-80GB (catalog: 85,045,477,376 B) − 5% (4,252,273,869) − 512 MiB context − 56,002,347,008 = 22.59 GiB → 22
    expect(run.json[3]!.batchSize).toBe(22);
  });

  it("prints the reason on stderr and a table on stdout", async () => {
    const run = await runCli(["batch", "--params", "350e6", "--per-sample", "256MiB"], NO_DRIVER);
    expect(run.status).toBe(0);
    expect(run.stderr).toMatch(/no usable GPU: driver not found/);
    expect(run.stdout).toMatch(/^workload .*assumed --mode train --precision amp --optimizer adamw/);
    expect(run.stdout).toMatch(/H100-80GB\s+analytic\s+79\.20 GiB/);
  });

  it("says when the driver sees no device", async () => {
    const run = await runJson<BatchJson[]>(SEVEN_B_FP32_SGD, simulatedGpus(""));
    expect(run.json[0]!.reason).toMatch(/no CUDA-capable device is detected/);
  });

  it("--require-gpu exits 3 instead of falling back", async () => {
    const run = await runCli([...SEVEN_B_FP32_SGD, "--require-gpu"], NO_DRIVER);
    expect(run.status).toBe(3);
    expect(run.stderr.trim()).toMatch(/^vramfit: no usable GPU: driver not found/);
  });

  it("--gpu answers for one catalog GPU, case-insensitively", async () => {
    const run = await runJson<BatchJson>([...SEVEN_B_FP32_SGD, "--gpu", "h100-80gb"], NO_DRIVER);
    expect(run.json.device.id).toBe("H100-80GB");
    expect(run.json.batchSize).toBe(22);
  });
});

describe("a device that packs better than the model: the answer rises, found by probing upward", () => {
  // ResNet-152 at 32² on a 2 GiB device whose driver rounds allocations to 512 B, not 2 MiB.
  const RESNET = ["batch", "--model", "resnet152", "--image", "32"];
  const SMALL_PAGES = simulatedGpus("NVIDIA GeForce 2GiB:2147483648:0", { CUDASIM_GRANULARITY: "512" });

  it("with one cuMemAlloc per tensor the model (2 MiB a tensor) says 0; the device's probes climb to the real answer", async () => {
    const analytic = await runJson<BatchJson>([...RESNET, "--allocator", "raw", "--memory", "2GiB"]);
    const device = await runJson<BatchJson & { predictedBatchSize: number }>([...RESNET, "--allocator", "raw"], SMALL_PAGES);
    // Hundreds of small tensors at 2 MiB each take more than the 2 GiB: the model's answer is 0.
    expect(analytic.json.batchSize).toBe(0);
    expect(device.json.predictedBatchSize).toBe(0);
    // The device packs them at 512 B: the search gallops up from the seed (1, 2, 3, 5, 9, …) and bisects.
    expect(device.json.batchSize).toBeGreaterThan(200);
    expect(device.json.probes).toBeGreaterThan(10);
  });

  it("with PyTorch's allocator (the default) the model already packs small tensors into 2 MiB segments", async () => {
    const device = await runJson<BatchJson & { predictedBatchSize: number }>(RESNET, SMALL_PAGES);
    const raw = await runJson<BatchJson>([...RESNET, "--allocator", "raw", "--memory", "2GiB"]);
    expect(device.json.batchSize).toBeGreaterThan(raw.json.batchSize);
    expect(device.json.batchSize).toBe(device.json.predictedBatchSize); // segments are 2 MiB multiples: the model is exact here
    expect(device.json.probes).toBe(2);
  });
});
