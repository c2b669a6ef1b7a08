// Does a plan at one batch size fit a target: one probe on a device, or the analytic sum.
import type { Addon, NativeDevice } from "../native/addonTypes.js";
import type { MemoryPlan } from "../plan/memoryPlan.js";
import { MEASURED_DEVICE, plannedBytes } from "./allocator.js";
import { budgetBytes, type BudgetLimits } from "./budget.js";
import { deviceFits } from "./device.js";
import { analyticMemory, deviceSummary, type AnalyticTarget, type DeviceSummary } from "./target.js";

/** One answer of `vramfit check` (its `--json` object). */
export interface CheckResult {
  fits: boolean;
  /** Device bytes the plan takes at the batch (allocator rounding and context included). */
  needBytes: number;
  budgetBytes: number;
  device: DeviceSummary;
  source: "device" | "analytic";
  reason?: string;
  /** Probes made on the device (0 or 1). */
  probes: number;
}

/** `--need SIZE` as a plan: one allocation of that size. */
export function needPlan(bytes: number): MemoryPlan {
  return {
    description: `${bytes} bytes`,
    parameterCount: 0,
    tensors: [{ name: "need", category: "workspace", fixedBytes: bytes, perSampleBytes: 0 }],
  };
}

export function checkAnalytic(
  plan: MemoryPlan,
  batch: number,
  target: AnalyticTarget,
  limits: BudgetLimits = {},
  reason?: string,
): CheckResult {
  const { device, allocator } = analyticMemory(target);
  const budget = budgetBytes(device.freeBytes, limits);
  const needBytes = plannedBytes(plan, batch, allocator);
  return {
    fits: needBytes <= budget,
    needBytes,
    budgetBytes: budget,
    device,
    source: "analytic",
    ...(reason !== undefined && { reason }),
    probes: 0,
  };
}

export async function checkOnDevice(
  addon: Addon,
  device: NativeDevice,
  plan: MemoryPlan,
  batch: number,
  options: BudgetLimits & { touch?: boolean } = {},
): Promise<CheckResult> {
  const { freeBytes } = await addon.memGetInfo(device.ordinal);
  const budget = budgetBytes(freeBytes, options);
  const evaluator = deviceFits(addon, device.ordinal, plan, budget, options.touch ?? true);
  const fits = await evaluator.fits(batch);
  return {
    fits,
    needBytes: plannedBytes(plan, batch, MEASURED_DEVICE),
    budgetBytes: budget,
    device: deviceSummary(device, freeBytes),
    source: "device",
    probes: evaluator.probes(),
  };
}
