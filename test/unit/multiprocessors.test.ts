// Every catalog GPU can be simulated: src/devices/multiprocessors.ts answers for each, with a source.
import { describe, expect, it } from "vitest";
import { GPU_CATALOG } from "../../src/devices/catalog.js";
import { MULTIPROCESSOR_IDS, multiprocessorsOf } from "../../src/devices/multiprocessors.js";

describe("multiprocessorsOf", () => {
  it.each(GPU_CATALOG.map((gpu) => [gpu.id, gpu] as const))("%s has an SM count, an L2 size and a source", (_, gpu) => {
    const units = multiprocessorsOf(gpu);
    expect(units).toBeDefined();
    expect(units!.count).toBeGreaterThan(0);
    expect(units!.l2CacheBytes % 2 ** 20).toBe(0);
    expect(units!.source.length).toBeGreaterThan(10);
  });

  it("knows no GPU the catalog does not", () => {
    expect([...MULTIPROCESSOR_IDS].sort()).toEqual(GPU_CATALOG.map((g) => g.id).sort());
  });
});
