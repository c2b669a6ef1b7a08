// The run options that say how the user's training code runs a step: the target's kernels, the loss, dropout, gradient lifetimes.
import { parseCount } from "../count.js";
import { invalidArgument } from "../errors.js";
import { DEFAULT_COMPUTE_CAPABILITY, parseComputeCapability } from "./computeCapability.js";

/**
 * Hugging Face's causal-LM loss: `current` is transformers ≥ 4.46 (`ForCausalLMLoss` in
 * transformers/loss/loss_utils.py: the labels are padded and shifted, the logits upcast to fp32
 * once, no logits-sized shift copy); `legacy` is the older model code
 * (`shift_logits = lm_logits[..., :-1, :].contiguous()`).
 */
export const HF_LOSSES = ["current", "legacy"] as const;
export type HfLoss = (typeof HF_LOSSES)[number];

/** `optimizer.zero_grad(set_to_none=…)`: `none` (True, PyTorch 2's default) frees the gradients, `zeros` (False) keeps them all step. */
export const ZERO_GRAD_KINDS = ["none", "zeros"] as const;
export type ZeroGrad = (typeof ZERO_GRAD_KINDS)[number];

export interface StepSetup {
  /** The target GPU's compute capability, `major.minor` (src/plan/computeCapability.ts); unset: 9.0. */
  computeCapability?: string;
  /** Hugging Face's causal-LM loss; unset: `current`. */
  hfLoss?: HfLoss;
  /** PEFT's `lora_dropout`; unset: 0, LoraConfig's default (peft/tuners/lora/config.py). */
  loraDropout?: number;
  /** Micro-batches whose gradients are summed before each optimizer step; unset: 1. */
  gradAccum?: number;
  /** How `zero_grad` leaves the gradients; unset: `none`. */
  zeroGrad?: ZeroGrad;
}

/** Every field of StepSetup and StepSetupOptions (src/validate.ts checks the lists are complete). */
export const STEP_SETUP_FIELDS = ["computeCapability", "hfLoss", "loraDropout", "gradAccum", "zeroGrad"] as const;
export const STEP_SETUP_OPTION_FIELDS = ["computeCapability", "hfLoss", "loraDropout", "gradAccum", "zeroGrad"] as const;

/** The options as commander hands them over. */
export interface StepSetupOptions {
  /** `--compute-capability X.Y`. */
  computeCapability?: string | number;
  /** `--hf-loss current|legacy`. */
  hfLoss?: string;
  /** `--lora-dropout P`. */
  loraDropout?: string | number;
  /** `--grad-accum N`. */
  gradAccum?: string | number;
  /** `--zero-grad none|zeros`. */
  zeroGrad?: string;
}

/** The most micro-batches accepted: far beyond any run, small enough to stay exact. */
export const MAX_GRAD_ACCUM = 1 << 20;

/** A probability in [0, 1) (`--lora-dropout 0.05`). */
export function parseProbability(option: string, value: string | number): number {
  const text = String(value).trim();
  const p = Number(text);
  if ((typeof value !== "string" && typeof value !== "number") || !/^(0|0?\.[0-9]+|0\.0*)$/.test(text) || !(p >= 0 && p < 1)) {
    throw invalidArgument(option, value, "a probability from 0 to below 1, e.g. 0.05");
  }
  return p;
}

function oneOf<T extends string>(option: string, value: string, allowed: readonly T[]): T {
  if ((allowed as readonly string[]).includes(value)) return value as T;
  throw invalidArgument(option, value, `one of ${allowed.join(", ")}`);
}

/** Validates the step options into `setup`. */
export function parseStepSetup(options: StepSetupOptions, setup: StepSetup): void {
  if (options.computeCapability !== undefined) {
    const cc = parseComputeCapability("--compute-capability", options.computeCapability);
    setup.computeCapability = `${cc.major}.${cc.minor}`;
  }
  if (options.hfLoss !== undefined) setup.hfLoss = oneOf("--hf-loss", options.hfLoss, HF_LOSSES);
  if (options.loraDropout !== undefined) setup.loraDropout = parseProbability("--lora-dropout", options.loraDropout);
  if (options.gradAccum !== undefined) setup.gradAccum = parseCount("--grad-accum", options.gradAccum, 1, { max: MAX_GRAD_ACCUM, what: "micro-batches" });
  if (options.zeroGrad !== undefined) setup.zeroGrad = oneOf("--zero-grad", options.zeroGrad, ZERO_GRAD_KINDS);
}

/** The rules between the step options and the run: dropout on adapters needs adapters; accumulation and zero_grad are for training. */
export function checkStepSetupRules(setup: StepSetup & { mode?: string; lora?: unknown }): void {
  if (setup.loraDropout !== undefined && setup.loraDropout > 0 && setup.lora === undefined) {
    throw invalidArgument("--lora-dropout", setup.loraDropout, "--lora-rank R with it (the dropout is the adapters')");
  }
  if (setup.mode === "infer" && (setup.gradAccum ?? 1) > 1) throw invalidArgument("--grad-accum", setup.gradAccum, "--mode train (inference has no gradients)");
  if (setup.mode === "infer" && setup.zeroGrad === "zeros") throw invalidArgument("--zero-grad", setup.zeroGrad, "--mode train (inference has no gradients)");
}

/** Whether the gradients of the previous micro-batch or step are live when the step starts: accumulation, or zero_grad(set_to_none=False). */
export function gradientsLiveAllStep(setup: StepSetup): boolean {
  return (setup.gradAccum ?? 1) > 1 || setup.zeroGrad === "zeros";
}

/** The step options as `describeSetup` prints them (each only where it is not the default). */
export function describeStepSetup(setup: StepSetup): string[] {
  const parts: string[] = [];
  if (setup.computeCapability !== undefined && setup.computeCapability !== DEFAULT_COMPUTE_CAPABILITY) parts.push(`compute capability ${setup.computeCapability}`);
  if (setup.hfLoss === "legacy") parts.push("legacy HF loss (shifted logits copy)");
  if (setup.loraDropout !== undefined && setup.loraDropout > 0) parts.push(`LoRA dropout ${setup.loraDropout}`);
  if ((setup.gradAccum ?? 1) > 1) parts.push(`${setup.gradAccum} accumulated micro-batches`);
  if (setup.zeroGrad === "zeros") parts.push("zero_grad(set_to_none=False)");
  return parts;
}
