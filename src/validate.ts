// The library is as strict as the CLI: the argument checks of every public function, each failure
// a VramfitError ERR_INVALID_ARGUMENT naming the argument's field (`options.maxBatch: expected …`).
import { formatLimit } from "./count.js";
import { uuidKey } from "./devices/nvmlMatch.js";
import { invalidArgument } from "./errors.js";
import { ALLOCATOR_KINDS } from "./fit/allocator.js";
import { checkSetupApplies } from "./plan/applicability.js";
import { OPTIMIZERS, PRECISIONS, ZERO_STAGES } from "./plan/bytesPerParameter.js";
import { CATEGORIES, type MemoryPlan } from "./plan/memoryPlan.js";
import { MAX_CAPACITY_FACTOR, MODEL_SETUP_FIELDS, MODEL_SETUP_OPTION_FIELDS } from "./plan/modelSetup.js";
import { OFFLOAD_KINDS } from "./plan/offload.js";
import { OPTIMIZER_IMPLS } from "./plan/optimizerStep.js";
import { KV_CACHE_FORMATS, WEIGHT_FORMATS } from "./plan/quantization.js";
import { checkBatchBytes, checkPlanBytes } from "./plan/planLimits.js";
import { ATTENTION_KINDS, CHECKPOINTING, MODES, checkSetupRules, type RunSetup, type SetupOptions } from "./plan/setup.js";
import { CNN_LAYER_FIELDS, CNN_LAYER_TYPES } from "./workload/cnn.js";
import { FieldReader } from "./workload/fields.js";
import { LIMITS, checkTransformerLimits, jsonValueDepth } from "./workload/limits.js";
import { PROJECTIONS } from "./workload/transformer.js";
import type { Workload } from "./workload/workload.js";

type Fields = Record<string, unknown>;

/** `label` must be a plain object (not null, not an array); `optional` lets undefined through as {}. */
function object(label: string, value: unknown, optional = false): Fields {
  if (value === undefined && optional) return {};
  if (value === null || typeof value !== "object" || Array.isArray(value)) throw invalidArgument(label, shown(value), "an object");
  return value as Fields;
}

/** A value as messages show it: numbers as written (NaN, -5, 1.5), objects as their kind. */
function shown(value: unknown): unknown {
  if (Array.isArray(value)) return "an array";
  if (value !== null && typeof value === "object") return "an object";
  if (typeof value === "function") return "a function";
  return value;
}

/** A field the function does not know is a typo, not something to ignore (`zero` for `zeroStage`). */
function rejectUnknown(label: string, fields: Fields, known: readonly string[]): void {
  for (const key of Object.keys(fields)) {
    if (!known.includes(key)) throw invalidArgument(`${label}.${key}`, shown(fields[key]), `no such field (known: ${known.join(", ")})`);
  }
}

function integer(label: string, value: unknown, min: number, max: number, what?: string): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < min || value > max) {
    const range = max >= Number.MAX_SAFE_INTEGER ? `a whole number ≥ ${min}` : `a whole number from ${min} to ${formatLimit(max)}`;
    throw invalidArgument(label, shown(value), what === undefined ? range : `${range} (vramfit's limit on ${what})`);
  }
  return value;
}

/** A byte count: whole, ≥ min, at most 2^53. */
function bytes(label: string, value: unknown, min = 0): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > 2 ** 53) {
    throw invalidArgument(label, shown(value), `a whole number of bytes ≥ ${min}, at most 2^53`);
  }
  return value;
}

function oneOf(label: string, value: unknown, allowed: readonly (string | number)[]): void {
  if (!allowed.includes(value as string | number)) throw invalidArgument(label, shown(value), `one of ${allowed.join(", ")}`);
}

function boolean(label: string, value: unknown): void {
  if (typeof value !== "boolean") throw invalidArgument(label, shown(value), "true or false");
}

function fn(label: string, value: unknown): void {
  if (typeof value !== "function") throw invalidArgument(label, shown(value), "a function");
}

function string(label: string, value: unknown): void {
  if (typeof value !== "string") throw invalidArgument(label, shown(value), "a string");
}

function abortSignal(label: string, value: unknown): void {
  if (!(value instanceof AbortSignal)) throw invalidArgument(label, shown(value), "an AbortSignal");
}

/** Each present field of `fields` checked by its checker; absent (undefined) ones are left alone. */
function optionalFields(label: string, fields: Fields, checks: Record<string, (label: string, value: unknown) => void>): void {
  for (const [key, check] of Object.entries(checks)) {
    if (fields[key] !== undefined) check(`${label}.${key}`, fields[key]);
  }
}

// ---------------------------------------------------------------------------------------------
// Workloads

/** A transformer's architecture, field by field, with the limits the readers apply. */
function validateArchitecture(label: string, value: unknown): void {
  const arch = FieldReader.root(label, object(label, value));
  const required = ["kind", "hiddenSize", "layers", "heads", "kvHeads", "headDim", "ffnSize", "ffn", "vocabSize", "positions", "maxPositions", "tokenTypes", "norm", "bias", "tieEmbeddings", "embeddingNorm", "finalNorm", "head", "classes", "dropout", "attentionDropout"];
  for (const key of required) if (!arch.has(key)) throw arch.fail(key, "a value (every field of TransformerArchitecture but the optional ones)", undefined);
  arch.oneOf("kind", ["decoder", "encoder"]);
  arch.count("hiddenSize");
  const layers = arch.count("layers", { max: LIMITS.transformerLayers, what: "a transformer's layers" });
  const heads = arch.count("heads");
  const kvHeads = arch.count("kvHeads");
  if (heads % kvHeads !== 0) throw arch.fail("kvHeads", `a divisor of heads (${heads})`);
  arch.count("headDim");
  arch.count("ffnSize");
  arch.oneOf("ffn", ["mlp", "gated"]);
  arch.count("vocabSize", { min: 0 });
  arch.oneOf("positions", ["learned", "rotary"]);
  arch.count("maxPositions");
  arch.count("tokenTypes", { min: 0 });
  arch.oneOf("norm", ["layernorm", "rmsnorm"]);
  for (const flag of ["bias", "tieEmbeddings", "embeddingNorm", "finalNorm"]) arch.boolean(flag, false);
  arch.oneOf("head", ["lm", "pooler", "classifier", "none"]);
  arch.count("classes", { min: 0 });
  arch.probability("dropout", 0);
  arch.probability("attentionDropout", 0);
  for (const flag of ["qkvBias", "qkNorm", "sandwichNorms", "fusedQkv", "fusedGateUp"]) arch.boolean(flag, false);
  if (arch.has("vision")) {
    const vision = arch.child("vision");
    vision.count("imageSize");
    vision.count("patchSize");
    vision.count("channels");
  }
  if (arch.has("slidingWindow")) {
    const window = arch.child("slidingWindow");
    window.count("tokens");
    const indices = window.object.layers;
    if (!Array.isArray(indices) || indices.some((i) => !Number.isSafeInteger(i) || i < 0 || i >= layers)) {
      throw window.fail("layers", `an array of layer indices from 0 to ${layers - 1}`);
    }
  }
  if (arch.has("experts")) {
    const experts = arch.child("experts");
    const count = experts.count("count");
    experts.count("perToken", { max: count, expected: `a whole number from 1 to the ${count} experts` });
  }
  checkTransformerLimits((key) => arch.label(key), "layers", value as never);
}

const REQUIRED_LAYER_FIELDS: Record<string, readonly string[]> = {
  conv: ["out", "kernel"],
  maxpool: ["kernel"],
  avgpool: ["kernel"],
  adaptiveavgpool: ["size"],
  linear: ["out"],
  dropout: ["p"],
  residual: ["body"],
};

/** A CNN network: its counts and every layer (iteratively, nested ones included, within the layer limit). */
function validateNetwork(label: string, value: unknown): void {
  const network = FieldReader.root(label, object(label, value));
  network.rejectUnknown(["channels", "imageSize", "classes", "layers"]);
  network.count("channels");
  network.count("imageSize");
  network.count("classes", { min: 0 });
  const pending: { reader: FieldReader; key: string; mayBeEmpty: boolean }[] = [{ reader: network, key: "layers", mayBeEmpty: false }];
  let count = 0;
  while (pending.length > 0) {
    const { reader, key, mayBeEmpty } = pending.pop()!;
    if (mayBeEmpty && Array.isArray(reader.object[key]) && (reader.object[key] as unknown[]).length === 0) continue;
    const layers = reader.objects(key);
    count += layers.length;
    if (count > LIMITS.cnnLayers) throw network.fail("layers", `at most ${formatLimit(LIMITS.cnnLayers)} layers, nested ones included (vramfit's limit)`, `more than ${LIMITS.cnnLayers} layers`);
    for (const layer of layers) {
      const type = layer.oneOf("type", CNN_LAYER_TYPES);
      layer.rejectUnknown(["type", "name", ...CNN_LAYER_FIELDS[type]]);
      if (layer.has("name")) layer.string("name");
      for (const key of ["out", "kernel", "stride", "dilation", "groups", "size"]) if (layer.has(key)) layer.count(key);
      if (layer.has("padding")) layer.count("padding", { min: 0 });
      for (const key of ["bias", "inplace", "relu"]) if (layer.has(key)) layer.boolean(key, false);
      if (layer.has("p")) layer.probability("p", 0);
      for (const key of REQUIRED_LAYER_FIELDS[type] ?? []) if (!layer.has(key)) throw layer.fail(key, "a value (it has no default)", undefined);
      if (type === "residual") {
        pending.push({ reader: layer, key: "body", mayBeEmpty: false });
        if (layer.has("shortcut")) pending.push({ reader: layer, key: "shortcut", mayBeEmpty: true });
      }
    }
  }
}

/**
 * A Workload as `planMemory`, `advise` and `gpusFit` take it: one of the three kinds, every field
 * of the right type and within the input limits (docs/reliability.md).
 */
export function validateWorkload(value: unknown, label = "workload"): asserts value is Workload {
  const workload = object(label, value);
  oneOf(`${label}.kind`, workload.kind, ["affine", "transformer", "cnn", "unet"]);
  if (jsonValueDepth(workload) > LIMITS.jsonDepth) throw invalidArgument(label, `nested more than ${LIMITS.jsonDepth} levels deep`, `at most ${LIMITS.jsonDepth} levels of nested arrays and objects (vramfit's input limit)`);
  switch (workload.kind) {
    case "affine":
      rejectUnknown(label, workload, ["kind", "parameterCount", "perSampleBytes", "fixedBytes"]);
      integer(`${label}.parameterCount`, workload.parameterCount, 0, LIMITS.parameters, "a model's parameters");
      bytes(`${label}.perSampleBytes`, workload.perSampleBytes);
      bytes(`${label}.fixedBytes`, workload.fixedBytes);
      return;
    case "transformer":
      rejectUnknown(label, workload, ["kind", "name", "architecture"]);
      string(`${label}.name`, workload.name);
      validateArchitecture(`${label}.architecture`, workload.architecture);
      return;
    case "cnn":
      rejectUnknown(label, workload, ["kind", "name", "network"]);
      string(`${label}.name`, workload.name);
      validateNetwork(`${label}.network`, workload.network);
      return;
    case "unet":
      rejectUnknown(label, workload, ["kind", "name", "network"]);
      string(`${label}.name`, workload.name);
      validateUNet(`${label}.network`, workload.network);
  }
}

/** A diffusion UNet's configuration (UNetConfig): its counts, and one entry per block in each list. */
function validateUNet(label: string, value: unknown): void {
  const unet = FieldReader.root(label, object(label, value));
  const fields = ["inChannels", "outChannels", "blockOutChannels", "layersPerBlock", "crossAttentionDim", "contextTokens", "heads", "downAttention", "upAttention", "normGroups", "upcastAttention", "sampleSize", "vaeScale"];
  unet.rejectUnknown(fields);
  for (const key of fields) if (!unet.has(key)) throw unet.fail(key, "a value (every field of UNetConfig)", undefined);
  const dimension = { max: LIMITS.dimension, what: "a dimension" };
  for (const key of ["inChannels", "outChannels", "crossAttentionDim", "contextTokens", "normGroups", "sampleSize", "vaeScale"]) unet.count(key, dimension);
  unet.count("layersPerBlock", { max: LIMITS.transformerLayers, what: "a UNet block's layers" });
  unet.boolean("upcastAttention", false);
  const blocks = unet.object.blockOutChannels;
  if (!Array.isArray(blocks) || blocks.length === 0 || blocks.length > 16) throw unet.fail("blockOutChannels", "an array of 1 to 16 channel counts");
  const groups = unet.object.normGroups as number;
  for (const [key, check] of [
    ["blockOutChannels", (v: unknown) => Number.isSafeInteger(v) && (v as number) >= 1 && (v as number) <= LIMITS.dimension && (v as number) % groups === 0],
    ["heads", (v: unknown) => Number.isSafeInteger(v) && (v as number) >= 1],
    ["downAttention", (v: unknown) => typeof v === "boolean"],
    ["upAttention", (v: unknown) => typeof v === "boolean"],
  ] as const) {
    const list = unet.object[key];
    if (!Array.isArray(list) || list.length !== blocks.length || !list.every(check)) {
      throw unet.fail(key, `an array of ${blocks.length} entries (one per block)${key === "blockOutChannels" ? `, each a multiple of normGroups (${groups})` : ""}`);
    }
  }
  (unet.object.blockOutChannels as number[]).forEach((c, i) => {
    if (c % (unet.object.heads as number[])[i]! !== 0) throw unet.fail("heads", `a divisor of each block's channels (${c})`);
  });
}

// ---------------------------------------------------------------------------------------------
// Run setups

/** Every field of RunSetup; the type below fails to compile when one is added and not listed here. */
const RUN_SETUP_FIELDS = ["mode", "precision", "optimizer", "optimizerImpl", "seq", "image", "checkpointing", "attention", "zeroStage", "gpus", "tp", "sequenceParallel", "generatedTokens", "offload", "gpusPerNode", ...MODEL_SETUP_FIELDS] as const;
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
  });
  checkSetupRules(setup as unknown as RunSetup);
}

/** `planMemory(workload, setup)`: both valid, and the setup applicable to the workload. */
export function validatePlanMemory(workload: unknown, setup: unknown): void {
  validateWorkload(workload);
  validateSetup(setup);
  checkSetupApplies(workload, setup);
}

// ---------------------------------------------------------------------------------------------
// Plans

/**
 * A MemoryPlan as the evaluators take it (from planMemory, or built by hand): its tensors with
 * whole, non-negative byte counts, phases within the timeline, and every total exact (≤ 2^53).
 */
export function validatePlan(value: unknown, label = "plan"): asserts value is MemoryPlan {
  const plan = object(label, value);
  string(`${label}.description`, plan.description);
  integer(`${label}.parameterCount`, plan.parameterCount, 0, Number.MAX_SAFE_INTEGER);
  let phases = 1;
  if (plan.phases !== undefined) {
    if (!Array.isArray(plan.phases) || plan.phases.some((p) => typeof p !== "string")) throw invalidArgument(`${label}.phases`, shown(plan.phases), "an array of phase names");
    phases = Math.max(1, plan.phases.length);
  }
  const tensors = (key: string, list: unknown, fixedOnly: boolean) => {
    if (!Array.isArray(list)) throw invalidArgument(`${label}.${key}`, shown(list), "an array of tensors");
    list.forEach((item, i) => {
      const at = `${label}.${key}[${i}]`;
      const tensor = object(at, item);
      string(`${at}.name`, tensor.name);
      oneOf(`${at}.category`, tensor.category, CATEGORIES);
      bytes(`${at}.fixedBytes`, tensor.fixedBytes);
      bytes(`${at}.perSampleBytes`, tensor.perSampleBytes);
      if (fixedOnly && tensor.perSampleBytes !== 0) throw invalidArgument(`${at}.perSampleBytes`, tensor.perSampleBytes, "0 (host memory holds model states, which do not grow with the batch)");
      const first = tensor.firstPhase === undefined ? 0 : integer(`${at}.firstPhase`, tensor.firstPhase, 0, phases - 1);
      if (tensor.lastPhase !== undefined) integer(`${at}.lastPhase`, tensor.lastPhase, first, phases - 1);
    });
  };
  tensors("tensors", plan.tensors, false);
  if (plan.host !== undefined) {
    const host = object(`${label}.host`, plan.host);
    tensors("host.tensors", host.tensors, true);
    integer(`${label}.host.ranks`, host.ranks, 1, LIMITS.gpus, "GPUs");
  }
  checkPlanBytes(value as MemoryPlan);
}

// ---------------------------------------------------------------------------------------------
// Targets and evaluator options

/** A device as TargetSpec names it: a CUDA ordinal, or a UUID (`GPU-…`, `MIG-…`). */
export function validateDevice(label: string, value: unknown): void {
  if (typeof value === "string" && uuidKey(value) !== undefined) return;
  integer(label, value, 0, Number.MAX_SAFE_INTEGER);
}

function validateGpu(label: string, value: unknown): void {
  if (typeof value === "string") return; // findGpu names the nearest id when it is not one
  const gpu = object(label, value);
  rejectUnknown(label, gpu, ["id", "name", "totalBytes"]);
  string(`${label}.name`, gpu.name);
  if (gpu.id !== undefined) string(`${label}.id`, gpu.id);
  bytes(`${label}.totalBytes`, gpu.totalBytes, 1);
}

/** The device lock's options, or false for none. */
function validateLock(label: string, value: unknown): void {
  if (value === false) return;
  const lock = object(label, value);
  rejectUnknown(label, lock, ["timeoutMs", "signal", "directory", "onWait", "onUnlocked"]);
  optionalFields(label, lock, {
    timeoutMs: (l, v) => void integer(l, v, 0, 24 * 3600 * 1000),
    signal: abortSignal,
    directory: string,
    onWait: fn,
    onUnlocked: fn,
  });
}

const TARGET_FIELDS = [
  "device",
  "gpu",
  "memoryBytes",
  "fallback",
  "analytic",
  "requireGpu",
  "target",
  "reserveBytes",
  "reservePercent",
  "maxMemBytes",
  "allocator",
  "jobContextBytes",
  "touch",
  "signal",
  "lock",
  "keepWarm",
  "onProbe",
] as const;

/** The budget and job-model fields findMaxBatch, checkFits, advise's limits and gpusFit share. */
const LIMIT_CHECKS: Record<string, (label: string, value: unknown) => void> = {
  reserveBytes: (l, v) => void bytes(l, v),
  reservePercent: (l, v) => {
    if (typeof v !== "number" || !(v >= 0 && v < 100)) throw invalidArgument(l, shown(v), "a percentage of the total from 0 to below 100");
  },
  maxMemBytes: (l, v) => void bytes(l, v, 1),
  allocator: (l, v) => oneOf(l, v, ALLOCATOR_KINDS),
  jobContextBytes: (l, v) => void bytes(l, v),
};
const LIMIT_FIELDS = Object.keys(LIMIT_CHECKS);

/** A target from resolveTargets, handed back: the resolver made it, so only its kind is checked. */
function validateResolvedTarget(label: string, value: unknown): void {
  const target = object(label, value);
  oneOf(`${label}.kind`, target.kind, ["device", "gpu", "memory", "reading"]);
}

/** The options of findMaxBatch (`maxBatch` too) and checkFits: one target, limits that are byte counts. */
function validateTargetOptions(value: unknown, label: string, known: readonly string[]): Fields {
  const options = object(label, value, true);
  rejectUnknown(label, options, known);
  optionalFields(label, options, {
    device: validateDevice,
    gpu: validateGpu,
    memoryBytes: (l, v) => void bytes(l, v),
    ...LIMIT_CHECKS,
    maxBatch: (l, v) => void integer(l, v, 1, Number.MAX_SAFE_INTEGER),
    analytic: boolean,
    requireGpu: boolean,
    target: validateResolvedTarget,
    touch: boolean,
    signal: abortSignal,
    keepWarm: boolean,
    onProbe: fn,
    withoutContext: boolean,
    lock: validateLock,
  });
  if (options.gpu !== undefined && options.memoryBytes !== undefined) {
    throw invalidArgument(`${label}.gpu`, "with memoryBytes", "one analytic target: gpu or memoryBytes, not both");
  }
  if (options.reserveBytes !== undefined && options.reservePercent !== undefined) {
    throw invalidArgument(`${label}.reserveBytes`, "with reservePercent", "one reserve: in bytes or as a percentage, not both");
  }
  if (options.device !== undefined && (options.gpu !== undefined || options.memoryBytes !== undefined)) {
    throw invalidArgument(`${label}.device`, options.device, "no device with gpu or memoryBytes (those are analytic targets)");
  }
  if (options.fallback !== undefined) {
    const fallback = object(`${label}.fallback`, options.fallback);
    rejectUnknown(`${label}.fallback`, fallback, ["gpu", "memoryBytes"]);
    if ((fallback.gpu === undefined) === (fallback.memoryBytes === undefined)) {
      throw invalidArgument(`${label}.fallback`, shown(fallback), "{ gpu } or { memoryBytes }: one analytic target");
    }
    if (fallback.gpu !== undefined) validateGpu(`${label}.fallback.gpu`, fallback.gpu);
    else bytes(`${label}.fallback.memoryBytes`, fallback.memoryBytes);
  }
  return options;
}

/** `resolveTargets(spec)`: one target, or `device: "all"`; a fallback of one target or a list of GPUs. */
export function validateTargetSpec(value: unknown): void {
  const spec = object("spec", value, true);
  rejectUnknown("spec", spec, ["device", "gpu", "memoryBytes", "analytic", "requireGpu", "fallback"]);
  optionalFields("spec", spec, {
    device: (l, v) => (v === "all" ? undefined : validateDevice(l, v)),
    gpu: validateGpu,
    memoryBytes: (l, v) => void bytes(l, v, 1),
    analytic: boolean,
    requireGpu: boolean,
  });
  if (spec.gpu !== undefined && spec.memoryBytes !== undefined) throw invalidArgument("spec.gpu", "with memoryBytes", "one analytic target: gpu or memoryBytes, not both");
  if (spec.fallback !== undefined) {
    const fallback = object("spec.fallback", spec.fallback);
    rejectUnknown("spec.fallback", fallback, ["gpu", "memoryBytes", "gpus"]);
    if ([fallback.gpu, fallback.memoryBytes, fallback.gpus].filter((f) => f !== undefined).length !== 1) {
      throw invalidArgument("spec.fallback", shown(fallback), "{ gpu }, { memoryBytes } or { gpus }: one kind of analytic target");
    }
    if (fallback.gpu !== undefined) validateGpu("spec.fallback.gpu", fallback.gpu);
    else if (fallback.memoryBytes !== undefined) bytes("spec.fallback.memoryBytes", fallback.memoryBytes, 1);
    else if (!Array.isArray(fallback.gpus) || fallback.gpus.length === 0) throw invalidArgument("spec.fallback.gpus", shown(fallback.gpus), "a non-empty array of GPUs");
    else fallback.gpus.forEach((gpu, i) => validateGpu(`spec.fallback.gpus[${i}]`, gpu));
  }
}

/** `findMaxBatch(plan, options)`. */
export function validateFindMaxBatch(plan: unknown, options: unknown): void {
  validatePlan(plan);
  validateTargetOptions(options, "options", [...TARGET_FIELDS, "maxBatch"]);
}

/** `findMaxSeq(workload, setup, batch, options)`: a valid workload and setup, a batch from 1, the target options. */
export function validateFindMaxSeq(workload: unknown, setup: unknown, batch: unknown, options: unknown): void {
  validatePlanMemory(workload, setup);
  integer("batch", batch, 1, LIMITS.dimension, "a dimension");
  validateTargetOptions(options, "options", TARGET_FIELDS);
}

/** `checkFits(plan, batch, options)`: a batch from 0, whose bytes stay exact. */
export function validateCheckFits(plan: unknown, batch: unknown, options: unknown): void {
  validatePlan(plan);
  integer("batch", batch, 0, Number.MAX_SAFE_INTEGER);
  checkBatchBytes("batch", plan, batch as number);
  validateTargetOptions(options, "options", [...TARGET_FIELDS, "withoutContext"]);
}

// ---------------------------------------------------------------------------------------------
// The other public functions

/** `searchMaxBatch(fits, options)`. */
export function validateSearch(fits: unknown, options: unknown): void {
  fn("fits", fits);
  const o = object("options", options);
  rejectUnknown("options", o, ["seed", "maxBatch", "signal"]);
  if (typeof o.seed !== "number" || !Number.isFinite(o.seed) || o.seed < 0) throw invalidArgument("options.seed", shown(o.seed), "a number ≥ 0 (the predicted batch)");
  optionalFields("options", o, { maxBatch: (l, v) => void integer(l, v, 1, Number.MAX_SAFE_INTEGER), signal: abortSignal });
}

/** `resolveWorkload(input)`: one object of the CLI's workload options. */
export function validateWorkloadInput(value: unknown): void {
  const input = object("input", value);
  rejectUnknown("input", input, ["model", "hfConfig", "spec", "params", "perSample", "fixed"]);
  optionalFields("input", input, {
    model: string,
    hfConfig: (l, v) => {
      const file = object(l, v);
      rejectUnknown(l, file, ["path", "json"]);
      string(`${l}.path`, file.path);
    },
    spec: (l, v) => {
      const file = object(l, v);
      rejectUnknown(l, file, ["path", "json"]);
      string(`${l}.path`, file.path);
    },
  });
  for (const key of ["params", "perSample", "fixed"]) {
    const v = input[key];
    if (v !== undefined && typeof v !== "string" && typeof v !== "number") throw invalidArgument(`input.${key}`, shown(v), "a string or a number");
  }
}

/** Every field of SetupOptions; the type below fails to compile when one is added and not listed here. */
const SETUP_OPTION_FIELDS = ["mode", "precision", "optimizer", "optimizerImpl", "seq", "image", "checkpointing", "attention", "zero", "gpus", "tp", "sequenceParallel", "generate", "offload", "gpusPerNode", ...MODEL_SETUP_OPTION_FIELDS] as const;
type UnlistedOption = Exclude<keyof SetupOptions, (typeof SETUP_OPTION_FIELDS)[number]>;
const everyOptionListed: [UnlistedOption] extends [never] ? true : UnlistedOption = true;
void everyOptionListed;

/** `parseSetup(options)`: the CLI's run options, as text (or numbers), flags as booleans; undefined ones absent. */
export function validateSetupOptions(value: unknown): void {
  const options = object("options", value);
  rejectUnknown("options", options, SETUP_OPTION_FIELDS);
  for (const key of ["mode", "precision", "optimizer", "optimizerImpl", "attention", "offload", "loraTargets", "weights", "kvCache"]) if (options[key] !== undefined) string(`options.${key}`, options[key]);
  for (const key of ["seq", "image", "zero", "gpus", "tp", "generate", "gpusPerNode", "loraRank", "ep", "capacityFactor"]) {
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

/** `advise(request)`. */
export function validateAdviceRequest(value: unknown): void {
  const request = object("request", value);
  rejectUnknown("request", request, ["workload", "setup", "targetBatch", "fromBatchSize", "target", "limits", "hostBudgetBytes", "limit", "signal"]);
  validateWorkload(request.workload, "request.workload");
  validateSetup(request.setup, "request.setup");
  checkSetupApplies(request.workload, request.setup);
  integer("request.targetBatch", request.targetBatch, 1, Number.MAX_SAFE_INTEGER);
  integer("request.fromBatchSize", request.fromBatchSize, 0, Number.MAX_SAFE_INTEGER);
  const target = object("request.target", request.target);
  rejectUnknown("request.target", target, ["budgetBytes", "allocator", "maxBatch", "totalBytes", "id", "measure"]);
  bytes("request.target.budgetBytes", target.budgetBytes);
  bytes("request.target.totalBytes", target.totalBytes);
  const allocator = object("request.target.allocator", target.allocator);
  rejectUnknown("request.target.allocator", allocator, ["kind", "contextBytes"]);
  oneOf("request.target.allocator.kind", allocator.kind, ALLOCATOR_KINDS);
  bytes("request.target.allocator.contextBytes", allocator.contextBytes);
  optionalFields("request.target", target, { maxBatch: (l, v) => void integer(l, v, 1, Number.MAX_SAFE_INTEGER), id: string, measure: fn });
  if (request.limits !== undefined) {
    const limits = object("request.limits", request.limits);
    rejectUnknown("request.limits", limits, LIMIT_FIELDS);
    optionalFields("request.limits", limits, LIMIT_CHECKS);
  }
  optionalFields("request", request, {
    hostBudgetBytes: (l, v) => void bytes(l, v),
    limit: (l, v) => void integer(l, v, 0, Number.MAX_SAFE_INTEGER),
    signal: abortSignal,
  });
}

/** `gpusFit(workload, setup, options)`. */
export function validateGpusFit(workload: unknown, setup: unknown, options: unknown): void {
  validateWorkload(workload);
  validateSetup(setup);
  checkSetupApplies(workload, setup);
  const o = object("options", options, true);
  rejectUnknown("options", o, ["minBatch", "maxDataParallel", "catalog", "signal", ...LIMIT_FIELDS]);
  optionalFields("options", o, {
    ...LIMIT_CHECKS,
    minBatch: (l, v) => void integer(l, v, 1, Number.MAX_SAFE_INTEGER),
    maxDataParallel: (l, v) => void integer(l, v, 1, LIMITS.gpus, "GPUs"),
    signal: abortSignal,
    catalog: (l, v) => {
      if (!Array.isArray(v)) throw invalidArgument(l, shown(v), "an array of GPUs");
      v.forEach((item, i) => {
        const gpu = object(`${l}[${i}]`, item);
        string(`${l}[${i}].id`, gpu.id);
        string(`${l}[${i}].name`, gpu.name);
        bytes(`${l}[${i}].totalBytes`, gpu.totalBytes, 1);
        boolean(`${l}[${i}].integrated`, gpu.integrated);
      });
    },
  });
}

/** `backend(options)`: paths are strings. */
export function validateBackendOptions(value: unknown): void {
  const options = object("options", value, true);
  rejectUnknown("options", options, ["addonPath", "cudaLibrary", "nvmlLibrary"]);
  optionalFields("options", options, { addonPath: string, cudaLibrary: string, nvmlLibrary: string });
}

// ---------------------------------------------------------------------------------------------
// Running the real job (findMaxBatchByRunning, checkByRunning)

const JOB_SESSION_FIELDS = ["device", "reserveBytes", "maxMemBytes", "runTimeoutMs", "logDir", "env", "signal", "lock"] as const;

/** The options every run of a job shares; `extra` are the caller's own fields, checked by it. */
function validateJobSession(label: string, value: unknown, extra: readonly string[]): Fields {
  const options = object(label, value, true);
  rejectUnknown(label, options, [...JOB_SESSION_FIELDS, ...extra]);
  optionalFields(label, options, {
    device: (l, v) => {
      if (v === "all") return;
      if (Array.isArray(v)) v.forEach((d, i) => validateDevice(`${l}[${i}]`, d));
      else validateDevice(l, v);
    },
    reserveBytes: (l, v) => void bytes(l, v),
    maxMemBytes: (l, v) => void bytes(l, v, 1),
    runTimeoutMs: (l, v) => void integer(l, v, 1, 24 * 3600 * 1000),
    logDir: string,
    env: (l, v) => void object(l, v),
    signal: abortSignal,
    lock: validateLock,
  });
  return options;
}

/** `findMaxBatchByRunning(job, options)`: a command or a runner, and the search's options. */
export function validateFindMaxBatchByRunning(job: unknown, options: unknown): void {
  if (typeof job !== "string" && typeof job !== "function") throw invalidArgument("job", shown(job), "a command string or a function (batch) => RunOutcome");
  const o = validateJobSession("options", options, ["budgetBytes", "maxBatch", "calibrate", "model", "onStart", "onRun"]);
  optionalFields("options", o, {
    budgetBytes: (l, v) => void bytes(l, v),
    maxBatch: (l, v) => void integer(l, v, 1, Number.MAX_SAFE_INTEGER),
    calibrate: (l, v) => {
      const ok = Array.isArray(v) && v.length === 2 && v.every((b) => Number.isSafeInteger(b) && b >= 1) && v[0] < v[1];
      if (!ok) throw invalidArgument(l, Array.isArray(v) ? v.join(",") : shown(v), "two batch sizes B1 < B2, both ≥ 1");
    },
    model: (l, v) => {
      const model = object(l, v);
      if ("tensors" in model) return validatePlan(model, l);
      rejectUnknown(l, model, ["fixedBytes", "perSampleBytes", "relativeError"]);
      bytes(`${l}.fixedBytes`, model.fixedBytes);
      bytes(`${l}.perSampleBytes`, model.perSampleBytes);
      const error = model.relativeError;
      if (error !== undefined && !(typeof error === "number" && error >= 0 && error <= 10)) throw invalidArgument(`${l}.relativeError`, shown(error), "a fraction from 0 to 10");
    },
    onStart: fn,
    onRun: fn,
  });
}

/** `checkByRunning(command, batch, options)`. */
export function validateCheckByRunning(command: unknown, batch: unknown, options: unknown): void {
  string("command", command);
  integer("batch", batch, 1, Number.MAX_SAFE_INTEGER);
  validateJobSession("options", options, []);
}
