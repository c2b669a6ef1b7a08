// Does a plan at one batch size fit a target: one probe on a device, or the analytic sum.
import type { Addon, NativeDevice } from "../native/addonTypes.js";
import type { MemoryPlan } from "../plan/memoryPlan.js";
import { ASSUMED_CONTEXT_BYTES, MEASURED_DEVICE, plannedBytes } from "./allocator.js";
import { budgetBytes, type BudgetLimits } from "./budget.js";
import { deviceFits } from "./device.js";
import { freeBytesForProbe, withDeviceLock, type DeviceAccessOptions } from "./deviceMemory.js";
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
  /** On a device: who measured the free memory, NVML (no context, no probe) or CUDA. */
  memorySource?: "nvml" | "cuda";
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

/** One probe of the plan at `batch`, under the device's cross-process lock. */
export async function checkOnDevice(
  addon: Addon,
  device: NativeDevice,
  plan: MemoryPlan,
  batch: number,
  options: BudgetLimits & DeviceAccessOptions & { touch?: boolean } = {},
): Promise<CheckResult> {
  return withDeviceLock(addon, device, options, async () => {
    const freeBytes = await freeBytesForProbe(addon, device);
    const budget = budgetBytes(freeBytes, options);
    const evaluator = deviceFits(addon, device.ordinal, plan, budget, options.touch ?? true, options.signal);
    const fits = await evaluator.fits(batch);
    return {
      fits,
      needBytes: plannedBytes(plan, batch, MEASURED_DEVICE),
      budgetBytes: budget,
      device: deviceSummary(device, freeBytes),
      source: "device",
      probes: evaluator.probes(),
      memorySource: "cuda",
    };
  });
}

/**
 * The same question answered from NVML's free memory, with no probe and no CUDA context: the
 * budget is free − the context the job itself will create (ASSUMED_CONTEXT_BYTES, which NVML's
 * reading cannot include yet) − reserve, capped by --max-mem.
 */
export function checkOnNvml(
  device: NativeDevice,
  nvmlFreeBytes: number,
  plan: MemoryPlan,
  batch: number,
  limits: BudgetLimits = {},
): CheckResult {
  const budget = budgetBytes(Math.max(0, nvmlFreeBytes - ASSUMED_CONTEXT_BYTES), limits);
  const needBytes = plannedBytes(plan, batch, MEASURED_DEVICE);
  return {
    fits: needBytes <= budget,
    needBytes,
    budgetBytes: budget,
    device: deviceSummary(device, nvmlFreeBytes),
    source: "device",
    probes: 0,
    memorySource: "nvml",
  };
}
