// `plan`'s optional target (--gpu, --memory, or a device's measured free memory): the budget and the model's largest batch in it.
import { invalidArgument } from "../errors.js";
import { MEASURED_DEVICE, type AllocatorModel } from "../fit/allocator.js";
import { analyticMaxBatch } from "../fit/analytic.js";
import { budgetBytes, type BudgetLimits } from "../fit/budget.js";
import { analyticMemory } from "../fit/target.js";
import { planTotals, type MemoryPlan } from "../plan/memoryPlan.js";
import { formatBytes } from "../units.js";
import { resolveTargets, type TargetOptions } from "./targets.js";

/** The `target` of `plan --json` when a target is given. */
export interface PlanTarget {
  /** `H100-80GB`, `a 24 GiB budget`, `device 0 (NVIDIA H100 80GB HBM3)`. */
  name: string;
  /** What the budget is, for the chart's budget line. */
  budgetLabel: string;
  budgetBytes: number;
  /** The model's largest batch within the budget; `plan` does not probe (`vramfit batch` does). */
  maxBatch: number;
  /** `device`: the budget is measured free memory; `analytic`: a catalog GPU or a raw budget. */
  budgetSource: "device" | "analytic";
  allocator: AllocatorModel;
}

export function hasPlanTarget(options: TargetOptions): boolean {
  return options.gpu !== undefined || options.memory !== undefined || options.device !== undefined;
}

/**
 * Resolves the target: a catalog GPU or a raw budget analytically; a device by reading its free
 * memory (the budget a job would have) without probing. With no target and no usable GPU it
 * throws ERR_GPU_REQUIRED, naming --gpu and --memory.
 */
export async function planTarget(plan: MemoryPlan, options: TargetOptions, limits: BudgetLimits): Promise<PlanTarget> {
  if (options.device === "all") throw invalidArgument("--device", "all", "one device ordinal for plan");
  if (planTotals(plan).perSampleBytes <= 0) {
    const option = options.gpu !== undefined ? "--gpu" : options.memory !== undefined ? "--memory" : options.device !== undefined ? "--device" : "--svg";
    throw invalidArgument(option, "a workload that needs no per-sample memory", "a workload whose memory grows with the batch, to find its largest batch");
  }
  const targets = await resolveTargets(options, "refuse");
  if (targets.kind === "analytic") {
    const target = targets.targets[0]!;
    const { device, allocator } = analyticMemory(target);
    const budget = budgetBytes(device.freeBytes, limits);
    const name = target.kind === "gpu" ? (device.id ?? device.name) : `a ${formatBytes(target.bytes)} budget`;
    // On a catalog GPU the budget is its memory; the assumed CUDA context is charged in the stack.
    const budgetLabel = target.kind === "gpu" ? `${name}'s memory` : "--memory";
    return { name, budgetLabel, budgetBytes: budget, maxBatch: (await analyticMaxBatch(plan, budget, allocator)).batchSize, budgetSource: "analytic", allocator };
  }
  const device = targets.devices[0]!;
  const { freeBytes } = await targets.addon.memGetInfo(device.ordinal);
  const budget = budgetBytes(freeBytes, limits);
  const name = `device ${device.ordinal} (${device.name})`;
  const reserve = limits.reserveBytes ? ` less the ${formatBytes(limits.reserveBytes)} --reserve` : "";
  const cap = limits.maxMemBytes !== undefined && limits.maxMemBytes < freeBytes - (limits.reserveBytes ?? 0) ? `, capped by --max-mem` : "";
  return {
    name,
    budgetLabel: `measured free on ${name}${reserve}${cap}`,
    budgetBytes: budget,
    maxBatch: (await analyticMaxBatch(plan, budget, MEASURED_DEVICE)).batchSize,
    budgetSource: "device",
    allocator: MEASURED_DEVICE,
  };
}
