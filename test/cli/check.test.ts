// `vramfit check`: exit 0 when it fits, 1 when it does not, 3 when there is nothing to check on.
import { describe, expect, it } from "vitest";
import { NO_DRIVER, runCli, runJson, simulatedGpus } from "./runCli.js";

const GiB = 2 ** 30;
const ONE_GPU = simulatedGpus("NVIDIA A100-SXM4-40GB:42505273344:2147483648");
// free = 42,505,273,344 − 2 GiB = 40,357,789,696 B = 37.59 GiB

interface CheckJson {
  fits: boolean;
  needBytes: number;
  budgetBytes: number;
  source: string;
  device: { ordinal: number | null; name: string };
}

// The default reserve is 5% of the total, ⌈42,505,273,344 × 0.05⌉ = 2,125,263,668 B, so the budget
// is 40,357,789,696 − 2,125,263,668 = 38,232,526,028 B (35.61 GiB); the job's 512 MiB context is
// charged on top of what it checks (NVML is not loaded, vramfit's own context costs nothing here).
const BUDGET = 38232526028;
const CONTEXT = 512 * 2 ** 20;

describe("vramfit check", () => {
  it("--need below the budget less the job's context fits (exit 0), above does not (exit 1)", async () => {
    // 35 GiB + 0.5 GiB ≤ 35.61 GiB; 36 GiB + 0.5 GiB is not.
    const yes = await runJson<CheckJson>(["check", "--need", "35GiB"], ONE_GPU);
    expect(yes.status).toBe(0);
    expect(yes.json).toMatchObject({ fits: true, needBytes: 35 * GiB + CONTEXT, budgetBytes: BUDGET, source: "device" });
    const no = await runJson<CheckJson>(["check", "--need", "36GiB"], ONE_GPU);
    expect(no.status).toBe(1);
    expect(no.json.fits).toBe(false);
  });

  it("a workload at --batch N is probed on the device", async () => {
    // 1e9 params × 16 B (amp + adamw) in three tensors, each its own segment rounded to 2 MiB
    // (2e9 → 954 pages, 2e9 → 954, 12e9 → 5,723): 16,003,366,912 B; + N × 1 GiB + the context.
    // 38,232,526,028 − 16,003,366,912 − 536,870,912 = 20.20 GiB → 20 fits, 21 does not.
    const args = ["check", "--params", "1e9", "--per-sample", "1GiB", "--precision", "amp", "--optimizer", "adamw"];
    const fits = await runJson<CheckJson>([...args, "--batch", "20"], ONE_GPU);
    expect(fits.json.fits).toBe(true);
    expect(fits.json.needBytes).toBe((954 + 954 + 5723) * 2 * 2 ** 20 + 20 * GiB + CONTEXT);
    const tooBig = await runJson<CheckJson & { limit: string }>([...args, "--batch", "21"], ONE_GPU);
    expect(tooBig.json.fits).toBe(false);
    expect(tooBig.json.limit).toBe("reserve"); // the addon refused the allocation that would cross the floor
    expect(tooBig.status).toBe(1);
  });

  it("prints one human line", async () => {
    const run = await runCli(["check", "--need", "10GiB"], ONE_GPU);
    expect(run.stdout.trim()).toBe("fits: needs 10.50 GiB of a 35.61 GiB budget on device 0 (NVIDIA A100-SXM4-40GB) [device]");
  });

  it("with no GPU and no target, exits 3 with the reason", async () => {
    const run = await runCli(["check", "--need", "1GiB"], NO_DRIVER);
    expect(run.status).toBe(3);
    expect(run.stderr).toMatch(/no usable GPU: driver not found.*name a target with --gpu or --memory/);
  });

  it("answers analytically for --gpu and --memory, charging both the same way", async () => {
    // 75 GiB + 0.5 GiB context: more than 95% of the catalog H100-80GB's 79.20 GiB (75.24 GiB),
    // less than 95% of an 80 GiB --memory (76 GiB).
    const onGpu = await runJson<CheckJson>(["check", "--need", "75GiB", "--gpu", "H100-80GB"], NO_DRIVER);
    expect(onGpu.json).toMatchObject({ fits: false, source: "analytic" });
    const raw = await runJson<CheckJson>(["check", "--need", "75GiB", "--memory", "80GiB"], NO_DRIVER);
    expect(raw.json).toMatchObject({ fits: true, needBytes: 75 * GiB + CONTEXT, budgetBytes: 76 * GiB });
    expect(raw.status).toBe(0);
  });
});

describe("a no that reads as a no (issue 25, item 10)", () => {
  it("a need a few KiB over the budget shows the digits that tell them apart; an equal one stays at two", async () => {
    const memory = 22456 * 2 ** 20; // 21.93 GiB; the need is rounded up to a 2 MiB page, 21.932 GiB
    const context = 512 * 2 ** 20;
    const over = await runCli(["check", "--need", String(memory - context + 1000), "--memory", String(memory), "--reserve", "0"]);
    expect(over.status).toBe(1);
    expect(over.stdout).toBe("does not fit: needs 21.932 GiB of a 21.930 GiB budget on memory budget [analytic]\n");
    const equal = await runCli(["check", "--need", String(memory - context), "--memory", String(memory), "--reserve", "0"]);
    expect(equal.stdout).toBe("fits: needs 21.93 GiB of a 21.93 GiB budget on memory budget [analytic]\n");
  });
});

describe("every answer says why it is analytic, or that it is not (issue 25, item 10)", () => {
  it("reason is null on the device and a sentence for a catalog GPU, in batch, check and --solve seq alike", async () => {
    const env = simulatedGpus("NVIDIA H100 80GB HBM3:85520809984:3221225472");
    for (const args of [["batch", "--params", "1e9", "--per-sample", "1GiB"], ["check", "--params", "1e9", "--per-sample", "1GiB", "--batch", "2"], ["batch", "--model", "gpt2", "--solve", "seq", "--batch", "1"]]) {
      const device = await runJson<{ source: string; reason: unknown }>(args, env);
      expect(device.json, args.join(" ")).toMatchObject({ source: "device", reason: null });
      const catalog = await runJson<{ source: string; reason: unknown }>([...args, "--gpu", "A100-80GB"], env);
      expect(catalog.json, args.join(" ")).toMatchObject({ source: "analytic", reason: "analytic target (--gpu)" });
    }
  });
});
