// The step trace file (`vramfit trace --out FILE`, docs/trace-format.md) read and validated: one line per problem, naming the file and the field.
import { invalidArgument } from "../errors.js";
import { CATEGORIES, type Category } from "../plan/memoryPlan.js";
import { FieldReader } from "../workload/fields.js";
import { LIMITS } from "../workload/limits.js";

/** The `format` of a step trace file, and the one `version` this reader knows. */
export const TRACE_FORMAT = "vramfit-step-trace";
export const TRACE_VERSION = 1;

/** The largest trace file read: Llama-2-70B's step is about 10^5 events, tens of MiB as JSON. */
export const TRACE_FILE_MAX_BYTES = 512 * 2 ** 20;
/** The most events a trace may hold (a hundred times the largest model's step measured). */
export const TRACE_MAX_EVENTS = 10_000_000;

export const TRACE_SOURCES = ["hf-config", "torchvision", "timm", "torch"] as const;
export const ATTENTION_KERNELS = ["flash", "efficient", "cudnn", "math"] as const;
/** What the trace cannot see and vramfit charges (docs/trace-format.md, `charged`). */
export const CHARGED_FIELDS = ["cublasWorkspaceBytes", "cublasWorkspaces", "cublasLtWorkspaceBytes", "contextBytes"] as const;

/** One event of the step, in execution order: a storage appears (`alloc`) or dies (`free`). */
export type TraceEvent =
  | { kind: "alloc"; id: number; fixedBytes: number; perSampleBytes: number; phase: number; category: Category; op: string }
  | { kind: "free"; id: number; phase: number; op: string };

/** A step trace as read: what the writer traced, with what, and the events. */
export interface StepTrace {
  /** The file it came from, for messages. */
  file: string;
  workload: { source: (typeof TRACE_SOURCES)[number]; name: string; parameterCount: number; trainableParameterCount: number };
  /** The run options as the tracer applied them (`mode`, `seq`, `precision`, …; absent ones null). */
  options: Record<string, unknown>;
  /** Versions of what ran the model (`torch`, `transformers`, …). */
  environment: Record<string, string>;
  /** Affine: traced at b1 and b2, checked at b3, every event's bytes `fixed + perSample × b`. */
  affine: boolean;
  /** `[b1, b2, b3]` (affine), or `[batch]`: the one batch traced, the only one the trace answers for. */
  batches: number[];
  /** Why the events did not line up across batches (not affine), when the writer said. */
  affineReason?: string;
  phases: string[];
  events: TraceEvent[];
  attention: { module: string; kernel: (typeof ATTENTION_KERNELS)[number] }[];
  charged: Partial<Record<(typeof CHARGED_FIELDS)[number], number>>;
}

/** A value as a message shows it: short, on one line. */
function shown(value: unknown): unknown {
  if (value === null || typeof value !== "object") return value;
  const text = JSON.stringify(value);
  return text.length > 40 ? `${text.slice(0, 37)}...` : text;
}

/**
 * Reads a parsed trace file. Throws `ERR_INVALID_ARGUMENT` at the first problem, one line naming
 * the file and the field (`trace.json: events[12][2]: expected …, got …`): a wrong format or
 * version, a byte count that is not a whole number ≥ 0, a phase out of order, a category vramfit
 * does not know, a free of a storage never allocated or freed twice.
 */
export function readStepTrace(file: string, json: unknown): StepTrace {
  FieldReader.root(file, json); // an object, nested within the input limit
  const top = json as Record<string, unknown>;
  const fail = (field: string, value: unknown, expected: string) => invalidArgument(`${file}: ${field}`, shown(value), expected);
  if (top.format !== TRACE_FORMAT) throw fail("format", top.format, `"${TRACE_FORMAT}" (a trace file written by vramfit trace)`);
  if (top.version !== TRACE_VERSION) {
    const newer = typeof top.version === "number" && top.version > TRACE_VERSION;
    throw fail("version", top.version, `${TRACE_VERSION}${newer ? " (the trace is newer than this vramfit: upgrade vramfit, or trace again with this one)" : ""}`);
  }

  const workload = top.workload;
  if (workload === null || typeof workload !== "object" || Array.isArray(workload)) throw fail("workload", workload, "an object (source, name, parameterCount)");
  const w = workload as Record<string, unknown>;
  if (!TRACE_SOURCES.includes(w.source as never)) throw fail("workload.source", w.source, `one of ${TRACE_SOURCES.join(", ")}`);
  if (typeof w.name !== "string" || w.name.length === 0) throw fail("workload.name", w.name, "the model's name");
  const parameterCount = wholeNumber(fail, "workload.parameterCount", w.parameterCount, LIMITS.parameters);
  const trainable = w.trainableParameterCount === undefined ? parameterCount : wholeNumber(fail, "workload.trainableParameterCount", w.trainableParameterCount, parameterCount);

  const options = plainObject(fail, "options", top.options ?? {});
  const environment = plainObject(fail, "environment", top.environment ?? {});
  for (const [key, value] of Object.entries(environment)) if (typeof value !== "string") throw fail(`environment.${key}`, value, "a version string");

  if (typeof top.affine !== "boolean") throw fail("affine", top.affine, "true or false (whether the events were fitted as fixed + perSample × batch)");
  let batches: number[];
  if (top.affine) {
    const list = top.batches;
    if (!Array.isArray(list) || list.length !== 3) throw fail("batches", list, "[b1, b2, b3]: the two batches fitted and the one checked");
    batches = list.map((b, i) => wholeNumber(fail, `batches[${i}]`, b, LIMITS.bytes, 1));
    if (batches[0]! >= batches[1]!) throw fail("batches", list, "b1 < b2 (an affine fit needs two different batches)");
  } else {
    batches = [wholeNumber(fail, "batch", top.batch, LIMITS.bytes, 1)];
  }
  if (top.affineReason !== undefined && typeof top.affineReason !== "string") throw fail("affineReason", top.affineReason, "a line of text");

  const phases = top.phases;
  if (!Array.isArray(phases) || phases.length === 0) throw fail("phases", phases, "the step's phase names in order (forward, loss, backward, …)");
  phases.forEach((p, i) => {
    if (typeof p !== "string" || p.length === 0) throw fail(`phases[${i}]`, p, "a phase name");
  });

  const events = readEvents(fail, top.events, phases.length, top.affine);
  const attention = readAttention(fail, top.attention ?? []);
  const charged = plainObject(fail, "charged", top.charged ?? {});
  for (const [key, value] of Object.entries(charged)) {
    if (!CHARGED_FIELDS.includes(key as never)) throw fail(`charged.${key}`, value, `one of ${CHARGED_FIELDS.join(", ")} (a charge this vramfit does not know would go unpaid: upgrade vramfit)`);
    wholeNumber(fail, `charged.${key}`, value, LIMITS.bytes);
  }

  return {
    file,
    workload: { source: w.source as StepTrace["workload"]["source"], name: w.name, parameterCount, trainableParameterCount: trainable },
    options,
    environment: environment as Record<string, string>,
    affine: top.affine,
    batches,
    ...(typeof top.affineReason === "string" && { affineReason: top.affineReason }),
    phases: phases as string[],
    events,
    attention,
    charged: charged as StepTrace["charged"],
  };
}

type Fail = (field: string, value: unknown, expected: string) => Error;

function wholeNumber(fail: Fail, field: string, value: unknown, max: number, min = 0): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < min || value > max) {
    throw fail(field, value, `a whole number from ${min} to ${max.toLocaleString("en-US")}`);
  }
  return value;
}

function plainObject(fail: Fail, field: string, value: unknown): Record<string, unknown> {
  if (value === null || typeof value !== "object" || Array.isArray(value)) throw fail(field, value, "an object");
  return value as Record<string, unknown>;
}

/** The events, each checked where it stands: a deep model's step is 10^5 of them, read once. */
function readEvents(fail: Fail, list: unknown, phases: number, affine: boolean): TraceEvent[] {
  if (!Array.isArray(list)) throw fail("events", list, "an array of events ([\"a\", id, fixed, perSample, phase, category, op] or [\"f\", id, phase, op])");
  if (list.length > TRACE_MAX_EVENTS) throw fail("events", `${list.length} events`, `at most ${TRACE_MAX_EVENTS.toLocaleString("en-US")} (vramfit's input limit)`);
  const live = new Set<number>();
  const seen = new Set<number>();
  const events: TraceEvent[] = new Array<TraceEvent>(list.length);
  let phaseBefore = 0;
  for (let k = 0; k < list.length; k++) {
    const e = list[k] as unknown;
    const at = `events[${k}]`;
    if (!Array.isArray(e) || (e[0] !== "a" && e[0] !== "f")) throw fail(at, e, '["a", id, fixedBytes, perSampleBytes, phase, category, op] or ["f", id, phase, op]');
    const alloc = e[0] === "a";
    if (e.length !== (alloc ? 7 : 4)) throw fail(at, e, alloc ? '["a", id, fixedBytes, perSampleBytes, phase, category, op]' : '["f", id, phase, op]');
    const id = wholeNumber(fail, `${at}[1]`, e[1], Number.MAX_SAFE_INTEGER);
    const phaseAt = alloc ? 4 : 2;
    const phase = wholeNumber(fail, `${at}[${phaseAt}]`, e[phaseAt], phases - 1);
    if (phase < phaseBefore) throw fail(`${at}[${phaseAt}]`, phase, `a phase ≥ ${phaseBefore} (events are in execution order)`);
    phaseBefore = phase;
    const op = e[alloc ? 6 : 3];
    if (typeof op !== "string") throw fail(`${at}[${alloc ? 6 : 3}]`, op, "the operator's name (aten::mm, resident, python)");
    if (alloc) {
      if (seen.has(id)) throw fail(`${at}[1]`, id, "an id not allocated before (ids are never reused)");
      const fixedBytes = wholeNumber(fail, `${at}[2]`, e[2], LIMITS.bytes);
      const perSampleBytes = wholeNumber(fail, `${at}[3]`, e[3], LIMITS.bytes);
      if (!affine && perSampleBytes !== 0) throw fail(`${at}[3]`, perSampleBytes, "0 (the trace is not affine: each event's bytes are its fixed bytes at the one batch traced)");
      const category = e[5];
      if (!CATEGORIES.includes(category as never)) throw fail(`${at}[5]`, category, `one of ${CATEGORIES.join(", ")}`);
      seen.add(id);
      live.add(id);
      events[k] = { kind: "alloc", id, fixedBytes, perSampleBytes, phase, category: category as Category, op };
    } else {
      if (!live.has(id)) throw fail(`${at}[1]`, id, seen.has(id) ? "a live storage (this one was freed already)" : "the id of a storage allocated before it");
      live.delete(id);
      events[k] = { kind: "free", id, phase, op };
    }
  }
  return events;
}

function readAttention(fail: Fail, list: unknown): StepTrace["attention"] {
  if (!Array.isArray(list)) throw fail("attention", list, "an array of { module, kernel }");
  return list.map((entry: unknown, i) => {
    const a = plainObject(fail, `attention[${i}]`, entry);
    if (typeof a.module !== "string") throw fail(`attention[${i}].module`, a.module, "the module's name");
    if (!ATTENTION_KERNELS.includes(a.kernel as never)) throw fail(`attention[${i}].kernel`, a.kernel, `one of ${ATTENTION_KERNELS.join(", ")}`);
    return { module: a.module, kernel: a.kernel as StepTrace["attention"][number]["kernel"] };
  });
}
