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

describe("vramfit check", () => {
  it("--need below the free memory fits (exit 0), above does not (exit 1)", async () => {
    const yes = await runJson<CheckJson>(["check", "--need", "37GiB"], ONE_GPU);
    expect(yes.status).toBe(0);
    expect(yes.json).toMatchObject({ fits: true, needBytes: 37 * GiB, budgetBytes: 40357789696, source: "device" });
    const no = await runJson<CheckJson>(["check", "--need", "38GiB"], ONE_GPU);
    expect(no.status).toBe(1);
    expect(no.json.fits).toBe(false);
  });

  it("a workload at --batch N is probed on the device", async () => {
    // 1e9 params × 16 B (amp + adamw) = 16e9 B → 7,631 pages = 16,003,366,912 B with rounding of each of
    // the three tensors (2e9 → 954 pages, 2e9 → 954, 12e9 → 5,723); + N × 1 GiB.
    const args = ["check", "--params", "1e9", "--per-sample", "1GiB", "--precision", "amp", "--optimizer", "adamw"];
    const fits = await runJson<CheckJson>([...args, "--batch", "22"], ONE_GPU);
    expect(fits.json.fits).toBe(true);
    expect(fits.json.needBytes).toBe((954 + 954 + 5723) * 2 * 2 ** 20 + 22 * GiB);
    const tooBig = await runJson<CheckJson>([...args, "--batch", "23"], ONE_GPU);
    expect(tooBig.json.fits).toBe(false);
    expect(tooBig.status).toBe(1);
  });

  it("prints one human line", async () => {
    const run = await runCli(["check", "--need", "10GiB"], ONE_GPU);
    expect(run.stdout.trim()).toBe("fits: needs 10 GiB of a 37.59 GiB budget on device 0 (NVIDIA A100-SXM4-40GB) [device]");
  });

  it("with no GPU and no target, exits 3 with the reason", async () => {
    const run = await runCli(["check", "--need", "1GiB"], NO_DRIVER);
    expect(run.status).toBe(3);
    expect(run.stderr).toMatch(/no usable GPU: driver not found.*name a target with --gpu or --memory/);
  });

  it("answers analytically for --gpu and --memory", async () => {
    const onGpu = await runJson<CheckJson>(["check", "--need", "79.5GiB", "--gpu", "H100-80GB"], NO_DRIVER);
    expect(onGpu.json).toMatchObject({ fits: false, source: "analytic" }); // 79.5 GiB + 0.5 GiB context > the catalog H100-80GB total of 79.20 GiB
    const raw = await runJson<CheckJson>(["check", "--need", "79.5GiB", "--memory", "80GiB"], NO_DRIVER);
    expect(raw.json.fits).toBe(true);
    expect(raw.status).toBe(0);
  });
});
