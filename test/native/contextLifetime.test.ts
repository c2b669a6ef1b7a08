// releaseDevice(s): vramfit gives its primary contexts back, after the work queued before, and
// the next call retains them again. Seen through the simulated NVML, which lists each process's
// memory (contexts included) without a context of its own.
import { spawnSync } from "node:child_process";
import { beforeAll, describe, expect, it } from "vitest";

import type { Addon } from "../../src/native/addonTypes.js";
import { GiB, MiB, addonPath, rejection, startNvml, startSimulator, withFault } from "./simulator.js";

const TOTAL = 8 * GiB;
const CONTEXT = 300 * MiB;
const G = 2 * MiB;

let addon: Addon;

beforeAll(async () => {
  const device = { name: "NVIDIA L4", totalBytes: TOTAL };
  ({ addon } = await startSimulator({ devices: [device, device, device], contextBytes: CONTEXT, syncDelayMs: 30 }));
  await startNvml();
});

/** What NVML says this process holds on each GPU (0 when it is not listed). */
async function heldByMe(): Promise<number[]> {
  return (await addon.nvmlDevices()).map((device) => device.processes!.find((p) => p.pid === process.pid)?.usedBytes ?? 0);
}

describe("releaseDevice", () => {
  it("gives back the context a device call retained: the process then holds nothing", async () => {
    expect(await heldByMe()).toEqual([0, 0, 0]);
    expect((await addon.memGetInfo(0)).freeBytes).toBe(TOTAL - CONTEXT);
    expect(await heldByMe()).toEqual([CONTEXT, 0, 0]);
    expect(await addon.releaseDevice(0)).toBe(true);
    expect(await heldByMe()).toEqual([0, 0, 0]);
  });

  it("resolves false when vramfit holds no context on the device", async () => {
    expect(await addon.releaseDevice(1)).toBe(false);
    expect(await addon.releaseDevice(0)).toBe(false); // released above
  });

  it("the next call retains the context again", async () => {
    expect((await addon.probe(0, [G], { touch: false })).freeBytesAtPeak).toBe(TOTAL - CONTEXT - G);
    expect(await heldByMe()).toEqual([CONTEXT, 0, 0]);
    expect(await addon.releaseDevice(0)).toBe(true);
  });

  it("waits for a probe in flight: the probe completes, then the context goes", async () => {
    // touch holds the memory through a slow cuCtxSynchronize; the release is queued behind it.
    const probe = addon.probe(0, [GiB], { touch: true });
    const release = addon.releaseDevice(0);
    expect(await probe).toMatchObject({ fits: true, freeBytesAtPeak: TOTAL - CONTEXT - GiB });
    expect(await release).toBe(true);
    expect(await heldByMe()).toEqual([0, 0, 0]);
  });

  it("a failed release rejects naming the call, keeps the context, and a later release succeeds", async () => {
    await addon.memGetInfo(2);
    const error = await withFault("cuDevicePrimaryCtxRelease_v2:999", () => rejection(addon.releaseDevice(2)));
    expect(error).toMatchObject({ code: "ERR_CUDA_UNKNOWN", cudaCode: 999, call: "cuDevicePrimaryCtxRelease_v2" });
    expect(await heldByMe()).toEqual([0, 0, CONTEXT]);
    expect(await addon.releaseDevice(2)).toBe(true);
    expect(await heldByMe()).toEqual([0, 0, 0]);
  });

  it("rejects an ordinal the driver does not have", async () => {
    expect((await rejection(addon.releaseDevice(3))).code).toBe("ERR_INVALID_DEVICE");
  });
});

describe("releaseDevices", () => {
  it("releases every device used, after each one's queued probes, and lists them", async () => {
    const probes = [0, 1, 2].map((d) => addon.probe(d, [GiB, GiB], { touch: true }));
    const released = addon.releaseDevices();
    for (const probe of probes) expect((await probe).fits).toBe(true);
    expect(await released).toEqual([0, 1, 2]);
    expect(await heldByMe()).toEqual([0, 0, 0]);
    expect(await addon.releaseDevices()).toEqual([]);
  });

  it("keeps retains and releases balanced over many rounds", async () => {
    for (let round = 0; round < 20; round++) {
      await addon.memGetInfo(round % 3);
      await addon.probe(round % 3, [G], { touch: false });
      expect(await addon.releaseDevices()).toEqual([round % 3]);
    }
    // One retain too many in any round would leave that context behind.
    expect(await heldByMe()).toEqual([0, 0, 0]);
  });

  it("before loadDriver there is nothing to release", () => {
    const script = `require(${JSON.stringify(addonPath)}).releaseDevices().then((r) => console.log(JSON.stringify(r)))`;
    const child = spawnSync(process.execPath, ["-e", script], { encoding: "utf8" });
    expect(child.stderr).toBe("");
    expect(child.stdout.trim()).toBe("[]");
  });
});
