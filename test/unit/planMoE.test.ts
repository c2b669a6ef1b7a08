// A mixture of experts (Mixtral 8x7B): every expert resident, expert parallelism, the router, routed-token activations.
import { describe, expect, test } from "vitest";
import { buildPlan } from "../../src/plan/buildPlan.js";
import { bytesByCategory, type MemoryPlan } from "../../src/plan/memoryPlan.js";
import { parseSetup, type RunSetup } from "../../src/plan/setup.js";
import { presetWorkload } from "../../src/workload/presets.js";
import { invalidMessage } from "./invalidMessage.js";

const mixtral = presetWorkload("mixtral-8x7b")!;
const plan = (setup: Partial<RunSetup>): MemoryPlan => buildPlan(mixtral, { mode: "train", precision: "bf16", optimizer: "adamw", seq: 1024, ...setup });
const tensor = (p: MemoryPlan, name: string) => p.tensors.find((t) => t.name === name);

const TOTAL = 46_702_792_704; // HF mistralai/Mixtral-8x7B-v0.1
const EXPERTS = 32 * 8 * 3 * 4096 * 14336; // every layer's 8 SwiGLU experts
const s = 1024;

describe("weights: every expert is resident, whichever two a token uses", () => {
  test("bf16 inference holds all 46,702,792,704 parameters: 93.4 GB", () => {
    expect(bytesByCategory(plan({ mode: "infer" }), 1).parameters).toBe(2 * TOTAL);
  });

  test("--ep 2 --gpus 2 shards the experts: each GPU holds 4 of every layer's 8, and the rest whole", () => {
    const sharded = bytesByCategory(plan({ mode: "infer", ep: 2, gpus: 2 }), 1).parameters;
    expect(sharded).toBe(2 * (TOTAL - EXPERTS) + 2 * (EXPERTS / 2));
  });

  test("ZeRO partitions the experts' optimizer states over the ranks that hold the same experts (gpus / ep)", () => {
    const p = plan({ zeroStage: 1, gpus: 4, ep: 2 });
    const expertsPerLayer = EXPERTS / 32 / 2; // this rank's 4 experts of layer 0
    expect(tensor(p, "layers.0.experts.optimizer.exp_avg")!.fixedBytes).toBe(Math.ceil((2 * expertsPerLayer) / 2)); // bf16 states over 4 / 2 ranks
    const sharedPerLayer = (TOTAL - EXPERTS - 2 * 32000 * 4096 - 4096) / 32;
    expect(tensor(p, "layers.0.optimizer.exp_avg")!.fixedBytes).toBe(Math.ceil((2 * sharedPerLayer) / 4)); // over all 4
  });
});

describe("activations of a routed layer (Hugging Face's MixtralSparseMoeBlock)", () => {
  test("the router: logits (e·s·E), fp32 routing probabilities, int64 indices of the 2 chosen experts", () => {
    const p = plan({});
    expect(tensor(p, "layers.0.moe.router_logits")!.perSampleBytes).toBe(2 * s * 8);
    expect(tensor(p, "layers.0.moe.routing_probs_fp32")!.perSampleBytes).toBe(4 * s * 8);
    expect(tensor(p, "layers.0.moe.expert_indices")!.perSampleBytes).toBe(8 * s * 2);
  });

  test("experts see every token twice (top-2): their tensors hold 2·s token slots, not 8·s", () => {
    const p = plan({});
    expect(tensor(p, "layers.0.moe.experts.gate")!.perSampleBytes).toBe(2 * 2 * s * 14336);
    expect(tensor(p, "layers.0.moe.expert_inputs")!.perSampleBytes).toBe(2 * 2 * s * 4096);
  });

  test("a capacity factor pads each expert's buffer: 1.25 gives 1.25 × 2 × s slots", () => {
    const p = plan({ capacityFactor: 1.25 });
    expect(tensor(p, "layers.0.moe.experts.up")!.perSampleBytes).toBe(2 * Math.ceil(1.25 * 2 * s) * 14336);
  });

  test("with adapters the router is frozen: its input and the experts' outputs are not kept", () => {
    const p = plan({ lora: { rank: 8, targets: ["q", "v"] } });
    // The step still computes them (transients on the timeline); it does not keep them for backward.
    const kept = (name: string) => tensor(p, name)?.category === "activations";
    expect(kept("layers.0.moe.expert_outputs")).toBe(false);
    expect(kept("layers.0.mlp.input")).toBe(false);
    expect(kept("layers.0.moe.expert_inputs")).toBe(false);
    expect(kept("layers.0.moe.experts.act_output")).toBe(true);
    expect(kept("layers.0.moe.routing_probs_fp32")).toBe(true);
  });

  test("inference works on one expert's share of the tokens at a time: 2·s/8", () => {
    const p = plan({ mode: "infer" });
    expect(tensor(p, "workspace.moe.expert_up")!.perSampleBytes).toBe(2 * (2 * s / 8) * 14336);
  });
});

describe("options that do not apply", () => {
  test.each([
    [{ ep: 3, gpus: 3 }, /--ep: expected a divisor of the 8 experts/],
    [{ ep: 2 }, /--ep: expected a divisor of --gpus \(1\)/],
  ])("%o", (setup, expected) => {
    expect(invalidMessage(() => plan(setup))).toMatch(expected);
  });
  test("a capacity factor below 1 or not a number", () => {
    expect(invalidMessage(() => parseSetup({ capacityFactor: "0.5" }))).toMatch(/--capacity-factor: expected a number from 1 to 64/);
    expect(invalidMessage(() => parseSetup({ capacityFactor: "x" }))).toMatch(/--capacity-factor/);
  });
});
