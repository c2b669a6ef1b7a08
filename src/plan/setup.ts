// How a workload is run: training or inference, precision, optimizer, sequence/image size, parallelism.
import { parseCount } from "../count.js";
import { LIMITS } from "../workload/limits.js";
import { invalidArgument } from "../errors.js";
import type { Workload } from "../workload/workload.js";
import { OPTIMIZERS, PRECISIONS, ZERO_STAGES, type Optimizer, type Precision, type ZeroStage } from "./bytesPerParameter.js";
import { assumedModelDefaults, checkModelSetupRules, describeModelSetup, parseModelSetup, type ModelSetup, type ModelSetupOptions } from "./modelSetup.js";
import { OFFLOAD_KINDS, offloads, type Offload } from "./offload.js";
import { OPTIMIZER_IMPLS, optimizerTemporaries, type OptimizerImpl } from "./optimizerStep.js";
import { checkStepSetupRules, describeStepSetup, parseStepSetup, type StepSetup, type StepSetupOptions } from "./stepSetup.js";

export const MODES = ["train", "infer"] as const;
export type Mode = (typeof MODES)[number];

/** `selective`: recompute the attention core (Korthikanti et al. 2022, §5); `full`: keep only each layer's (block's) input. */
export const CHECKPOINTING = ["none", "selective", "full"] as const;
export type Checkpointing = (typeof CHECKPOINTING)[number];

/**
 * `sdpa`: PyTorch's scaled_dot_product_attention picks the kernel by dtype, grouped-query attention,
 * mask, head size and the target's compute capability (src/plan/attentionKernel.ts), as transformers
 * ≥ 4.36 runs by default; `eager`: the Python ops, the attention matrix materialized and saved; or
 * one SDPA kernel named: `flash`, `cudnn`, `efficient` (fused, no s² tensor), `math` (s² scores).
 */
export const ATTENTION_KINDS = ["sdpa", "eager", "flash", "cudnn", "efficient", "math"] as const;
export type AttentionKind = (typeof ATTENTION_KINDS)[number];

export interface RunSetup extends ModelSetup, StepSetup {
  mode: Mode;
  precision: Precision;
  optimizer: Optimizer;
  /** How `optimizer.step()` runs (src/plan/optimizerStep.ts); unset: `foreach`, PyTorch 2's default on CUDA. */
  optimizerImpl?: OptimizerImpl;
  /** Tokens per sample (transformers); unset: the model's context length. */
  seq?: number;
  /** Pixels per side of the input image (CNNs, ViT); unset: the model's (224 for the presets). */
  image?: number;
  /** Activation recomputation; unset: `none`. */
  checkpointing?: Checkpointing;
  /** Attention implementation; unset: `sdpa`, PyTorch's own choice. */
  attention?: AttentionKind;
  /** ZeRO stage 0–3, partitioning training states over `gpus` data-parallel ranks; unset: 0. */
  zeroStage?: ZeroStage;
  /** Data-parallel GPUs (what ZeRO partitions over); unset: 1. */
  gpus?: number;
  /** Tensor-parallel degree (Megatron-style); unset: 1. */
  tp?: number;
  /** Megatron sequence parallelism alongside tensor parallelism (Korthikanti et al. 2022, §4.2.2); unset: false. */
  sequenceParallel?: boolean;
  /** Inference: tokens generated after the `seq` prompt tokens (the KV cache holds both); unset: 0. */
  generatedTokens?: number;
  /** Model states kept in host memory (ZeRO-Offload / ZeRO-Infinity, src/plan/offload.ts); unset: none. */
  offload?: Offload;
  /** GPUs (ranks) sharing one host's memory; unset: every GPU of the job (--gpus × --tp), one node. */
  gpusPerNode?: number;
}

/** The common case, printed by the CLI so the user sees what was assumed. */
export const DEFAULT_SETUP: RunSetup = { mode: "train", precision: "amp", optimizer: "adamw" };

/** Defaults of the optional fields (seq and image default to the model's own). */
export const SETUP_DEFAULTS = {
  optimizerImpl: "foreach",
  checkpointing: "none",
  attention: "sdpa",
  zeroStage: 0,
  gpus: 1,
  tp: 1,
  sequenceParallel: false,
  generatedTokens: 0,
  offload: "none",
} as const satisfies Partial<RunSetup>;

/** A RunSetup with every optional field but seq/image/gpusPerNode and the model options (src/plan/modelSetup.ts) filled in. */
export type ResolvedSetup = Required<Omit<RunSetup, "seq" | "image" | "gpusPerNode" | keyof ModelSetup | keyof StepSetup>> & Pick<RunSetup, "seq" | "image" | "gpusPerNode"> & ModelSetup & StepSetup;

export function resolveSetup(setup: RunSetup): ResolvedSetup {
  return {
    ...setup,
    optimizerImpl: setup.optimizerImpl ?? SETUP_DEFAULTS.optimizerImpl,
    checkpointing: setup.checkpointing ?? SETUP_DEFAULTS.checkpointing,
    attention: setup.attention ?? SETUP_DEFAULTS.attention,
    zeroStage: setup.zeroStage ?? SETUP_DEFAULTS.zeroStage,
    gpus: setup.gpus ?? SETUP_DEFAULTS.gpus,
    tp: setup.tp ?? SETUP_DEFAULTS.tp,
    sequenceParallel: setup.sequenceParallel ?? SETUP_DEFAULTS.sequenceParallel,
    generatedTokens: setup.generatedTokens ?? SETUP_DEFAULTS.generatedTokens,
    offload: setup.offload ?? SETUP_DEFAULTS.offload,
  };
}

/** Ranks whose offloaded states share one host's memory: the job's GPUs, at most --gpus-per-node. */
export function ranksPerHost(setup: RunSetup): number {
  const s = resolveSetup(setup);
  const gpus = s.gpus * s.tp;
  return Math.min(gpus, s.gpusPerNode ?? gpus);
}

/** The run options as commander hands them over: strings (numbers from library callers), flags as booleans. */
export interface SetupOptions extends ModelSetupOptions, StepSetupOptions {
  mode?: string;
  precision?: string;
  optimizer?: string;
  /** `--optimizer-impl foreach|single|fused`. */
  optimizerImpl?: string;
  seq?: string | number;
  image?: string | number;
  /** `--checkpointing [kind]`: a bare flag (true) means `full`. */
  checkpointing?: string | boolean;
  attention?: string;
  zero?: string | number;
  gpus?: string | number;
  tp?: string | number;
  sequenceParallel?: boolean;
  /** `--generate N`: tokens generated after the prompt (inference). */
  generate?: string | number;
  /** `--offload optimizer|params|both`. */
  offload?: string;
  /** `--gpus-per-node N`. */
  gpusPerNode?: string | number;
}

function oneOf<T extends string>(option: string, value: string, allowed: readonly T[]): T {
  if ((allowed as readonly string[]).includes(value)) return value as T;
  throw invalidArgument(option, value, `one of ${allowed.join(", ")}`);
}

/**
 * Validates the run options (`--mode`, `--precision`, `--optimizer`, `--optimizer-impl`, `--seq`, `--image`,
 * `--checkpointing`, `--attention`, `--zero`, `--gpus`, `--tp`, `--sequence-parallel`,
 * `--generate`) into a RunSetup. Absent options keep their defaults (DEFAULT_SETUP,
 * SETUP_DEFAULTS; seq and image default to the model's). Bad values throw one-line errors
 * naming the option.
 */
export function parseSetup(options: SetupOptions): RunSetup {
  const setup: RunSetup = {
    mode: options.mode === undefined ? DEFAULT_SETUP.mode : oneOf("--mode", options.mode, MODES),
    precision: options.precision === undefined ? DEFAULT_SETUP.precision : oneOf("--precision", options.precision, PRECISIONS),
    optimizer: options.optimizer === undefined ? DEFAULT_SETUP.optimizer : oneOf("--optimizer", options.optimizer, OPTIMIZERS),
  };
  if (options.optimizerImpl !== undefined) setup.optimizerImpl = oneOf("--optimizer-impl", options.optimizerImpl, OPTIMIZER_IMPLS);
  const dimension = { max: LIMITS.dimension, what: "a dimension" };
  const gpus = { max: LIMITS.gpus, what: "GPUs" };
  if (options.seq !== undefined) setup.seq = parseCount("--seq", options.seq, 1, dimension);
  if (options.image !== undefined) setup.image = parseCount("--image", options.image, 1, dimension);
  if (options.checkpointing !== undefined && options.checkpointing !== false) {
    setup.checkpointing = options.checkpointing === true ? "full" : oneOf("--checkpointing", options.checkpointing, CHECKPOINTING);
  }
  if (options.attention !== undefined) setup.attention = oneOf("--attention", options.attention, ATTENTION_KINDS);
  if (options.zero !== undefined) {
    const stage = String(options.zero);
    if (!(ZERO_STAGES as readonly number[]).map(String).includes(stage)) throw invalidArgument("--zero", options.zero, "one of 0, 1, 2, 3");
    setup.zeroStage = Number(stage) as ZeroStage;
  }
  if (options.gpus !== undefined) setup.gpus = parseCount("--gpus", options.gpus, 1, gpus);
  if (options.tp !== undefined) setup.tp = parseCount("--tp", options.tp, 1, gpus);
  if (options.sequenceParallel) setup.sequenceParallel = true;
  if (options.generate !== undefined) setup.generatedTokens = parseCount("--generate", options.generate, 0, dimension);
  if (options.offload !== undefined) setup.offload = oneOf("--offload", options.offload, OFFLOAD_KINDS);
  if (options.gpusPerNode !== undefined) setup.gpusPerNode = parseCount("--gpus-per-node", options.gpusPerNode, 1, gpus);
  parseModelSetup(options, setup);
  parseStepSetup(options, setup);

  checkSetupRules(setup, options);
  return setup;
}

/**
 * The rules between a setup's fields, for parseSetup and for a RunSetup a library caller built:
 * ZeRO and recomputation are for training, generated tokens for inference, sequence parallelism
 * needs tensor parallelism, offloading as DeepSpeed offers it. `given` holds the values as typed,
 * for the messages.
 */
export function checkSetupRules(setup: RunSetup, given: { zero?: unknown; generate?: unknown } = {}): void {
  if (setup.mode === "infer") {
    if ((setup.zeroStage ?? 0) > 0) throw invalidArgument("--zero", given.zero ?? setup.zeroStage, "0 with --mode infer (ZeRO partitions training states)");
    if (setup.checkpointing !== undefined && setup.checkpointing !== "none") {
      throw invalidArgument("--checkpointing", setup.checkpointing, "none with --mode infer (nothing is kept for backward)");
    }
  } else if (setup.generatedTokens !== undefined && setup.generatedTokens > 0) {
    throw invalidArgument("--generate", given.generate ?? setup.generatedTokens, "--mode infer (generated tokens apply to inference)");
  }
  if (setup.optimizerImpl === "fused" && setup.optimizer === "adam8bit") {
    throw invalidArgument("--optimizer-impl", "fused", "foreach or single with --optimizer adam8bit (bitsandbytes runs its own kernel)");
  }
  if (setup.sequenceParallel && (setup.tp ?? 1) === 1) {
    throw invalidArgument("--sequence-parallel", true, "--tp N with N > 1 (sequence parallelism splits along the tensor-parallel group)");
  }
  checkOffload(setup);
  checkModelSetupRules(setup);
  checkStepSetupRules(setup);
}

/**
 * Offloading as DeepSpeed offers it: optimizer offload is for training, on ZeRO partitions when
 * there is more than one data-parallel GPU; parameter offload when training needs ZeRO stage 3
 * (ZeRO-Infinity), and for inference streams the weights in layer by layer.
 */
export function checkOffload(setup: RunSetup): void {
  const offload = setup.offload ?? "none";
  const what = offloads(offload);
  if (setup.mode === "infer" && what.optimizer) {
    throw invalidArgument("--offload", offload, "params (or none) with --mode infer (there is no optimizer)");
  }
  if (setup.mode !== "train") return;
  const stage = setup.zeroStage ?? 0;
  if (what.params && stage !== 3) {
    throw invalidArgument("--offload", offload, "--zero 3 with parameter offload when training (ZeRO-Infinity offloads partitioned parameters)");
  }
  if (what.optimizer && stage === 0 && (setup.gpus ?? 1) > 1) {
    throw invalidArgument("--offload", offload, "--zero 1, 2 or 3 with --gpus > 1 (ZeRO-Offload offloads each GPU's ZeRO partition)");
  }
}

/**
 * One line naming every assumption of the setup, defaults included: what the CLI prints.
 * `transformer: false` leaves out what applies only to transformers (attention, tensor parallelism).
 */
export function describeSetup(setup: RunSetup, options: { transformer?: boolean } = {}): string {
  const s = resolveSetup(setup);
  const transformer = options.transformer ?? true;
  const parts: string[] = [s.mode, s.precision];
  if (s.mode === "train") parts.push(implementationMatters(s) ? `${s.optimizer} (${s.optimizerImpl})` : s.optimizer);
  // seq and image are the model's own when unset; a plan's description names the values it used.
  if (s.seq !== undefined) parts.push(`seq ${s.seq}`);
  if (s.image !== undefined) parts.push(`image ${s.image}`);
  if (transformer) parts.push(`attention ${s.attention}`);
  if (s.mode === "train") parts.push(`checkpointing ${s.checkpointing}`, `zero ${s.zeroStage} over ${s.gpus} GPU${s.gpus === 1 ? "" : "s"}`);
  if (transformer) parts.push(`tp ${s.tp}${s.sequenceParallel ? " with sequence parallelism" : ""}`);
  if (s.mode === "infer" && transformer) parts.push(`generate ${s.generatedTokens}`);
  if (s.offload !== "none") parts.push(`offload ${s.offload}`);
  parts.push(...describeModelSetup(s), ...describeStepSetup(s));
  return parts.join(", ");
}

/**
 * The defaults a setup took for options the user left out, as the options would be written
 * (`--precision amp`), for the CLI to print. seq and image are the model's and are named by the
 * plan's description instead.
 */
export function assumedDefaults(options: SetupOptions, workloadKind: Workload["kind"]): string[] {
  const assumed: string[] = [];
  const mode = options.mode ?? DEFAULT_SETUP.mode;
  if (options.mode === undefined) assumed.push(`--mode ${DEFAULT_SETUP.mode}`);
  if (options.precision === undefined) assumed.push(`--precision ${DEFAULT_SETUP.precision}`);
  if (mode === "train" && options.optimizer === undefined) assumed.push(`--optimizer ${DEFAULT_SETUP.optimizer}`);
  const optimizer = (options.optimizer ?? DEFAULT_SETUP.optimizer) as Optimizer;
  if (mode === "train" && options.optimizerImpl === undefined && implementationMatters({ optimizer, optimizerImpl: SETUP_DEFAULTS.optimizerImpl })) {
    assumed.push(`--optimizer-impl ${SETUP_DEFAULTS.optimizerImpl}`);
  }
  // Attention applies to transformers and UNets only; a raw affine workload has no layers to recompute.
  if ((workloadKind === "transformer" || workloadKind === "unet") && options.attention === undefined) assumed.push(`--attention ${SETUP_DEFAULTS.attention}`);
  if (workloadKind !== "affine" && mode === "train" && options.checkpointing === undefined) {
    assumed.push(`--checkpointing ${SETUP_DEFAULTS.checkpointing}`);
  }
  assumed.push(...assumedModelDefaults(options));
  return assumed;
}

/** Whether the optimizer's implementation changes its memory (it does for Adam: src/plan/optimizerStep.ts). */
function implementationMatters(setup: { optimizer: Optimizer; optimizerImpl: OptimizerImpl }): boolean {
  return OPTIMIZER_IMPLS.some((impl) => optimizerTemporaries(setup.optimizer, impl, 4).length > 0);
}
