// The workload and run setup a command's options describe, with the defaults it assumed.
import { checkpoint } from "../checkpoint.js";
import { excerpt, invalidArgument } from "../errors.js";
import { checkSetupApplies } from "../plan/applicability.js";
import { checkPlanBytes } from "../plan/planLimits.js";
import type { MemoryPlan } from "../plan/memoryPlan.js";
import { sharedPlan } from "../plan/planCache.js";
import { assumedDefaults, parseSetup, type RunSetup, type SetupOptions } from "../plan/setup.js";
import { SETUP_OPTION_FIELDS } from "../plan/validateSetup.js";
import { TRACE_FILE_MAX_BYTES, readStepTrace, type StepTrace } from "../step/traceFile.js";
import { tracePlan } from "../step/tracePlan.js";
import { resolveWorkload, type ParsedFile } from "../workload/resolveWorkload.js";
import type { Workload } from "../workload/workload.js";
import { LIMITS, jsonTextDepth } from "../workload/limits.js";
import { checkFileOption, type FileOption } from "./fileOption.js";
import { readInputFile } from "./inputFile.js";
import { findGpu } from "../devices/catalog.js";

export interface WorkloadOptions extends SetupOptions {
  model?: string;
  hfConfig?: string;
  spec?: string;
  params?: string;
  perSample?: string;
  fixed?: string;
  /** `--trace FILE`: a step trace written by `vramfit trace`. */
  trace?: string;
}

export interface PlannedWorkload {
  workload: Workload;
  plan: MemoryPlan;
  /** The run setup the options describe (what advice varies). */
  setup: RunSetup;
  /** The defaults taken for options the user did not give, e.g. `--precision amp`. */
  assumed: string[];
}

/** A step PyTorch traced (`--trace FILE`): its plan is the trace's, its setup baked in, so nothing varies it. */
export interface TracedWorkload {
  trace: StepTrace;
  plan: MemoryPlan;
  /** Always empty: a trace assumes nothing, its run was given to `vramfit trace`. */
  assumed: string[];
}

/** What a command's workload options describe: a workload vramfit plans, or a traced step. */
export type Planned = PlannedWorkload | TracedWorkload;

/** Whether the workload is a traced step. */
export function isTraced(planned: Planned): planned is TracedWorkload {
  return "trace" in planned;
}

/** What `batch` and `check` say instead of advice for a traced step: the changes advice weighs are baked into the trace. */
export const TRACED_ADVICE = "advice    none for a traced step (its run is baked in): trace it again with the change to weigh, e.g. --checkpointing, --precision bf16, --lora-rank 16";

/**
 * Refuses a question about other batches of a trace that is not affine (its events did not line
 * up across batch sizes): it answers at its one traced batch only. `batch`: undefined for a search.
 */
export function answersOnlyAtItsBatch(traced: TracedWorkload, batch: number | undefined): void {
  const { trace } = traced;
  if (trace.affine || batch === trace.batches[0]) return;
  const why = trace.affineReason !== undefined ? ` (${trace.affineReason})` : "";
  const only = `it answers only at its batch: check --batch ${trace.batches[0]} or plan --batch ${trace.batches[0]}`;
  if (batch === undefined) throw invalidArgument("--trace", trace.file, `a trace fitted across batch sizes for a search; this one's allocations did not line up${why}: ${only}`);
  throw invalidArgument("--batch", batch, `${trace.batches[0]}, the one batch ${trace.file} traced (its allocations did not line up across batch sizes${why})`);
}

const OTHER_SOURCES = [
  ["model", "--model"],
  ["hfConfig", "--hf-config"],
  ["spec", "--spec"],
  ["params", "--params"],
  ["perSample", "--per-sample"],
  ["fixed", "--fixed"],
] as const;

/** `seqSearch` → `--seq-search`. */
function flagOf(field: string): string {
  return `--${field.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
}

/**
 * The traced step of `--trace FILE`: read within the trace's own size limit, validated, made a
 * plan. Another workload source, or a run option (the trace has its run baked in: its precision,
 * sequence, optimizer, …), is refused with one line.
 */
async function tracedFromOptions(options: WorkloadOptions & { trace: string }, signal?: AbortSignal): Promise<TracedWorkload> {
  for (const [field, flag] of OTHER_SOURCES) {
    if (options[field] !== undefined) throw invalidArgument(flag, options[field], "no other workload source with --trace FILE (the trace is the workload)");
  }
  for (const field of SETUP_OPTION_FIELDS) {
    const value = options[field];
    if (value !== undefined) throw invalidArgument(flagOf(field), value, `no ${flagOf(field)} with --trace (the trace's run is baked in: trace again with ${flagOf(field)})`);
  }
  const file = await readJsonFile("--trace", options.trace, signal, TRACE_FILE_MAX_BYTES);
  const trace = readStepTrace(file.path, file.json);
  await checkpoint(signal);
  const plan = tracePlan(trace);
  checkPlanBytes(plan);
  return { trace, plan, assumed: [] };
}

/**
 * Reads and parses a JSON file named by an option, within the input limits: the file system stays
 * at the CLI's edge. The nesting is measured on the text, before JSON.parse builds anything.
 */
async function readJsonFile(option: FileOption, path: string, signal?: AbortSignal, maxBytes?: number): Promise<ParsedFile> {
  const text = await readInputFile(option, path, { ...(signal !== undefined && { signal }), ...(maxBytes !== undefined && { maxBytes }) });
  if (jsonTextDepth(text) > LIMITS.jsonDepth) {
    throw invalidArgument(option, path, `JSON nested at most ${LIMITS.jsonDepth} levels deep (vramfit's input limit)`);
  }
  let json: unknown;
  try {
    // A UTF-8 byte-order mark (Windows editors write one) is not part of the JSON.
    json = JSON.parse(text.replace(/^\uFEFF/, "")) as unknown;
  } catch (error) {
    throw invalidArgument(option, path, `a JSON file (${excerpt((error as Error).message)})`);
  }
  checkFileOption(option, path, json);
  return { path, json };
}

/**
 * A catalog target (`--gpu`) decides the compute capability the plan's kernels and workspaces are
 * chosen for, unless `--compute-capability` says otherwise; an unknown id is left for the target's
 * own error.
 */
function withTargetCapability(options: WorkloadOptions): WorkloadOptions {
  const gpu = (options as { gpu?: unknown }).gpu;
  if (options.computeCapability !== undefined || typeof gpu !== "string") return options;
  try {
    return { ...options, computeCapability: findGpu(gpu).computeCapability };
  } catch {
    return options;
  }
}

/**
 * The workload, its run setup and its plan, from the command's options: files read within the
 * limits (and abandoned when `signal` aborts), options that do not apply refused, every byte count
 * of the plan checked to stay exact. With `--trace FILE`, the traced step instead.
 */
export async function planFromOptions(options: WorkloadOptions, signal?: AbortSignal): Promise<Planned> {
  if (options.trace !== undefined) return tracedFromOptions({ ...options, trace: options.trace }, signal);
  return plannedFromOptions(options, signal);
}

/** The workload vramfit plans, from the command's options (no --trace). */
export async function plannedFromOptions(options: WorkloadOptions, signal?: AbortSignal): Promise<PlannedWorkload> {
  const workload = resolveWorkload({
    ...(options.model !== undefined && { model: options.model }),
    ...(options.hfConfig !== undefined && { hfConfig: await readJsonFile("--hf-config", options.hfConfig, signal) }),
    ...(options.spec !== undefined && { spec: await readJsonFile("--spec", options.spec, signal) }),
    ...(options.params !== undefined && { params: options.params }),
    ...(options.perSample !== undefined && { perSample: options.perSample }),
    ...(options.fixed !== undefined && { fixed: options.fixed }),
  });
  await checkpoint(signal);
  const setup = parseSetup(withTargetCapability(options));
  checkSetupApplies(workload, setup);
  // The same object advice and every target ask for again (one plan per question).
  const plan = sharedPlan(workload, setup);
  checkPlanBytes(plan);
  await checkpoint(signal);
  const assumed = assumedDefaults(options, workload.kind);
  return { workload, plan, setup, assumed };
}
