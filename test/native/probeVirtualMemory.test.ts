// probe() with options.pageBytes: expandable segments' pages held through the driver's virtual-memory API as PyTorch holds them, and nothing left behind whatever fails.
//
// On the simulated driver, which charges each cuMemCreate to the device until its cuMemRelease,
// refuses a map, an unmap or an access outside a reserved range and a range freed other than whole
// (it does not track the mappings themselves: see native/sim/sim_driver.cc). The driver without the API
// (libcudasim_legacy.so, probeVirtualMemoryLegacy.test.ts) gets cuMemAlloc instead.
import { beforeAll, describe, expect, it } from "vitest";

import type { Addon } from "../../src/native/addonTypes.js";
import { GiB, MiB, rejection, startSimulator, withFault } from "./simulator.js";

const freeBytes = GiB;
const CALL_DELAY_MS = 20;
let addon: Addon;

beforeAll(async () => {
  ({ addon } = await startSimulator({ devices: [{ name: "NVIDIA L4", totalBytes: GiB, usedBytes: 0 }], contextBytes: 0, callDelayMs: CALL_DELAY_MS }));
  expect((await addon.memGetInfo(0)).freeBytes).toBe(freeBytes);
});

async function expectNoLeak(): Promise<void> {
  expect((await addon.memGetInfo(0)).freeBytes).toBe(freeBytes);
}

describe("pages through cuMemCreate/cuMemMap", () => {
  it("holds whole pages (a 30 MiB run of 20 MiB pages takes 40 MiB), touches them, and gives everything back", async () => {
    const result = await addon.probe(0, [30 * MiB, 4 * MiB], { touch: true, pageBytes: [20 * MiB, 2 * MiB] });
    expect(result).toMatchObject({ fits: true, virtualMemory: true, allocated: 2, allocatedBytes: 34 * MiB, freeBytesAtPeak: freeBytes - 44 * MiB });
    await expectNoLeak();
  });

  it("mixes mapped runs and cuMemAlloc blocks (page 0), and gives a mapped run back mid-probe (options.releases)", async () => {
    // 600 + 500 MiB of 20 MiB pages do not fit in 1 GiB together; with the first run unmapped first they do.
    expect((await addon.probe(0, [600 * MiB, 500 * MiB], { touch: false, pageBytes: [20 * MiB, 20 * MiB] })).fits).toBe(false);
    await expectNoLeak();
    const result = await addon.probe(0, [600 * MiB, 500 * MiB, 10 * MiB], { touch: true, releases: [1, 0], pageBytes: [20 * MiB, 20 * MiB, 0] });
    expect(result).toMatchObject({ fits: true, virtualMemory: true, allocated: 3 });
    await expectNoLeak();
  });

  it("runs out of memory in the middle of a run's cuMemCreate calls: a result, with the pages made so far released", async () => {
    const result = await addon.probe(0, [400 * MiB, 700 * MiB], { touch: true, pageBytes: [20 * MiB, 20 * MiB] });
    expect(result).toMatchObject({ fits: false, limit: "out-of-memory", failedIndex: 1, allocatedBytes: 400 * MiB });
    // The headroom is measured with cuMemAlloc: what the device could still give besides what is held.
    expect(result.headroomBytes).toBe(freeBytes - 400 * MiB);
    await expectNoLeak();
  });

  it.each([
    ["cuMemAddressReserve:1:1", "cuMemAddressReserve"],
    ["cuMemCreate:1:3", "cuMemCreate"],
    ["cuMemMap:1:4", "cuMemMap"],
    ["cuMemSetAccess:1:1", "cuMemSetAccess"],
  ])("a driver failure (%s, failing every such call after the first few) rejects naming the call, and nothing is left mapped, created or reserved", async (rule, call) => {
    const error = await withFault(rule, () => rejection(addon.probe(0, [60 * MiB, 60 * MiB], { touch: true, pageBytes: [20 * MiB, 20 * MiB] })));
    expect({ code: error.code, call: error.call }).toEqual({ code: "ERR_CUDA_INVALID_VALUE", call });
    await expectNoLeak();
    expect((await addon.probe(0, [60 * MiB], { touch: true, pageBytes: [20 * MiB] })).fits).toBe(true);
    await expectNoLeak();
  });

  it("cancelled in flight, frees every page and range it holds", async () => {
    const cancel = new Int32Array(new SharedArrayBuffer(4));
    // With a reserve, free memory is read after each allocation (CALL_DELAY_MS each): 50 runs take a second uncancelled.
    const sizes = Array.from({ length: 50 }, () => 10 * MiB);
    const probe = addon.probe(0, sizes, { touch: true, cancel, reserveBytes: MiB, pageBytes: sizes.map(() => 2 * MiB) });
    setTimeout(() => Atomics.store(cancel, 0, 1), 5 * CALL_DELAY_MS);
    expect((await rejection(probe)).code).toBe("ERR_ABORTED");
    await expectNoLeak();
  });

  it("refuses page sizes that do not go one to each allocation", async () => {
    const error = await rejection(addon.probe(0, [MiB, MiB], { touch: false, pageBytes: [2 * MiB] }));
    expect(error.code).toBe("ERR_INVALID_ARGUMENT");
  });

  it("a failure while giving pages back is reported once the rest is given back", async () => {
    const error = await withFault("cuMemUnmap:1:1", () => rejection(addon.probe(0, [40 * MiB, 40 * MiB], { touch: false, pageBytes: [20 * MiB, 20 * MiB] })));
    expect(error.call).toBe("cuMemUnmap/cuMemRelease/cuMemAddressFree");
    // Every unmap after the first failed; each page was still released and each range freed.
    await expectNoLeak();
  });
});
