// Which GPU, and why none (issue 13, item 9): --device takes a UUID as nvidia-smi -L prints it; a
// fallback names CUDA_VISIBLE_DEVICES or a failing cuInit as its reason; an integrated GPU says
// why its budget is below the free memory `vramfit info` shows.
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { root, runCli, runJson, simulatedGpus } from "./runCli.js";

const GiB = 2 ** 30;
const TWO_GPUS = simulatedGpus("NVIDIA H100 80GB HBM3:85520809984:3221225472;NVIDIA L4:23580639232");
const RAW = ["--params", "1e8", "--per-sample", "256MiB"];

describe("--device UUID", () => {
  it("selects the device with that UUID (GPU-…), in any case", async () => {
    const info = await runJson<{ devices: { ordinal: number; uuid: string; name: string }[] }>(["info"], TWO_GPUS);
    const l4 = info.json.devices.find((d) => d.name === "NVIDIA L4")!;
    const run = await runJson<{ device: { ordinal: number; uuid: string } }>(["batch", ...RAW, "--device", l4.uuid.toUpperCase()], TWO_GPUS);
    expect(run.status).toBe(0);
    expect(run.json.device).toMatchObject({ ordinal: l4.ordinal, uuid: l4.uuid });
    const check = await runJson<{ device: { uuid: string } }>(["check", ...RAW, "--batch", "1", "--device", l4.uuid], TWO_GPUS);
    expect(check.json.device.uuid).toBe(l4.uuid);
  });

  it("takes a UUID's first characters, as CUDA_VISIBLE_DEVICES does, when they name one device (issue 25, item 10)", async () => {
    const info = await runJson<{ devices: { ordinal: number; uuid: string; name: string }[] }>(["info"], TWO_GPUS);
    const l4 = info.json.devices.find((d) => d.name === "NVIDIA L4")!;
    const prefix = l4.uuid.slice(0, 8); // "GPU-" and four hex digits
    const run = await runJson<{ device: { ordinal: number; uuid: string } }>(["batch", ...RAW, "--device", prefix.toLowerCase()], TWO_GPUS);
    expect(run.status, run.stderr).toBe(0);
    expect(run.json.device).toMatchObject({ ordinal: l4.ordinal, uuid: l4.uuid });
    const both = await runCli(["batch", ...RAW, "--device", "GPU-"], TWO_GPUS);
    expect(both.stderr).toMatch(/^vramfit: --device: expected a CUDA device ordinal \(0, 1, …\) or a UUID or its first characters/);
  });

  it("a UUID no visible device has is one line, exit 2", async () => {
    const run = await runCli(["batch", ...RAW, "--device", "GPU-00000000-0000-0000-0000-000000000000"], TWO_GPUS);
    expect(run.status).toBe(2);
    expect(run.stderr).toBe("vramfit: --device: expected the UUID of a visible device (nvidia-smi -L lists them) (this machine has 2 visible devices), got GPU-00000000-0000-0000-0000-000000000000\n");
  });
});

describe("the reason for falling back names what to change", () => {
  it('CUDA_VISIBLE_DEVICES="" (it hides every GPU)', async () => {
    const env = { ...TWO_GPUS, CUDA_VISIBLE_DEVICES: "" };
    const info = await runJson<{ backend: string; reason: string }>(["info"], env);
    expect(info.json).toMatchObject({ backend: "none" });
    expect(info.json.reason).toMatch(/CUDA_ERROR_NO_DEVICE = 100\); CUDA_VISIBLE_DEVICES is set and empty, which hides every GPU$/);
    const batch = await runCli(["batch", ...RAW], env);
    expect(batch.stderr).toMatch(/^no usable GPU: .*CUDA_VISIBLE_DEVICES is set and empty, which hides every GPU\n/);
    const unmatched = await runCli(["check", ...RAW, "--batch", "1"], { ...TWO_GPUS, CUDA_VISIBLE_DEVICES: "7" });
    expect(unmatched.status).toBe(3);
    expect(unmatched.stderr).toMatch(/CUDA_VISIBLE_DEVICES="7" names no GPU the driver has/);
  });

  it("a driver whose cuInit fails", async () => {
    const run = await runCli(["batch", ...RAW], { ...TWO_GPUS, CUDASIM_FAIL: "cuInit:999" });
    expect(run.status).toBe(0);
    expect(run.stderr).toMatch(/^no usable GPU: cuInit failed: unknown error \(CUDA_ERROR_UNKNOWN = 999\)\n/);
  });
});

describe("an integrated GPU's budget", () => {
  it("says why it is below the driver's free memory, in batch, check and info", async () => {
    const env = simulatedGpus(`Jetson AGX Orin:${32 * GiB}:${GiB}:integrated=1`, { VRAMFIT_PROC_MEMINFO: resolve(root, "test", "fixtures", "meminfo", "8GiB-available.txt") });
    const note = "note: device 0 (Jetson AGX Orin) is integrated, its memory is system memory: batch and check never budget past the OS's MemAvailable, 8 GiB now (/proc/meminfo), which the driver's free memory in `vramfit info` does not take into account";
    expect((await runCli(["batch", ...RAW], env)).stderr).toContain(`${note}\n`);
    expect((await runCli(["check", ...RAW, "--batch", "1"], env)).stderr).toContain(`${note}\n`);
    expect((await runCli(["info"], env)).stderr).toContain(`${note}\n`);
    // A discrete GPU gets no note.
    expect((await runCli(["batch", ...RAW], TWO_GPUS)).stderr).not.toContain("note:");
  });
});
