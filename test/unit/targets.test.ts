// One resolver of targets: the CLI is a layer over the library's, and the library is as strict as the CLI.
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { checkFits, findMaxBatch, planMemory, resolveTargets, type NativeDevice } from "../../src/index.js";
import { selectDevices } from "../../src/fit/resolveTargets.js";

const root = resolve(import.meta.dirname, "..", "..");
const plan = planMemory({ kind: "affine", parameterCount: 1e8, perSampleBytes: 2 ** 28, fixedBytes: 0 }, { mode: "train", precision: "fp32", optimizer: "sgd" });

describe("the CLI resolves targets only through the library", () => {
  it("no file under src/cli imports src/native", () => {
    const dir = join(root, "src", "cli");
    const offenders = readdirSync(dir)
      .filter((file) => file.endsWith(".ts"))
      .filter((file) => /from\s+["']\.\.\/native\//.test(readFileSync(join(dir, file), "utf8")));
    expect(offenders).toEqual([]);
  });
});

describe("the library's resolver", () => {
  it("refuses gpu and memoryBytes together instead of silently preferring the GPU", async () => {
    await expect(findMaxBatch(plan, { gpu: "H100-80GB", memoryBytes: 2 ** 34 })).rejects.toMatchObject({ code: "ERR_INVALID_ARGUMENT", message: expect.stringMatching(/one analytic target: gpu or memoryBytes, not both/) });
    await expect(checkFits(plan, 1, { gpu: "H100-80GB", memoryBytes: 2 ** 34 })).rejects.toMatchObject({ code: "ERR_INVALID_ARGUMENT" });
    await expect(resolveTargets({ gpu: "H100-80GB", memoryBytes: 2 ** 34 })).rejects.toMatchObject({ code: "ERR_INVALID_ARGUMENT" });
  });

  it("refuses a device with an analytic target", async () => {
    await expect(findMaxBatch(plan, { device: 0, gpu: "H100-80GB" })).rejects.toMatchObject({ code: "ERR_INVALID_ARGUMENT", message: expect.stringMatching(/^options\.device: expected no device with gpu or memoryBytes/) });
  });

  it("answers a named target the same whichever way it is given", async () => {
    const byId = await findMaxBatch(plan, { gpu: "H100-80GB" });
    const [target] = (await resolveTargets({ gpu: "H100-80GB" })).targets;
    const resolved = await findMaxBatch(plan, { target: target! });
    expect(resolved.batchSize).toBe(byId.batchSize);
    expect(resolved.reason).toBe("analytic target (--gpu)");
  });

  it("selects a device by ordinal, by UUID (any case), or by a UUID prefix naming exactly one", () => {
    const device = (ordinal: number, uuid: string) => ({ ordinal, uuid, name: "x" }) as NativeDevice;
    const all = [device(0, "GPU-aaaa1111-0000-0000-0000-000000000000"), device(1, "GPU-aaaa2222-0000-0000-0000-000000000000"), device(2, "MIG-bbbb0000-0000-0000-0000-000000000000")];
    expect(selectDevices(all, 1).map((d) => d.ordinal)).toEqual([1]);
    expect(selectDevices(all, "GPU-AAAA2222-0000-0000-0000-000000000000").map((d) => d.ordinal)).toEqual([1]);
    expect(selectDevices(all, "MIG-bbbb").map((d) => d.ordinal)).toEqual([2]);
    expect(selectDevices(all, "all")).toHaveLength(3);
    expect(() => selectDevices(all, "GPU-aaaa")).toThrow(/which begins 2 devices' UUIDs$/);
    expect(() => selectDevices(all, 3)).toThrow(/^--device: expected a CUDA device ordinal from 0 to 2 \(this machine has 3 visible devices\), got 3$/);
  });
});
