// The analytic timeline's peak against the fake-CUDA tracer's trace of the same step (test/fixtures/trace-agreement.json,
// made by scripts/reference/trace-agreement.mjs with torch 2.13 and transformers 5.18, models from config.json).
import { readFileSync } from "node:fs";
import { describe, expect, test } from "vitest";
import { casePlan, FIXTURE, peakRatio, type AgreementCase, type AgreementLibrary } from "../../scripts/reference/trace-agreement-ratios.mjs";
import { BLAS_WORKSPACE_PREFIX } from "../../src/plan/blasWorkspace.js";
import { buildPlan } from "../../src/plan/buildPlan.js";
import { peakBytes } from "../../src/plan/memoryPlan.js";
import { parseSetup } from "../../src/plan/setup.js";
import { presetWorkload } from "../../src/workload/presets.js";

const fixture = JSON.parse(readFileSync(FIXTURE, "utf8")) as { command: string; batches: number[]; cases: AgreementCase[] };
const library: AgreementLibrary = { buildPlan, parseSetup, presetWorkload, peakBytes, BLAS_WORKSPACE_PREFIX };
const planOf = (c: AgreementCase) => casePlan(library, c);

describe(`the analytic peak against the traced step (${fixture.command})`, () => {
  test.each(fixture.cases.map((c) => [c.case, c] as const))("%s: same parameters, kernel and cuBLAS workspaces", (_, c) => {
    const { plan, workspaces } = planOf(c);
    expect(plan.parameterCount).toBe(c.parameterCount);
    expect(plan.trainableParameterCount ?? plan.parameterCount).toBe(c.trainableParameterCount);
    // The tracer ran torch 2.13, whose priority order puts flash first everywhere; torch 2.14 (what
    // vramfit plans) puts cuDNN first on sm 9.0. Both keep Q, K, V, the output and fp32 statistics.
    const traced = plan.attentionKernel === "cudnn" ? "flash" : plan.attentionKernel;
    if (c.kernels.length > 0) expect(c.kernels).toEqual([traced]);
    expect(workspaces).toBe((c.charged.cublasWorkspaceBytes ?? 0) * (c.charged.cublasWorkspaces ?? 0));
  });
});

/**
 * KNOWN GAPS, pinned so they cannot move unnoticed: vramfit's peak / the trace's, as measured when
 * the fixture was made (docs/memory-model.md, "Against the tracer"). Below 1 is the dangerous side.
 * - vit-b16 (torchvision vit_b_16) amp at batch 8 (1.2 % high, the safe side), in the last layer's
 *   backward: the activations agree to the byte, but vramfit plans a layer's gradients from the
 *   layer's first backward op (28 MB of fp32 gradients), where autograd makes each matrix's in its
 *   own backward (fp32 and bf16 are 0.9 % high for the same reason, within 1%).
 * - bert-base fp32 SGD seq 512 at batch 4 (1.1 % high, the safe side), for the same reason: vramfit's peak is the
 *   last layer's down_proj backward holding all 28.3 MB of that layer's fp32 gradients, where the trace's peak holds
 *   only down_proj's own 9.4 MB so far (the 18.9 MB between is the whole gap; 0.6 % at batch 8).
 */
const KNOWN_GAPS: Record<string, Record<number, number>> = {
  "vit-b16 amp adamw": { 8: 1.012 },
  "bert-base fp32 sgd seq512": { 4: 1.011 },
};

const comparisons = fixture.cases.flatMap((c) => fixture.batches.map((b) => [c.case, b, c] as const));

describe("the analytic timeline's peak within 1% of the trace's, at both batches", () => {
  test("the fixture covers GPT-2 (small to XL), GPT-3, Llama (to Llama-2-70B), Mistral, Mixtral, Qwen, Gemma, BERT, ResNet (18 to 152), VGG and ViT presets (every one but sd2.1-unet), at least 40 cases, fp32, fp16, bf16 and amp, with and without checkpointing", () => {
    expect(fixture.command).toContain("scripts/reference/trace-agreement.mjs");
    expect(new Set(fixture.cases.map((c) => c.preset)).size).toBeGreaterThanOrEqual(28);
    expect(fixture.cases.length).toBeGreaterThanOrEqual(109);
    expect(comparisons.length).toBeGreaterThanOrEqual(218);
    expect(comparisons.filter(([name, b]) => KNOWN_GAPS[name]?.[b] === undefined).length).toBeGreaterThanOrEqual(216);
  });

  test.each(comparisons.filter(([name, b]) => KNOWN_GAPS[name]?.[b] === undefined))("%s at batch %d", (_, b, c) => {
    expect(Math.abs(peakRatio(library, c, b) - 1)).toBeLessThan(0.01);
  });

  test.each(comparisons.filter(([name, b]) => KNOWN_GAPS[name]?.[b] !== undefined))("KNOWN GAP %s at batch %d", (name, b, c) => {
    expect(peakRatio(library, c, b)).toBeCloseTo(KNOWN_GAPS[name]![b]!, 3);
  });
});
