// The workload and run setup a command's options describe, with the defaults it assumed.
import { checkpoint } from "../checkpoint.js";
import { excerpt, invalidArgument } from "../errors.js";
import { checkSetupApplies } from "../plan/applicability.js";
import { checkPlanBytes } from "../plan/planLimits.js";
import type { MemoryPlan } from "../plan/memoryPlan.js";
import { sharedPlan } from "../plan/planCache.js";
import { assumedDefaults, parseSetup, type RunSetup, type SetupOptions } from "../plan/setup.js";
import { resolveWorkload, type ParsedFile } from "../workload/resolveWorkload.js";
import type { Workload } from "../workload/workload.js";
import { LIMITS, jsonTextDepth } from "../workload/limits.js";
import { readInputFile } from "./inputFile.js";

export interface WorkloadOptions extends SetupOptions {
  model?: string;
  hfConfig?: string;
  spec?: string;
  params?: string;
  perSample?: string;
  fixed?: string;
}

export interface PlannedWorkload {
  workload: Workload;
  plan: MemoryPlan;
  /** The run setup the options describe (what advice varies). */
  setup: RunSetup;
  /** The defaults taken for options the user did not give, e.g. `--precision amp`. */
  assumed: string[];
}

/**
 * Reads and parses a JSON file named by an option, within the input limits: the file system stays
 * at the CLI's edge. The nesting is measured on the text, before JSON.parse builds anything.
 */
async function readJsonFile(option: string, path: string, signal?: AbortSignal): Promise<ParsedFile> {
  const text = await readInputFile(option, path, { ...(signal !== undefined && { signal }) });
  if (jsonTextDepth(text) > LIMITS.jsonDepth) {
    throw invalidArgument(option, path, `JSON nested at most ${LIMITS.jsonDepth} levels deep (vramfit's input limit)`);
  }
  try {
    return { path, json: JSON.parse(text) as unknown };
  } catch (error) {
    throw invalidArgument(option, path, `a JSON file (${excerpt((error as Error).message)})`);
  }
}

/**
 * The workload, its run setup and its plan, from the command's options: files read within the
 * limits (and abandoned when `signal` aborts), options that do not apply refused, every byte count
 * of the plan checked to stay exact.
 */
export async function planFromOptions(options: WorkloadOptions, signal?: AbortSignal): Promise<PlannedWorkload> {
  const workload = resolveWorkload({
    ...(options.model !== undefined && { model: options.model }),
    ...(options.hfConfig !== undefined && { hfConfig: await readJsonFile("--hf-config", options.hfConfig, signal) }),
    ...(options.spec !== undefined && { spec: await readJsonFile("--spec", options.spec, signal) }),
    ...(options.params !== undefined && { params: options.params }),
    ...(options.perSample !== undefined && { perSample: options.perSample }),
    ...(options.fixed !== undefined && { fixed: options.fixed }),
  });
  await checkpoint(signal);
  const setup = parseSetup(options);
  checkSetupApplies(workload, setup);
  // The same object advice and every target ask for again (one plan per question).
  const plan = sharedPlan(workload, setup);
  checkPlanBytes(plan);
  await checkpoint(signal);
  const assumed = assumedDefaults(options, workload.kind);
  return { workload, plan, setup, assumed };
}
