// The workload and run setup a command's options describe, with the defaults it assumed.
import { readFileSync } from "node:fs";
import { invalidArgument } from "../errors.js";
import { checkSetupApplies } from "../plan/applicability.js";
import { buildPlan } from "../plan/buildPlan.js";
import type { MemoryPlan } from "../plan/memoryPlan.js";
import { assumedDefaults, parseSetup, type RunSetup, type SetupOptions } from "../plan/setup.js";
import { resolveWorkload, type ParsedFile } from "../workload/resolveWorkload.js";
import type { Workload } from "../workload/workload.js";

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

/** Reads and parses a JSON file named by an option: the file system stays at the CLI's edge. */
function readJsonFile(option: string, path: string): ParsedFile {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw invalidArgument(option, path, `a readable JSON file (${(error as NodeJS.ErrnoException).code ?? "unreadable"})`);
  }
  try {
    return { path, json: JSON.parse(text) as unknown };
  } catch (error) {
    throw invalidArgument(option, path, `a JSON file (${(error as Error).message})`);
  }
}

export function planFromOptions(options: WorkloadOptions): PlannedWorkload {
  const workload = resolveWorkload({
    ...(options.model !== undefined && { model: options.model }),
    ...(options.hfConfig !== undefined && { hfConfig: readJsonFile("--hf-config", options.hfConfig) }),
    ...(options.spec !== undefined && { spec: readJsonFile("--spec", options.spec) }),
    ...(options.params !== undefined && { params: options.params }),
    ...(options.perSample !== undefined && { perSample: options.perSample }),
    ...(options.fixed !== undefined && { fixed: options.fixed }),
  });
  const setup = parseSetup(options);
  checkSetupApplies(workload, setup);
  const plan = buildPlan(workload, setup);
  const assumed = assumedDefaults(options, workload.kind);
  return { workload, plan, setup, assumed };
}
