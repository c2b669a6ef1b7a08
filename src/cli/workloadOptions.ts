// The workload and run setup a command's options describe, with the defaults it assumed.
import { invalidArgument } from "../errors.js";
import type { Optimizer, Precision } from "../plan/bytesPerParameter.js";
import { buildPlan } from "../plan/buildPlan.js";
import type { MemoryPlan } from "../plan/memoryPlan.js";
import { DEFAULT_SETUP, type Mode, type RunSetup } from "../plan/setup.js";

export interface WorkloadOptions {
  params?: number;
  perSample?: number;
  fixed?: number;
  precision?: Precision;
  optimizer?: Optimizer;
  mode?: Mode;
}

export interface PlannedWorkload {
  plan: MemoryPlan;
  /** The defaults taken for options the user did not give, e.g. `--precision amp`. */
  assumed: string[];
}

export function planFromOptions(options: WorkloadOptions): PlannedWorkload {
  if (options.params === undefined || options.perSample === undefined) {
    const missing = options.params === undefined ? "--params" : "--per-sample";
    throw invalidArgument(missing, "none", "a workload: --params N --per-sample SIZE [--fixed SIZE]");
  }
  const assumed: string[] = [];
  const setup: RunSetup = {
    mode: options.mode ?? (assumed.push(`--mode ${DEFAULT_SETUP.mode}`), DEFAULT_SETUP.mode),
    precision: options.precision ?? (assumed.push(`--precision ${DEFAULT_SETUP.precision}`), DEFAULT_SETUP.precision),
    optimizer: options.optimizer ?? (assumed.push(`--optimizer ${DEFAULT_SETUP.optimizer}`), DEFAULT_SETUP.optimizer),
  };
  const workload = {
    kind: "affine" as const,
    parameterCount: options.params,
    perSampleBytes: options.perSample,
    fixedBytes: options.fixed ?? 0,
  };
  if (workload.perSampleBytes <= 0) {
    throw invalidArgument("--per-sample", options.perSample, "a size above 0 (bytes each sample adds)");
  }
  return { plan: buildPlan(workload, setup), assumed };
}
