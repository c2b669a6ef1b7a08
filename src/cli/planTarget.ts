// `plan`'s optional target (--gpu, --memory, or a device's free memory): the budget and the model's largest batch in it.
import { invalidArgument } from "../errors.js";
import { findMaxBatch, formatBytes, memGetInfo, type AllocatorModel, type BudgetLimits, type JobModelOptions, type Target } from "../index.js";
import { planTotals, type MemoryPlan } from "../plan/memoryPlan.js";
import { jobModel } from "../fit/charges.js";
import { resolveCliTargets, type TargetOptions } from "./targets.js";

/** The `target` of `plan --json` when a target is given. */
export interface PlanTarget {
  /** `H100-80GB`, `a 24 GiB budget`, `device 0 (NVIDIA H100 80GB HBM3)`. */
  name: string;
  /** What the budget is, for the chart's budget line. */
  budgetLabel: string;
  budgetBytes: number;
  /** The model's largest batch within the budget; `plan` does not probe (`vramfit batch` does). */
  maxBatch: number;
  /** `device`: the budget is the device's free memory; `analytic`: a catalog GPU or a raw budget. */
  budgetSource: "device" | "analytic";
  allocator: AllocatorModel;
}

export function hasPlanTarget(options: TargetOptions): boolean {
  return options.gpu !== undefined || options.memory !== undefined || options.device !== undefined;
}

/**
 * A device's free memory without probing: NVML's reading (no context), else `cuMemGetInfo`
 * (the library releases the context it creates for it). With no target and no usable GPU,
 * resolving throws ERR_GPU_REQUIRED naming --gpu and --memory.
 */
async function readTarget(target: Target): Promise<Target> {
  if (target.kind !== "reading" || target.memorySource !== "total") return target;
  const { freeBytes } = await memGetInfo(target.device.uuid);
  return { ...target, freeBytes, memorySource: "cuda" };
}

/** Resolves the target and answers with the model on its budget (no probes). */
export async function planTarget(plan: MemoryPlan, options: TargetOptions, limits: BudgetLimits & JobModelOptions): Promise<PlanTarget> {
  if (options.device === "all") throw invalidArgument("--device", "all", "one device ordinal for plan");
  if (planTotals(plan).perSampleBytes <= 0) {
    const option = options.gpu !== undefined ? "--gpu" : options.memory !== undefined ? "--memory" : options.device !== undefined ? "--device" : "--svg";
    throw invalidArgument(option, "a workload that needs no per-sample memory", "a workload whose memory grows with the batch, to find its largest batch");
  }
  const { targets } = await resolveCliTargets({ ...options, analytic: true }, "refuse");
  const target = await readTarget(targets[0]!);
  const result = await findMaxBatch(plan, { ...limits, target });
  const allocator = jobModel(limits, result.device.totalBytes);
  const reserve = result.reserveBytes > 0 ? ` less the ${formatBytes(result.reserveBytes)} reserve` : "";
  if (target.kind === "reading") {
    const name = `device ${target.device.ordinal} (${target.device.name})`;
    const read = target.memorySource === "nvml" ? "free (NVML)" : target.memorySource === "cuda" ? "measured free" : "total memory";
    const cap = limits.maxMemBytes !== undefined && result.budgetBytes === limits.maxMemBytes ? ", capped by --max-mem" : "";
    return { name, budgetLabel: `${read} on ${name}${reserve}${cap}`, budgetBytes: result.budgetBytes, maxBatch: result.batchSize, budgetSource: "device", allocator };
  }
  const name = target.kind === "gpu" ? (result.device.id ?? result.device.name) : `a ${formatBytes(result.device.totalBytes)} budget`;
  // On a catalog GPU the budget is its memory less the reserve; the job's context is charged in the stack.
  const budgetLabel = target.kind === "gpu" ? `${name}'s memory${reserve}` : `--memory${reserve}`;
  return { name, budgetLabel, budgetBytes: result.budgetBytes, maxBatch: result.batchSize, budgetSource: "analytic", allocator };
}
