// The run options that change how a model is held: adapters, quantized weights and caches, resident encoders.
import { parseCount } from "../count.js";
import { invalidArgument } from "../errors.js";
import { LIMITS } from "../workload/limits.js";
import { DEFAULT_LORA_TARGETS, parseLoraTargets, type LoraSetup } from "./lora.js";
import { isQuantized, parseKvCacheFormat, parseWeightFormat, type KvCacheFormat, type WeightFormat } from "./quantization.js";
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
  /** Expert-parallel degree: ranks a mixture of experts' experts are sharded over (src/plan/moe.ts); unset: 1. */
  ep?: number;
  /** Expert capacity factor: token slots per expert × E / (k × tokens); unset: 1 (dropless, no padding). */
  capacityFactor?: number;
  /** DDP's `gradient_as_bucket_view=True`: the gradients are views into its buckets (src/plan/dataParallel.ts). */
  ddpBucketView?: boolean;
}

/**
 * What the model options' rules read of the rest of the run: setup.ts's RunSetup is one (named
 * here rather than imported, so setup.ts, which builds on this file, is not imported back).
 */
export type ModelRun = ModelSetup & { mode: string; gpus?: number; zeroStage?: number };

/** Every field of ModelSetup and ModelSetupOptions (src/validate.ts checks the lists are complete). */
export const MODEL_SETUP_FIELDS = ["lora", "weights", "kvCache", "residentEncoders", "ep", "capacityFactor", "ddpBucketView"] as const;
export const MODEL_SETUP_OPTION_FIELDS = ["loraRank", "loraTargets", "weights", "kvCache", "residentEncoders", "ep", "capacityFactor", "ddpBucketView"] as const;

/** The largest capacity factor accepted (implementations use 1–2; 64 is far beyond any). */
export const MAX_CAPACITY_FACTOR = 64;

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
  /** `--ep N`. */
  ep?: string | number;
  /** `--capacity-factor C`. */
  capacityFactor?: string | number;
  /** `--ddp-bucket-view`. */
  ddpBucketView?: boolean;
}

/** A capacity factor: a decimal from 1 to MAX_CAPACITY_FACTOR (`1.25`). */
export function parseCapacityFactor(option: string, value: string | number): number {
  const text = String(value).trim();
  const n = Number(text);
  if ((typeof value !== "string" && typeof value !== "number") || !/^[0-9]+(\.[0-9]+)?$/.test(text) || !(n >= 1 && n <= MAX_CAPACITY_FACTOR)) {
    throw invalidArgument(option, value, `a number from 1 to ${MAX_CAPACITY_FACTOR} (token slots per expert over its even share; 1: dropless)`);
  }
  return n;
}

/** Validates the model options into `setup` (checkModelSetupRules checks them against the rest of the run). */
export function parseModelSetup(options: ModelSetupOptions, setup: ModelRun): void {
  if (options.loraRank !== undefined) {
    const rank = parseCount("--lora-rank", options.loraRank, 1, { max: LIMITS.dimension, what: "a dimension" });
    setup.lora = { rank, targets: options.loraTargets !== undefined ? parseLoraTargets(options.loraTargets) : [...DEFAULT_LORA_TARGETS] };
  } else if (options.loraTargets !== undefined) {
    throw invalidArgument("--lora-targets", options.loraTargets, "--lora-rank R with it (the adapters' rank)");
  }
  if (options.weights !== undefined) setup.weights = parseWeightFormat(options.weights);
  if (options.kvCache !== undefined) setup.kvCache = parseKvCacheFormat(options.kvCache);
  if (options.residentEncoders) setup.residentEncoders = true;
  if (options.ep !== undefined) setup.ep = parseCount("--ep", options.ep, 1, { max: LIMITS.gpus, what: "GPUs" });
  if (options.capacityFactor !== undefined) setup.capacityFactor = parseCapacityFactor("--capacity-factor", options.capacityFactor);
  if (options.ddpBucketView) setup.ddpBucketView = true;
}

/**
 * The rules between the model options and the run, for parseSetup and for a RunSetup a library
 * caller built: quantized weights (8 bits or fewer) cannot be trained, only adapted (QLoRA:
 * `--weights nf4 --lora-rank R`) or served; a KV cache format applies to inference.
 */
export function checkModelSetupRules(setup: ModelRun): void {
  if (setup.mode === "train" && isQuantized(setup.weights) && setup.lora === undefined) {
    throw invalidArgument("--weights", setup.weights, `--lora-rank R with it, or --mode infer (${setup.weights} weights are frozen: training adapts them, QLoRA-style)`);
  }
  if (setup.ddpBucketView === true && !(setup.mode === "train" && (setup.gpus ?? 1) > 1 && (setup.zeroStage ?? 0) === 0)) {
    throw invalidArgument("--ddp-bucket-view", true, "training over --gpus N > 1 without ZeRO (PyTorch DDP's gradient_as_bucket_view)");
  }
  if (setup.mode === "train" && setup.kvCache !== undefined) {
    throw invalidArgument("--kv-cache", setup.kvCache, "--mode infer (training keeps no KV cache)");
  }
}

/** The model options of a setup as `describeSetup` prints them. */
export function describeModelSetup(setup: ModelSetup & { gpus?: number }): string[] {
  const parts: string[] = [];
  if (setup.lora !== undefined) parts.push(`LoRA r=${setup.lora.rank} on ${setup.lora.targets.join(",")}`);
  if (setup.weights !== undefined) parts.push(`weights ${setup.weights}`);
  if (setup.kvCache !== undefined) parts.push(`kv-cache ${setup.kvCache}`);
  if (setup.ep !== undefined && setup.ep > 1) parts.push(`experts over ${setup.ep} of ${setup.gpus ?? 1} GPUs`);
  if (setup.capacityFactor !== undefined) parts.push(`capacity factor ${setup.capacityFactor}`);
  if (setup.ddpBucketView === true) parts.push("DDP gradient_as_bucket_view");
  return parts;
}

/** The defaults the model options took, for the CLI to print: PEFT's default targets when only the rank is given. */
export function assumedModelDefaults(options: ModelSetupOptions): string[] {
  return options.loraRank !== undefined && options.loraTargets === undefined ? [`--lora-targets ${DEFAULT_LORA_TARGETS.join(",")}`] : [];
}

/** Refuses model options the workload has nothing for (`refuse` throws the one-line error naming the option). */
export function checkModelSetupApplies(workload: Workload, setup: ModelRun, refuse: (option: string, value: unknown, why: string) => never): void {
  if (setup.residentEncoders === true && workload.kind !== "unet") refuse("--resident-encoders", true, "only a diffusion UNet trains beside a frozen text encoder and VAE");
  const experts = workload.kind === "transformer" && workload.architecture.experts !== undefined;
  if ((setup.ep ?? 1) !== 1 && !experts) refuse("--ep", setup.ep, "expert parallelism shards a mixture of experts");
  if (setup.capacityFactor !== undefined && !experts) refuse("--capacity-factor", setup.capacityFactor, "it has no experts to route tokens to");
  if (workload.kind !== "transformer") {
    if (setup.lora !== undefined) refuse("--lora-rank", setup.lora.rank, "adapters go on a transformer's projections");
    if (setup.weights !== undefined) refuse("--weights", setup.weights, "weight formats apply to a transformer's linear layers");
    if (setup.kvCache !== undefined) refuse("--kv-cache", setup.kvCache, "it has no KV cache");
    return;
  }
  if (setup.kvCache !== undefined && workload.architecture.kind === "encoder") refuse("--kv-cache", setup.kvCache, "only decoders keep a KV cache");
}
