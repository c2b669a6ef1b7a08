// parseSetup: the run options from the command line into a RunSetup, defaults and one-line errors.
import { describe, expect, test } from "vitest";
import { VramfitError } from "../../src/errors.js";
import { assumedDefaults, describeSetup, parseSetup, resolveSetup } from "../../src/plan/setup.js";

describe("parseSetup", () => {
  test("no options: train, amp, adamw; the rest at their documented defaults", () => {
    const setup = parseSetup({});
    expect(setup).toEqual({ mode: "train", precision: "amp", optimizer: "adamw" });
    expect(resolveSetup(setup)).toMatchObject({ optimizerImpl: "foreach", checkpointing: "none", attention: "sdpa", zeroStage: 0, gpus: 1, tp: 1, sequenceParallel: false, generatedTokens: 0 });
    // --optimizer-impl is named where it changes the memory (Adam's temporaries), not for SGD.
    expect(assumedDefaults({}, "transformer")).toEqual(["--mode train", "--precision amp", "--optimizer adamw", "--optimizer-impl foreach", "--attention sdpa", "--checkpointing none"]);
    expect(assumedDefaults({}, "cnn")).toEqual(["--mode train", "--precision amp", "--optimizer adamw", "--optimizer-impl foreach", "--checkpointing none"]);
    expect(assumedDefaults({}, "affine")).toEqual(["--mode train", "--precision amp", "--optimizer adamw", "--optimizer-impl foreach"]);
    expect(assumedDefaults({ optimizer: "momentum" }, "affine")).toEqual(["--mode train", "--precision amp"]);
  });

  test("every option, as commander hands them over", () => {
    expect(
      parseSetup({ mode: "train", precision: "bf16", optimizer: "momentum", seq: "4096", image: "384", checkpointing: "selective", attention: "eager", zero: "3", gpus: "64", tp: "8", sequenceParallel: true }),
    ).toEqual({ mode: "train", precision: "bf16", optimizer: "momentum", seq: 4096, image: 384, checkpointing: "selective", attention: "eager", zeroStage: 3, gpus: 64, tp: 8, sequenceParallel: true });
    expect(parseSetup({ mode: "infer", seq: 1000, generate: "3096" })).toMatchObject({ mode: "infer", seq: 1000, generatedTokens: 3096 });
  });

  test("a bare --checkpointing means full recomputation", () => {
    expect(parseSetup({ checkpointing: true }).checkpointing).toBe("full");
    expect(parseSetup({ checkpointing: false }).checkpointing).toBeUndefined();
  });

  test("describeSetup names every assumption", () => {
    expect(describeSetup(parseSetup({ seq: "512" }))).toBe("train, amp, adamw (foreach), seq 512, attention sdpa, checkpointing none, zero 0 over 1 GPU, tp 1");
    expect(describeSetup(parseSetup({ optimizer: "sgd", optimizerImpl: "single" }))).toBe("train, amp, sgd, attention sdpa, checkpointing none, zero 0 over 1 GPU, tp 1");
  });

  test.each([
    [{ precision: "fp8" }, '--precision: expected one of fp32, fp16, bf16, amp, got "fp8"'],
    [{ optimizer: "lion" }, '--optimizer: expected one of sgd, momentum, adam, adamw, adam8bit, got "lion"'],
    [{ mode: "eval" }, '--mode: expected one of train, infer, got "eval"'],
    [{ seq: "0" }, '--seq: expected a whole number from 1 to 16,777,216 (vramfit\'s limit on a dimension), got "0"'],
    [{ seq: "1.5" }, '--seq: expected a whole number from 1 to 16,777,216 (vramfit\'s limit on a dimension), got "1.5"'],
    [{ image: "big" }, '--image: expected a whole number from 1 to 16,777,216 (vramfit\'s limit on a dimension), got "big"'],
    [{ zero: "4" }, '--zero: expected one of 0, 1, 2, 3, got "4"'],
    [{ gpus: "-2" }, '--gpus: expected a whole number from 1 to 1,048,576 (vramfit\'s limit on GPUs), got "-2"'],
    [{ tp: "0" }, '--tp: expected a whole number from 1 to 1,048,576 (vramfit\'s limit on GPUs), got "0"'],
    [{ checkpointing: "some" }, '--checkpointing: expected one of none, selective, full, got "some"'],
    [{ attention: "fused" }, '--attention: expected one of sdpa, eager, flash, cudnn, efficient, math, got "fused"'],
    [{ optimizerImpl: "apex" }, '--optimizer-impl: expected one of foreach, single, fused, got "apex"'],
    [{ optimizer: "adam8bit", optimizerImpl: "fused" }, '--optimizer-impl: expected foreach or single with --optimizer adam8bit (bitsandbytes runs its own kernel), got "fused"'],
    [{ generate: "100" }, '--generate: expected --mode infer (generated tokens apply to inference), got "100"'],
    [{ mode: "infer", zero: "2" }, '--zero: expected 0 with --mode infer (ZeRO partitions training states), got "2"'],
    [{ mode: "infer", checkpointing: true }, '--checkpointing: expected none with --mode infer (nothing is kept for backward), got "full"'],
    [{ sequenceParallel: true }, "--sequence-parallel: expected --tp N with N > 1 (sequence parallelism splits along the tensor-parallel group), got true"],
  ])("bad options %#: %s", (options, message) => {
    expect(() => parseSetup(options)).toThrow(VramfitError);
    expect(() => parseSetup(options)).toThrow(message);
  });
});
