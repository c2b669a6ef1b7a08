// cuBLAS's workspaces in a plan: their size by compute capability (PyTorch's CublasHandlePool.cpp rule) and how many a step holds.
import { describe, expect, test } from "vitest";
import { BLAS_WORKSPACE_PREFIX, blasWorkspaceBytes } from "../../src/plan/blasWorkspace.js";
import { buildPlan } from "../../src/plan/buildPlan.js";
import { parseComputeCapability } from "../../src/plan/computeCapability.js";
import { parseSetup } from "../../src/plan/setup.js";
import { presetWorkload } from "../../src/workload/presets.js";

const MiB = 2 ** 20;
const workspaces = (plan: ReturnType<typeof buildPlan>) => plan.tensors.filter((t) => t.name.startsWith(BLAS_WORKSPACE_PREFIX));

describe("cuBLAS workspaces (src/plan/blasWorkspace.ts)", () => {
  test.each([
    ["9.0", 32 * MiB],
    ["10.0", 32 * MiB],
    ["12.0", 32 * MiB],
    // `:4096:2:16:8`: two 4 MiB and eight 16 KiB chunks
    ["8.0", 8 * MiB + 128 * 1024],
    ["8.9", 8_519_680],
    ["7.0", 8_519_680],
  ])("compute capability %s: %d bytes", (cc, bytes) => {
    expect(blasWorkspaceBytes(parseComputeCapability("--compute-capability", cc))).toBe(bytes);
  });

  test("training holds two (the Python thread's handle and autograd's), inference one, a raw workload none", () => {
    const llama = presetWorkload("llama-2-7b")!;
    const train = buildPlan(llama, parseSetup({ seq: 512, computeCapability: "9.0" }));
    expect(workspaces(train).map((t) => [t.name, t.fixedBytes, t.perSampleBytes, t.firstPhase])).toEqual([
      ["cublas.workspace.forward", 32 * MiB, 0, undefined],
      ["cublas.workspace.backward", 32 * MiB, 0, undefined],
    ]);
    const infer = buildPlan(llama, parseSetup({ seq: 512, mode: "infer", computeCapability: "8.0" }));
    expect(workspaces(infer).map((t) => t.fixedBytes)).toEqual([8_519_680]);
    const raw = buildPlan({ kind: "affine", parameterCount: 1e9, perSampleBytes: MiB, fixedBytes: 0 }, parseSetup({}));
    expect(workspaces(raw)).toEqual([]);
  });

  test("a CNN's step has them too (its classifier runs on cuBLAS); the default target is 9.0", () => {
    const plan = buildPlan(presetWorkload("resnet50")!, parseSetup({}));
    expect(workspaces(plan).map((t) => t.fixedBytes)).toEqual([32 * MiB, 32 * MiB]);
  });

  test("--compute-capability is checked", () => {
    expect(() => parseSetup({ computeCapability: "nine" })).toThrow(/--compute-capability: .*major\.minor/);
    expect(() => parseSetup({ computeCapability: "9" })).toThrow(/--compute-capability/);
  });
});
