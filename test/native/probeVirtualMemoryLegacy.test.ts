// probe() with options.pageBytes on a driver without the virtual-memory API (the simulated driver's legacy build): every allocation a cuMemAlloc, the same answers, nothing left behind.
import { beforeAll, expect, it } from "vitest";

import type { Addon } from "../../src/native/addonTypes.js";
import { GiB, MiB, configureSimulator, legacySimulatorPath, loadAddon } from "./simulator.js";

let addon: Addon;

beforeAll(async () => {
  addon = loadAddon();
  configureSimulator({ devices: [{ name: "NVIDIA L4", totalBytes: GiB, usedBytes: 0 }], contextBytes: 0 });
  await addon.loadDriver(legacySimulatorPath);
});

it("falls back to cuMemAlloc, run by run: the same bytes held, the same fits, and all given back", async () => {
  // A 30 MiB run is one cuMemAlloc of 30 MiB here (the driver rounds it to 2 MiB), not two 20 MiB pages.
  const result = await addon.probe(0, [30 * MiB, 4 * MiB], { touch: true, pageBytes: [20 * MiB, 2 * MiB] });
  expect(result).toMatchObject({ fits: true, virtualMemory: false, allocated: 2, freeBytesAtPeak: GiB - 34 * MiB });
  expect(await addon.probe(0, [600 * MiB, 500 * MiB], { touch: false, pageBytes: [20 * MiB, 20 * MiB] })).toMatchObject({ fits: false, virtualMemory: false });
  expect(await addon.probe(0, [600 * MiB, 500 * MiB], { touch: true, releases: [1, 0], pageBytes: [20 * MiB, 20 * MiB] })).toMatchObject({ fits: true, virtualMemory: false });
  expect((await addon.memGetInfo(0)).freeBytes).toBe(GiB);
});
