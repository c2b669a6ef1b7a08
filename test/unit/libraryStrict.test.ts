// The library is as strict as the CLI (issue 13, item 4): every public function refuses a bad
// argument with VramfitError ERR_INVALID_ARGUMENT naming the field — never a silent answer
// ("fits" for NaN, batch -3) and never a raw TypeError.
import { describe, expect, it } from "vitest";
import * as vramfit from "../../src/index.js";
import {
  VramfitError,
  advise,
  checkFits,
  findMaxBatch,
  formatBytes,
  gpusFit,
  hostBytes,
  memGetInfo,
  parseBytes,
  parseCount,
  parseSetup,
  planMemory,
  resolveWorkload,
  searchMaxBatch,
  type MemoryPlan,
  type RunSetup,
  type Workload,
} from "../../src/index.js";

const SETUP: RunSetup = { mode: "train", precision: "amp", optimizer: "adamw" };
const AFFINE: Workload = { kind: "affine", parameterCount: 1e9, perSampleBytes: 2 ** 30, fixedBytes: 0 };
const plan: MemoryPlan = planMemory(AFFINE, SETUP);
const H100 = { memoryBytes: 80 * 2 ** 30 };

/** The message of the ERR_INVALID_ARGUMENT that `f` throws or rejects with. */
async function invalid(f: () => unknown): Promise<string> {
  let caught: unknown;
  try {
    await f();
  } catch (error) {
    caught = error;
  }
  expect(caught, "expected ERR_INVALID_ARGUMENT").toBeInstanceOf(VramfitError);
  expect((caught as VramfitError).code).toBe("ERR_INVALID_ARGUMENT");
  expect((caught as Error).message).not.toContain("\n");
  return (caught as Error).message;
}

const anyArgs = (f: unknown) => f as (...args: unknown[]) => unknown;

describe("the cases the issue found", () => {
  it("checkFits(plan, NaN) and (plan, -5) said 'fits'", async () => {
    expect(await invalid(() => checkFits(plan, Number.NaN, H100))).toBe("batch: expected a whole number ≥ 0, got NaN");
    expect(await invalid(() => checkFits(plan, -5, H100))).toBe("batch: expected a whole number ≥ 0, got -5");
  });

  it("findMaxBatch(plan, { maxBatch: -3 }) returned -3 and 1.5 returned 1.5", async () => {
    expect(await invalid(() => findMaxBatch(plan, { ...H100, maxBatch: -3 }))).toBe("options.maxBatch: expected a whole number ≥ 1, got -3");
    expect(await invalid(() => findMaxBatch(plan, { ...H100, maxBatch: 1.5 }))).toBe("options.maxBatch: expected a whole number ≥ 1, got 1.5");
  });

  it("reserveBytes / memoryBytes NaN gave batch 0 or budgetBytes null", async () => {
    expect(await invalid(() => findMaxBatch(plan, { ...H100, reserveBytes: Number.NaN }))).toBe("options.reserveBytes: expected a whole number of bytes ≥ 0, at most 2^53, got NaN");
    expect(await invalid(() => checkFits(plan, 1, { memoryBytes: Number.NaN }))).toBe("options.memoryBytes: expected a whole number of bytes ≥ 0, at most 2^53, got NaN");
  });

  it("planMemory(…, { precision: 'fp8' }) threw a raw TypeError", async () => {
    expect(await invalid(() => planMemory(AFFINE, { ...SETUP, precision: "fp8" as never }))).toBe('setup.precision: expected one of fp32, fp16, bf16, amp, got "fp8"');
  });

  it("planMemory(w, {}) described ', , image 224'", async () => {
    expect(await invalid(() => planMemory(AFFINE, {} as never))).toBe("setup.mode: expected one of train, infer, got undefined");
  });

  it("{ gpu, memoryBytes } together: the library preferred gpu silently", async () => {
    expect(await invalid(() => findMaxBatch(plan, { gpu: "H100-80GB", memoryBytes: 2 ** 30 }))).toBe('options.gpu: expected one analytic target: gpu or memoryBytes, not both, got "with memoryBytes"');
    expect(await invalid(() => checkFits(plan, 1, { device: 0, gpu: "H100-80GB" }))).toMatch(/^options\.device: expected no device with gpu or memoryBytes/);
  });
});

describe("every argument, named", () => {
  it("options: a typo is an unknown field, not an ignored one", async () => {
    expect(await invalid(() => findMaxBatch(plan, { maxbatch: 3 } as never))).toMatch(/^options\.maxbatch: expected no such field \(known: device, gpu, memoryBytes, /);
    expect(await invalid(() => planMemory(AFFINE, { ...SETUP, zero: 3 } as never))).toMatch(/^setup\.zero: expected no such field/);
  });

  it("setups: types, ranges and the rules between fields", async () => {
    expect(await invalid(() => planMemory(AFFINE, { ...SETUP, gpus: 0 }))).toBe("setup.gpus: expected a whole number from 1 to 1,048,576 (vramfit's limit on GPUs), got 0");
    expect(await invalid(() => planMemory(AFFINE, { ...SETUP, zeroStage: 4 as never }))).toBe("setup.zeroStage: expected one of 0, 1, 2, 3, got 4");
    expect(await invalid(() => planMemory(AFFINE, { ...SETUP, mode: "infer", zeroStage: 2 }))).toBe("--zero: expected 0 with --mode infer (ZeRO partitions training states), got 2");
    // What does not apply is refused as the CLI refuses it.
    expect(await invalid(() => planMemory(AFFINE, { ...SETUP, tp: 2 }))).toMatch(/^--tp: expected no --tp for a raw --params workload/);
  });

  it("workloads: kinds, fields and limits", async () => {
    expect(await invalid(() => planMemory({ kind: "mlp" } as never, SETUP))).toBe('workload.kind: expected one of affine, transformer, cnn, unet, got "mlp"');
    expect(await invalid(() => planMemory({ ...AFFINE, perSampleBytes: -1 }, SETUP))).toBe("workload.perSampleBytes: expected a whole number of bytes ≥ 0, at most 2^53, got -1");
    const gpt2 = resolveWorkload({ model: "gpt2" });
    if (gpt2.kind !== "transformer") throw new Error("gpt2 is a transformer");
    expect(await invalid(() => planMemory({ ...gpt2, architecture: { ...gpt2.architecture, hiddenSize: 1e15 } }, SETUP))).toMatch(/^workload\.architecture: hiddenSize: expected a whole number from 1 to 16,777,216/);
    expect(await invalid(() => planMemory({ ...gpt2, architecture: { ...gpt2.architecture, layers: 1e7 } }, SETUP))).toMatch(/^workload\.architecture: layers: expected a whole number from 1 to 256/);
    const resnet = resolveWorkload({ model: "resnet50" });
    if (resnet.kind !== "cnn") throw new Error("resnet50 is a CNN");
    expect(await invalid(() => planMemory({ ...resnet, network: { ...resnet.network, layers: [{ type: "conv", out: 0, kernel: 3 }] } }, SETUP))).toMatch(/^workload\.network: layers\[0\]\.out: expected a whole number from 1/);
  });

  it("plans built by hand: byte counts whole, phases in range, totals exact", async () => {
    const bad = { ...plan, tensors: [{ name: "x", category: "activations", fixedBytes: 0, perSampleBytes: 0.5 }] } as MemoryPlan;
    expect(await invalid(() => findMaxBatch(bad, H100))).toBe("plan.tensors[0].perSampleBytes: expected a whole number of bytes ≥ 0, at most 2^53, got 0.5");
    expect(await invalid(() => hostBytes({} as never))).toBe("plan.description: expected a string, got undefined");
    const past = { ...plan, tensors: [{ name: "x", category: "activations" as const, fixedBytes: 2 ** 52, perSampleBytes: 0 }, { name: "y", category: "activations" as const, fixedBytes: 2 ** 52 + 2, perSampleBytes: 0 }] };
    expect(await invalid(() => checkFits(past, 0, H100))).toMatch(/^workload: expected a plan whose byte counts stay below 8 PiB/);
    expect(await invalid(() => checkFits(plan, 2 ** 40, H100))).toMatch(/^batch: expected at most [\d,]+ for this workload \(beyond it its bytes pass 8 PiB/);
  });

  it("the smaller functions", async () => {
    expect(await invalid(() => memGetInfo(-1))).toBe("device: expected a whole number ≥ 0, got -1");
    expect(await invalid(() => formatBytes(Number.NaN))).toBe("bytes: expected a finite number, got NaN");
    expect(await invalid(() => anyArgs(parseBytes)(42))).toBe("size: expected a size such as 80GiB, 512MiB, 40GB or 1.5e9 (bytes), got 42");
    expect(await invalid(() => parseCount("--steps", "0"))).toBe('--steps: expected a whole number ≥ 1, got "0"');
    expect(await invalid(() => searchMaxBatch(() => true, { seed: Number.NaN }))).toBe("options.seed: expected a number ≥ 0 (the predicted batch), got NaN");
    expect(await invalid(() => anyArgs(searchMaxBatch)(42, { seed: 1 }))).toBe("fits: expected a function, got 42");
    expect(await invalid(() => anyArgs(resolveWorkload)(null))).toBe("input: expected an object, got null");
    expect(await invalid(() => resolveWorkload({ modle: "gpt2" } as never))).toMatch(/^input\.modle: expected no such field/);
    expect(await invalid(() => parseSetup({ sequenceParallel: "yes" } as never))).toBe('options.sequenceParallel: expected true or false, got "yes"');
    expect(await invalid(() => gpusFit(AFFINE, SETUP, { minBatch: 0 }))).toBe("options.minBatch: expected a whole number ≥ 1, got 0");
    const target = { budgetBytes: 2 ** 30, totalBytes: 2 ** 30, allocator: { kind: "pytorch" as const, contextBytes: 0 } };
    expect(await invalid(() => advise({ workload: AFFINE, setup: SETUP, targetBatch: Number.NaN, fromBatchSize: 0, target }))).toBe("request.targetBatch: expected a whole number ≥ 1, got NaN");
    expect(await invalid(() => vramfit.backend({ cudaLibrary: 5 } as never))).toBe("options.cudaLibrary: expected a string, got 5");
  });

  it("valid calls still answer", async () => {
    expect((await checkFits(plan, 1, H100)).fits).toBe(true);
    expect((await findMaxBatch(plan, { ...H100, maxBatch: 3 })).batchSize).toBe(3);
    expect(planMemory(resolveWorkload({ model: "resnet50" }), { ...SETUP, image: 224 }).tensors.length).toBeGreaterThan(0);
    expect(formatBytes(1536)).toBe("1.50 KiB");
  });
});

describe("no public function lets garbage through", () => {
  // Takes no argument, or any value (exitStatusOf maps anything to a status).
  const TAKE_ANYTHING = new Set(["listPresets", "devices", "exitStatusOf", "invalidArgument", "releaseDevices", "openSession"]);
  const functions = Object.entries(vramfit).filter(([name, value]) => typeof value === "function" && !/^[A-Z]/.test(name) && !TAKE_ANYTHING.has(name));

  it.each(functions.map(([name]) => name))("%s(NaN, …) is ERR_INVALID_ARGUMENT, not a TypeError or an answer", async (name) => {
    const f = anyArgs((vramfit as Record<string, unknown>)[name]);
    await invalid(() => f(Number.NaN, Number.NaN, Number.NaN));
    await invalid(() => f({ bogus: Symbol("x") }, { bogus: 1 }, { bogus: 1 }));
  });
});
