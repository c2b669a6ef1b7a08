// `vramfit info`: the backend, the driver version and each device's memory, or why there is none.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { NO_DRIVER, nvmlSimulator, runCli, runJson, simulatedGpus } from "./runCli.js";

interface InfoJson {
  backend: string;
  reason: string | null;
  driverVersion: string | null;
  devices: { ordinal: number; name: string; uuid: string; totalBytes: number; freeBytes: number; usedBytes: number }[];
}

describe("vramfit info", () => {
  it("lists every simulated device with free and used bytes", async () => {
    const env = simulatedGpus("NVIDIA H100 80GB HBM3:85520809984:3221225472;Tesla T4:15843721216", { CUDASIM_DRIVER_VERSION: "12080" });
    const run = await runJson<InfoJson>(["info"], env);
    expect(run.status).toBe(0);
    expect(run.json.backend).toBe("cuda");
    expect(run.json.driverVersion).toBe("12.8");
    expect(run.json.devices.map((d) => [d.ordinal, d.name, d.totalBytes, d.freeBytes, d.usedBytes])).toEqual([
      [0, "NVIDIA H100 80GB HBM3", 85520809984, 85520809984 - 3221225472, 3221225472],
      [1, "Tesla T4", 15843721216, 15843721216, 0],
    ]);
  });

  it("two simulated machines (two CUDASIM_STATE files) have GPUs of their own UUIDs, so they do not lock each other; one file, one UUID", async () => {
    const dir = mkdtempSync(join(tmpdir(), "vramfit-machines-"));
    const uuid = async (state: string) => (await runJson<InfoJson>(["info"], simulatedGpus("NVIDIA L4:24000000000", { CUDASIM_STATE: join(dir, state) }))).json.devices[0]!.uuid;
    const [a, b, again] = [await uuid("a"), await uuid("b"), await uuid("a")];
    expect(a).toMatch(/^GPU-[0-9a-f]{8}-/);
    expect(b).not.toBe(a);
    expect(again).toBe(a);
  });

  it("reports backend none with the loader's reason", async () => {
    const run = await runJson<InfoJson>(["info"], NO_DRIVER);
    expect(run.json).toMatchObject({ backend: "none", driverVersion: null, devices: [] });
    expect(run.json.reason).toMatch(/^driver not found: \/nonexistent\/libcuda\.so\.1: cannot open shared object file/);
  });

  it("--require-gpu exits 3 when there is none", async () => {
    const run = await runCli(["info", "--require-gpu"], NO_DRIVER);
    expect(run.status).toBe(3);
  });
});

describe("vramfit gpus", () => {
  it("lists the catalog sorted by memory, H100-80GB with its reported total", async () => {
    const run = await runJson<{ id: string; totalBytes: number }[]>(["gpus"]);
    expect(run.status).toBe(0);
    const totals = run.json.map((g) => g.totalBytes);
    expect(totals).toEqual([...totals].sort((a, b) => a - b));
    expect(run.json.find((g) => g.id === "H100-80GB")?.totalBytes).toBe(85045477376); // deviceQuery, docs/gpus.md
  });
});

describe("the figures add up across commands (issue 25, item 10)", () => {
  it("batch's free is info's free (vramfit's own context is the job's), and its budget is that free less the reserve it shows", async () => {
    const env = simulatedGpus("NVIDIA H100 80GB HBM3:85520809984:3221225472", { VRAMFIT_NVML_LIBRARY: nvmlSimulator, CUDASIM_CONTEXT_BYTES: String(256 * 2 ** 20) });
    const info = await runCli(["info"], env);
    const infoFree = /^0 .*GiB {2}(\d+\.\d\d GiB) {2}3 GiB/m.exec(info.stdout)?.[1];
    expect(infoFree).toBe("76.65 GiB");
    const batch = await runCli(["batch", "--model", "resnet152", "--precision", "fp32", "--optimizer", "momentum"], env);
    expect(batch.stdout).toMatch(/^target +source +free +reserve +budget +max batch/m);
    const row = /^0: NVIDIA H100 80GB HBM3 +device +(\d+\.\d\d) GiB +(\d+\.\d\d) GiB +(\d+\.\d\d) GiB/m.exec(batch.stdout);
    expect(row?.[1]).toBe("76.65");
    const [free, reserve, budget] = row!.slice(1).map(Number) as [number, number, number];
    expect(Math.abs(free - reserve - budget)).toBeLessThanOrEqual(0.01); // each figure rounded to 0.01 GiB
  });
});
