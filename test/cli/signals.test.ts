// SIGINT and SIGTERM during a probe: vramfit lets the probe free every allocation, then exits
// 130 or 143. Watched from this process through the simulated NVML, which shares the simulated
// GPU's ledger (CUDASIM_STATE) with the CLI's and, unlike a real driver, keeps what a dead process held.
import { mkdtempSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { VramfitError } from "../../src/errors.js";
import type { Addon } from "../../src/native/addonTypes.js";
import { nvmlSimulator, root, simulatedGpus, startCli } from "./runCli.js";
import { ciResource } from "../ciResources.js";

// In CI, after the installs made beside the first tests (.ci/run): a bound is a time (a second after the second signal), measured where nothing is installing.
await ciResource("settled");

const GiB = 2 ** 30;
const MiB = 2 ** 20;
const DEVICE = "NVIDIA H100 80GB HBM3:85520809984:3221225472";
const FREE = 85520809984 - 3221225472;
const ledger = join(mkdtempSync(join(tmpdir(), "vramfit-signals-")), "ledger");
const ENV = simulatedGpus(DEVICE, { CUDASIM_STATE: ledger, CUDASIM_CONTEXT_BYTES: String(256 * MiB), CUDASIM_SYNC_DELAY_MS: "1500" });
const SEVEN_B_FP32_SGD = ["batch", "--params", "7e9", "--per-sample", "1GiB", "--precision", "fp32", "--optimizer", "sgd", "--json"];

let observer: Addon;

beforeAll(async () => {
  Object.assign(process.env, { CUDASIM_DEVICES: DEVICE, CUDASIM_STATE: ledger, CUDASIM_CONTEXT_BYTES: String(256 * MiB) });
  observer = createRequire(import.meta.url)(resolve(root, "build", "Release", "vramfit.node")) as Addon;
  observer.setErrorClass(VramfitError);
  await observer.loadNvml(nvmlSimulator);
});

async function free(): Promise<number> {
  return (await observer.nvmlDevices())[0]!.memory!.freeBytes;
}

/** Waits until the CLI holds probe memory (more than its context) on the device. */
async function untilProbing(): Promise<void> {
  for (let i = 0; i < 500; i += 1) {
    if ((await free()) < FREE - GiB) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error("the probe never started");
}

describe.each([
  ["SIGINT", 130],
  ["SIGTERM", 143],
] as const)("%s during a probe", (signal, status) => {
  it(`frees every allocation (and the context) before exiting ${status}`, async () => {
    expect(await free()).toBe(FREE);
    const cli = startCli(SEVEN_B_FP32_SGD, ENV);
    await untilProbing();
    cli.child.kill(signal);
    const run = await cli.finished;
    expect({ status: run.status, signal: run.signal }).toEqual({ status, signal: null });
    expect(run.stdout).toBe("");
    expect(run.stderr).toBe(`vramfit: interrupted by ${signal}; every probe freed its memory\n`);
    expect(await free()).toBe(FREE);
    expect((await observer.nvmlDevices())[0]!.processes).toEqual([]);
  });
});

describe("a second signal", () => {
  it("exits at once, not waiting for the probe (the test above would see the memory still held)", async () => {
    const cli = startCli(SEVEN_B_FP32_SGD, ENV);
    await untilProbing();
    cli.child.kill("SIGINT");
    await new Promise((resolve) => setTimeout(resolve, 50));
    const sent = performance.now();
    cli.child.kill("SIGINT");
    const run = await cli.finished;
    expect(run.status).toBe(130);
    expect(performance.now() - sent).toBeLessThan(1000); // the 1.5 s synchronize was not waited for
    expect(await free()).toBeLessThan(FREE - GiB); // left behind in the simulated ledger
  });
});
