// The run options that change how a model is held: adapters, quantized weights and caches, resident encoders.
import { parseCount } from "../count.js";
import { invalidArgument } from "../errors.js";
import { LIMITS } from "../workload/limits.js";
import { DEFAULT_LORA_TARGETS, parseLoraTargets, type LoraSetup } from "./lora.js";
import { isQuantized, parseKvCacheFormat, parseWeightFormat, type KvCacheFormat, type WeightFormat } from "./quantization.js";
import type { RunSetup } from "./setup.js";
import type { Workload } from "../workload/workload.js";

/** The model options of a RunSetup; each unset means the plain model (no adapters, the precision's dtypes). */
export interface ModelSetup {
  /** LoRA adapters on a frozen base model (src/plan/lora.ts). */
  lora?: LoraSetup;
  /** Storage of the layers' linear weights (src/plan/quantization.ts); unset: the precision's. */
  weights?: WeightFormat;
  /** Storage of the KV cache (inference); unset: the activations' dtype. */
  kvCache?: KvCacheFormat;
  /** A diffusion UNet's frozen text encoder and VAE also on the GPU (src/plan/unetEncoders.ts). */
  residentEncoders?: boolean;
}

/** Every field of ModelSetup and ModelSetupOptions (src/validate.ts checks the lists are complete). */
export const MODEL_SETUP_FIELDS = ["lora", "weights", "kvCache", "residentEncoders"] as const;
export const MODEL_SETUP_OPTION_FIELDS = ["loraRank", "loraTargets", "weights", "kvCache", "residentEncoders"] as const;

/** The model options as commander hands them over. */
export interface ModelSetupOptions {
  /** `--lora-rank R`. */
  loraRank?: string | number;
  /** `--lora-targets q,k,v,o,gate,up,down|all-linear`. */
  loraTargets?: string;
  /** `--weights fp16|bf16|fp8|int8|nf4|int4`. */
  weights?: string;
  /** `--kv-cache fp16|fp8|int8`. */
  kvCache?: string;
  /** `--resident-encoders`. */
  residentEncoders?: boolean;
}

/** Validates the model options into `setup` (checkModelSetupRules checks them against the rest of the run). */
export function parseModelSetup(options: ModelSetupOptions, setup: RunSetup): void {
  if (options.loraRank !== undefined) {
    const rank = parseCount("--lora-rank", options.loraRank, 1, { max: LIMITS.dimension, what: "a dimension" });
    setup.lora = { rank, targets: options.loraTargets !== undefined ? parseLoraTargets(options.loraTargets) : [...DEFAULT_LORA_TARGETS] };
  } else if (options.loraTargets !== undefined) {
    throw invalidArgument("--lora-targets", options.loraTargets, "--lora-rank R with it (the adapters' rank)");
  }
  if (options.weights !== undefined) setup.weights = parseWeightFormat(options.weights);
  if (options.kvCache !== undefined) setup.kvCache = parseKvCacheFormat(options.kvCache);
  if (options.residentEncoders) setup.residentEncoders = true;
}

/**
 * The rules between the model options and the run, for parseSetup and for a RunSetup a library
 * caller built: quantized weights (8 bits or fewer) cannot be trained, only adapted (QLoRA:
 * `--weights nf4 --lora-rank R`) or served; a KV cache format applies to inference.
 */
export function checkModelSetupRules(setup: RunSetup): void {
  if (setup.mode === "train" && isQuantized(setup.weights) && setup.lora === undefined) {
    throw invalidArgument("--weights", setup.weights, `--lora-rank R with it, or --mode infer (${setup.weights} weights are frozen: training adapts them, QLoRA-style)`);
  }
  if (setup.mode === "train" && setup.kvCache !== undefined) {
    throw invalidArgument("--kv-cache", setup.kvCache, "--mode infer (training keeps no KV cache)");
  }
}

/** The model options of a setup as `describeSetup` prints them. */
export function describeModelSetup(setup: ModelSetup): string[] {
  const parts: string[] = [];
  if (setup.lora !== undefined) parts.push(`LoRA r=${setup.lora.rank} on ${setup.lora.targets.join(",")}`);
  if (setup.weights !== undefined) parts.push(`weights ${setup.weights}`);
  if (setup.kvCache !== undefined) parts.push(`kv-cache ${setup.kvCache}`);
  return parts;
}

/** The defaults the model options took, for the CLI to print: PEFT's default targets when only the rank is given. */
export function assumedModelDefaults(options: ModelSetupOptions): string[] {
  return options.loraRank !== undefined && options.loraTargets === undefined ? [`--lora-targets ${DEFAULT_LORA_TARGETS.join(",")}`] : [];
}

/** Refuses model options the workload has nothing for (`refuse` throws the one-line error naming the option). */
export function checkModelSetupApplies(workload: Workload, setup: RunSetup, refuse: (option: string, value: unknown, why: string) => never): void {
  if (setup.residentEncoders === true && workload.kind !== "unet") refuse("--resident-encoders", true, "only a diffusion UNet trains beside a frozen text encoder and VAE");
  if (workload.kind !== "transformer") {
    if (setup.lora !== undefined) refuse("--lora-rank", setup.lora.rank, "adapters go on a transformer's projections");
    if (setup.weights !== undefined) refuse("--weights", setup.weights, "weight formats apply to a transformer's linear layers");
    if (setup.kvCache !== undefined) refuse("--kv-cache", setup.kvCache, "it has no KV cache");
    return;
  }
  if (setup.kvCache !== undefined && workload.architecture.kind === "encoder") refuse("--kv-cache", setup.kvCache, "only decoders keep a KV cache");
}
