// The library's checks of a RunSetup, of parseSetup's options, and of planMemory's arguments together.
import { object, shown, rejectUnknown, integer, oneOf, boolean, string, optionalFields } from "../checks.js";
import { invalidArgument } from "../errors.js";
import { LIMITS } from "../workload/limits.js";
import { PROJECTIONS } from "../workload/transformer.js";
import { validateWorkload } from "../workload/validateWorkload.js";
import { checkSetupApplies } from "./applicability.js";
import { OPTIMIZERS, PRECISIONS, ZERO_STAGES } from "./bytesPerParameter.js";
import { MAX_CAPACITY_FACTOR, MODEL_SETUP_FIELDS, MODEL_SETUP_OPTION_FIELDS } from "./modelSetup.js";
import { HF_LOSSES, MAX_GRAD_ACCUM, STEP_SETUP_FIELDS, STEP_SETUP_OPTION_FIELDS, ZERO_GRAD_KINDS } from "./stepSetup.js";
import { parseComputeCapability } from "./computeCapability.js";
import { OFFLOAD_KINDS } from "./offload.js";
import { OPTIMIZER_IMPLS } from "./optimizerStep.js";
import { KV_CACHE_FORMATS, WEIGHT_FORMATS } from "./quantization.js";
import { ATTENTION_KINDS, CHECKPOINTING, MODES, checkSetupRules, type RunSetup, type SetupOptions } from "./setup.js";

/** Every field of RunSetup; the type below fails to compile when one is added and not listed here. */
const RUN_SETUP_FIELDS = ["mode", "precision", "optimizer", "optimizerImpl", "seq", "image", "checkpointing", "attention", "zeroStage", "gpus", "tp", "sequenceParallel", "generatedTokens", "offload", "gpusPerNode", ...MODEL_SETUP_FIELDS, ...STEP_SETUP_FIELDS] as const;
type Unlisted = Exclude<keyof RunSetup, (typeof RUN_SETUP_FIELDS)[number]>;
const everyFieldListed: [Unlisted] extends [never] ? true : Unlisted = true;
void everyFieldListed;

/**
 * A RunSetup as `planMemory` takes it: `mode`, `precision` and `optimizer` required (`{}` would
 * describe ", , image 224"), every optional field of its type and range, no unknown field, and
 * the rules between fields that parseSetup applies to the CLI's options.
 */
export function validateSetup(value: unknown, label = "setup"): asserts value is RunSetup {
  const setup = object(label, value);
  rejectUnknown(label, setup, RUN_SETUP_FIELDS);
  oneOf(`${label}.mode`, setup.mode, MODES);
  oneOf(`${label}.precision`, setup.precision, PRECISIONS);
  oneOf(`${label}.optimizer`, setup.optimizer, OPTIMIZERS);
  const dimension = (l: string, v: unknown) => void integer(l, v, 1, LIMITS.dimension, "a dimension");
  const gpus = (l: string, v: unknown) => void integer(l, v, 1, LIMITS.gpus, "GPUs");
  optionalFields(label, setup, {
    optimizerImpl: (l, v) => oneOf(l, v, OPTIMIZER_IMPLS),
    seq: dimension,
    image: dimension,
    checkpointing: (l, v) => oneOf(l, v, CHECKPOINTING),
    attention: (l, v) => oneOf(l, v, ATTENTION_KINDS),
    zeroStage: (l, v) => oneOf(l, v, ZERO_STAGES),
    gpus,
    tp: gpus,
    sequenceParallel: boolean,
    generatedTokens: (l, v) => void integer(l, v, 0, LIMITS.dimension, "a dimension"),
    offload: (l, v) => oneOf(l, v, OFFLOAD_KINDS),
    gpusPerNode: gpus,
    lora: (l, v) => {
      const lora = object(l, v);
      rejectUnknown(l, lora, ["rank", "targets"]);
      dimension(`${l}.rank`, lora.rank);
      const targets = lora.targets;
      if (!Array.isArray(targets) || targets.length === 0 || targets.some((t) => !(PROJECTIONS as readonly unknown[]).includes(t)) || new Set(targets).size !== targets.length) {
        throw invalidArgument(`${l}.targets`, shown(targets), `a non-empty array of distinct projections: ${PROJECTIONS.join(", ")}`);
      }
    },
    weights: (l, v) => oneOf(l, v, WEIGHT_FORMATS),
    kvCache: (l, v) => oneOf(l, v, KV_CACHE_FORMATS),
    residentEncoders: boolean,
    ep: gpus,
    ddpBucketView: boolean,
    capacityFactor: (l, v) => {
      if (typeof v !== "number" || !(v >= 1 && v <= MAX_CAPACITY_FACTOR)) throw invalidArgument(l, shown(v), `a number from 1 to ${MAX_CAPACITY_FACTOR}`);
    },
    computeCapability: (l, v) => {
      if (typeof v !== "string") throw invalidArgument(l, shown(v), "a string such as \"9.0\"");
      parseComputeCapability(l, v);
    },
    hfLoss: (l, v) => oneOf(l, v, HF_LOSSES),
    loraDropout: (l, v) => {
      if (typeof v !== "number" || !(v >= 0 && v < 1)) throw invalidArgument(l, shown(v), "a probability from 0 to below 1");
    },
    gradAccum: (l, v) => void integer(l, v, 1, MAX_GRAD_ACCUM, "micro-batches"),
    zeroGrad: (l, v) => oneOf(l, v, ZERO_GRAD_KINDS),
  });
  checkSetupRules(setup as unknown as RunSetup);
}

/** `planMemory(workload, setup)`: both valid, and the setup applicable to the workload. */
export function validatePlanMemory(workload: unknown, setup: unknown): void {
  validateWorkload(workload);
  validateSetup(setup);
  checkSetupApplies(workload, setup);
}

/** Every field of SetupOptions; the type below fails to compile when one is added and not listed here. */
export const SETUP_OPTION_FIELDS = ["mode", "precision", "optimizer", "optimizerImpl", "seq", "image", "checkpointing", "attention", "zero", "gpus", "tp", "sequenceParallel", "generate", "offload", "gpusPerNode", ...MODEL_SETUP_OPTION_FIELDS, ...STEP_SETUP_OPTION_FIELDS] as const;
type UnlistedOption = Exclude<keyof SetupOptions, (typeof SETUP_OPTION_FIELDS)[number]>;
const everyOptionListed: [UnlistedOption] extends [never] ? true : UnlistedOption = true;
void everyOptionListed;

/** `parseSetup(options)`: the CLI's run options, as text (or numbers), flags as booleans; undefined ones absent. */
export function validateSetupOptions(value: unknown): void {
  const options = object("options", value);
  rejectUnknown("options", options, SETUP_OPTION_FIELDS);
  for (const key of ["mode", "precision", "optimizer", "optimizerImpl", "attention", "offload", "loraTargets", "weights", "kvCache", "hfLoss", "zeroGrad"]) if (options[key] !== undefined) string(`options.${key}`, options[key]);
  for (const key of ["seq", "image", "zero", "gpus", "tp", "generate", "gpusPerNode", "loraRank", "ep", "capacityFactor", "computeCapability", "loraDropout", "gradAccum"]) {
    const v = options[key];
    if (v !== undefined && typeof v !== "string" && typeof v !== "number") throw invalidArgument(`options.${key}`, shown(v), "a string or a number");
  }
  if (options.checkpointing !== undefined && typeof options.checkpointing !== "string" && typeof options.checkpointing !== "boolean") {
    throw invalidArgument("options.checkpointing", shown(options.checkpointing), "a string or a boolean");
  }
  if (options.sequenceParallel !== undefined) boolean("options.sequenceParallel", options.sequenceParallel);
  if (options.residentEncoders !== undefined) boolean("options.residentEncoders", options.residentEncoders);
  if (options.ddpBucketView !== undefined) boolean("options.ddpBucketView", options.ddpBucketView);
}
