// The library's checks of the targets and options of findMaxBatch, findMaxSeq, checkFits, resolveTargets and searchMaxBatch.
import { type Fields, object, shown, rejectUnknown, integer, bytes, oneOf, boolean, fn, string, abortSignal, optionalFields } from "../checks.js";
import { isUuidOrPrefix } from "../devices/nvmlMatch.js";
import { invalidArgument } from "../errors.js";
import { checkBatchBytes } from "../plan/planLimits.js";
import { validatePlan } from "../plan/validatePlan.js";
import { validatePlanMemory } from "../plan/validateSetup.js";
import { LIMITS } from "../workload/limits.js";
import { parseAllocConf } from "./allocConf.js";
import { ALLOCATOR_KINDS } from "./allocator.js";

/** A device as TargetSpec names it: a CUDA ordinal, or a UUID (`GPU-…`, `MIG-…`) or a prefix of one. */
export function validateDevice(label: string, value: unknown): void {
  if (typeof value === "string" && isUuidOrPrefix(value.trim())) return;
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
export function validateLock(label: string, value: unknown): void {
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
  "allocConf",
  "touch",
  "virtualMemory",
  "signal",
  "lock",
  "keepWarm",
  "onProbe",
] as const;

/** The budget and job-model fields findMaxBatch, checkFits, advise's limits and gpusFit share. */
export const LIMIT_CHECKS: Record<string, (label: string, value: unknown) => void> = {
  reserveBytes: (l, v) => void bytes(l, v),
  reservePercent: (l, v) => {
    if (typeof v !== "number" || !(v >= 0 && v < 100)) throw invalidArgument(l, shown(v), "a percentage of the total from 0 to below 100");
  },
  maxMemBytes: (l, v) => void bytes(l, v, 1),
  allocator: (l, v) => oneOf(l, v, ALLOCATOR_KINDS),
  jobContextBytes: (l, v) => void bytes(l, v),
  allocConf: (l, v) => {
    if (typeof v !== "string") throw invalidArgument(l, shown(v), "a PYTORCH_CUDA_ALLOC_CONF string, e.g. max_split_size_mb:128");
    parseAllocConf(v, l);
  },
};
export const LIMIT_FIELDS = Object.keys(LIMIT_CHECKS);

/** A reserve in bytes or as a percentage, not both. */
export function oneReserve(label: string, options: Fields): void {
  if (options.reserveBytes !== undefined && options.reservePercent !== undefined) {
    throw invalidArgument(`${label}.reserveBytes`, "with reservePercent", "one reserve: in bytes or as a percentage, not both");
  }
}

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
    virtualMemory: boolean,
    signal: abortSignal,
    keepWarm: boolean,
    onProbe: fn,
    withoutContext: boolean,
    lock: validateLock,
  });
  if (options.gpu !== undefined && options.memoryBytes !== undefined) {
    throw invalidArgument(`${label}.gpu`, "with memoryBytes", "one analytic target: gpu or memoryBytes, not both");
  }
  oneReserve(label, options);
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

/** `searchMaxBatch(fits, options)`. */
export function validateSearch(fits: unknown, options: unknown): void {
  fn("fits", fits);
  const o = object("options", options);
  rejectUnknown("options", o, ["seed", "maxBatch", "signal"]);
  if (typeof o.seed !== "number" || !Number.isFinite(o.seed) || o.seed < 0) throw invalidArgument("options.seed", shown(o.seed), "a number ≥ 0 (the predicted batch)");
  optionalFields("options", o, { maxBatch: (l, v) => void integer(l, v, 1, Number.MAX_SAFE_INTEGER), signal: abortSignal });
}
