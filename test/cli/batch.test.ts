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
  elapsedMs: number;
}

describe("vramfit batch on a simulated H100 with 3 GiB used by another process", () => {
  it("measures on the device and finds the exact largest batch in at most 3 probes", async () => {
    const run = await runJson<BatchJson>(SEVEN_B_FP32_SGD, simulatedGpus(H100_3GIB_USED));
    expect(run.status).toBe(0);
    const r = run.json;
    // By hand: free = 85,520,809,984 − 3,221,225,472 = 82,299,584,512 B. Weights and gradients are
    // 28e9 B each, which the driver rounds up to 13,352 pages of 2 MiB = 28,001,173,504 B; together
    // 56,002,347,008 B. Left: 26,297,237,504 B = 24.49 GiB, so 24 samples of 1 GiB, and 25 do not fit.
    expect(r.source).toBe("device");
    expect(r.batchSize).toBe(24);
    // One probe: 24 is probed and fits; 25 is over the budget, refused before touching the device.
    expect(r.probes).toBe(1);
    expect(r.device).toMatchObject({ ordinal: 0, name: "NVIDIA H100 80GB HBM3", totalBytes: 85520809984, freeBytes: 82299584512 });
    expect(r.device.uuid).toMatch(/^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(r.budgetBytes).toBe(82299584512);
    expect(r.bytesAtBatch).toBe(56002347008 + 24 * GiB);
    expect(r.fixedBytes).toBe(56e9);
    expect(r.perSampleBytes).toBe(GiB);
    expect(r.elapsedMs).toBeGreaterThan(0);
  });

  it("corrects a wrong prediction with probes: a 1 GiB allocation granularity costs 2 samples", async () => {
    // With 1 GiB pages, each 28e9 B tensor takes 27 GiB: 54 GiB in all, leaving 22.65 GiB → 22.
    // The model assumes 2 MiB pages and predicts 24; the probes at 24 and 23 fail and 22 fits.
    const run = await runJson<BatchJson>(SEVEN_B_FP32_SGD, simulatedGpus(H100_3GIB_USED, { CUDASIM_GRANULARITY: String(GiB) }));
    expect(run.json.batchSize).toBe(22);
    expect(run.json.probes).toBe(3);
  });

  it("honours --reserve, --max-mem and --max-batch", async () => {
    const env = simulatedGpus(H100_3GIB_USED);
    const reserved = await runJson<BatchJson>([...SEVEN_B_FP32_SGD, "--reserve", "4GiB"], env);
    expect(reserved.json.budgetBytes).toBe(82299584512 - 4 * GiB);
    expect(reserved.json.batchSize).toBe(20); // 26,297,237,504 − 4 GiB = 20.49 GiB
    const capped = await runJson<BatchJson>([...SEVEN_B_FP32_SGD, "--max-mem", "60GiB"], env);
    expect(capped.json.budgetBytes).toBe(60 * GiB);
    expect(capped.json.batchSize).toBe(7); // 60 GiB − 52.16 GiB = 7.84 GiB
    const limited = await runJson<BatchJson>([...SEVEN_B_FP32_SGD, "--max-batch", "10"], env);
    expect(limited.json.batchSize).toBe(10);
  });

  it("exits 1 with batchSize 0 when even batch 1 does not fit", async () => {
    const run = await runJson<BatchJson>(["batch", "--params", "20e9", "--per-sample", "1GiB", "--precision", "fp32", "--optimizer", "sgd"], simulatedGpus(H100_3GIB_USED));
    expect(run.status).toBe(1);
    expect(run.json.batchSize).toBe(0);
    expect(run.json.probes).toBe(0); // refused by the budget before touching the device
    const human = await runCli(["batch", "--params", "20e9", "--per-sample", "1GiB", "--precision", "fp32"], simulatedGpus(H100_3GIB_USED));
    expect(human.status).toBe(1);
    expect(human.stdout).toContain("does not fit");
  });

  it("--device all answers for every device, each with its own free memory", async () => {
    const env = simulatedGpus(`${H100_3GIB_USED};NVIDIA H100 80GB HBM3:85520809984:0`);
    const run = await runJson<BatchJson[]>([...SEVEN_B_FP32_SGD, "--device", "all"], env);
    expect(run.json.map((r) => [r.device.ordinal, r.batchSize])).toEqual([
      [0, 24],
      [1, 27], // 85,520,809,984 − 56,002,347,008 = 27.49 GiB
    ]);
    expect(run.json[0]!.device.uuid).not.toBe(run.json[1]!.device.uuid);
  });

  it("--analytic uses the device's total memory without probing", async () => {
    const run = await runJson<BatchJson>([...SEVEN_B_FP32_SGD, "--analytic"], simulatedGpus(H100_3GIB_USED));
    expect(run.json.source).toBe("analytic");
    expect(run.json.probes).toBe(0);
    // total 85,520,809,984 − 512 MiB assumed context − 56,002,347,008 = 26.55 GiB → 26
    expect(run.json.batchSize).toBe(26);
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
    // H100-80GB (catalog: 85,045,477,376 B) − 512 MiB context − 56,002,347,008 = 26.55 GiB → 26
    expect(run.json[3]!.batchSize).toBe(26);
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
    expect(run.json.batchSize).toBe(26);
  });
});
