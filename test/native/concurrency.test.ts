// One thread per device: eight devices probe at once, each device stays in order, and probes
// can be cancelled in flight (the addon frees what it holds) or between searches' probes.
import { beforeAll, describe, expect, it } from "vitest";

import { deviceBatch } from "../../src/fit/findMaxBatch.js";
import type { Addon, NativeDevice } from "../../src/native/addonTypes.js";
import { buildPlan } from "../../src/plan/buildPlan.js";
import { GiB, MiB, rejection, startSimulator } from "./simulator.js";
import { ciResource } from "../ciResources.js";

// In CI, after the installs made beside the first tests (.ci/run): a bound is a time (a cancelled probe within 1.5 s), measured where nothing is installing.
await ciResource("settled");

const CALL_DELAY_MS = 40; // every call that reaches a device
const DEVICES = 8;

let addon: Addon;
let devices: NativeDevice[];

beforeAll(async () => {
  const device = { name: "NVIDIA H100 80GB HBM3", totalBytes: 16 * GiB };
  ({ addon } = await startSimulator({ devices: Array.from({ length: DEVICES }, () => device), callDelayMs: CALL_DELAY_MS, contextBytes: 0 }));
  devices = await addon.devices();
  await Promise.all(devices.map((d) => addon.memGetInfo(d.ordinal))); // contexts retained: probes are 3 calls each
});

async function timed<T>(body: () => Promise<T>): Promise<number> {
  const started = performance.now();
  await body();
  return performance.now() - started;
}

describe("devices in parallel", () => {
  it("probes on 8 devices take about as long as one, not 8 times as long", async () => {
    const one = await timed(() => addon.probe(0, [MiB], { touch: false }));
    expect(one).toBeGreaterThanOrEqual(3 * CALL_DELAY_MS - 5); // alloc, memGetInfo, free
    const all = await timed(() => Promise.all(devices.map((d) => addon.probe(d.ordinal, [MiB], { touch: false }))));
    // libuv's default pool (4 threads) would need 2 rounds; one queue for all, 8.
    expect(all).toBeLessThan(1.6 * one);
  });

  it("calls on one device still run one at a time, in order", async () => {
    const two = await timed(() => Promise.all([addon.probe(0, [MiB], { touch: false }), addon.probe(0, [MiB], { touch: false })]));
    expect(two).toBeGreaterThanOrEqual(6 * CALL_DELAY_MS - 10);
  });
});

describe("cancelling a probe in flight", () => {
  it("stops before the next allocation, frees everything, and rejects ERR_ABORTED", async () => {
    const cancel = new Int32Array(new SharedArrayBuffer(4));
    const sizes = Array.from({ length: 100 }, () => 64 * MiB); // 100 allocations: 4 s uncancelled
    const started = performance.now();
    const probe = addon.probe(1, sizes, { touch: true, cancel });
    setTimeout(() => Atomics.store(cancel, 0, 1), 5 * CALL_DELAY_MS);
    const error = await rejection(probe);
    expect(error.code).toBe("ERR_ABORTED");
    expect(performance.now() - started).toBeLessThan(1500);
    expect((await addon.memGetInfo(1)).freeBytes).toBe(16 * GiB);
  });

  it("a probe cancelled while it waits behind another never allocates", async () => {
    const cancel = new Int32Array(new SharedArrayBuffer(4));
    const first = addon.probe(2, [MiB], { touch: false });
    const second = addon.probe(2, [MiB], { touch: false, cancel });
    Atomics.store(cancel, 0, 1);
    expect((await first).fits).toBe(true);
    expect((await rejection(second)).code).toBe("ERR_ABORTED");
  });

  it("rejects a cancel option that is not an Int32Array", async () => {
    const error = await rejection(addon.probe(2, [MiB], { touch: false, cancel: [1] as unknown as Int32Array }));
    expect(error.message).toBe("options.cancel: expected an Int32Array of length 1 or more, got 1");
  });
});

describe("an AbortSignal given to the search", () => {
  // 1e9 fp32 + SGD (8e9 B of states) and 1 GiB a sample on 16 GiB: the seed is probed first.
  const plan = buildPlan({ kind: "affine", parameterCount: 1e9, perSampleBytes: GiB, fixedBytes: 0 }, { mode: "train", precision: "fp32", optimizer: "sgd" });

  it("aborted during a probe: the probe stops, its memory is freed, the search rejects with the signal's reason", async () => {
    const controller = new AbortController();
    const search = deviceBatch({ kind: "device", addon, device: devices[3]! }, plan, { signal: controller.signal, lock: false });
    setTimeout(() => controller.abort(new Error("stop")), 3 * CALL_DELAY_MS); // memGetInfo done, first probe under way
    await expect(search).rejects.toThrow("stop");
    expect((await addon.memGetInfo(3)).freeBytes).toBe(16 * GiB);
  });

  it("aborted before it starts: rejects without touching the device", async () => {
    const controller = new AbortController();
    controller.abort(new Error("never mind"));
    const started = performance.now();
    await expect(deviceBatch({ kind: "device", addon, device: devices[4]! }, plan, { signal: controller.signal, lock: false })).rejects.toThrow("never mind");
    expect(performance.now() - started).toBeLessThan(CALL_DELAY_MS);
  });

  it("not aborted: the same search answers", async () => {
    // No headroom and no job context: only the segments count, each state 3,816 MiB (2 MiB-rounded).
    const result = await deviceBatch({ kind: "device", addon, device: devices[5]! }, plan, { signal: new AbortController().signal, lock: false, reserveBytes: 0, jobContextBytes: 0 });
    expect(result.batchSize).toBe(8); // (16 GiB − 2 × 3,816 MiB of states) / 1 GiB = 8.5
  });
});
