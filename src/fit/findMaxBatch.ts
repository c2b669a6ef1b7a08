// The largest batch on one target: the seeded device search, or the analytic answer.
import { invalidArgument } from "../errors.js";
import type { Addon, NativeDevice } from "../native/addonTypes.js";
import { planTotals, type MemoryPlan } from "../plan/memoryPlan.js";
import { MEASURED_DEVICE, plannedBytes } from "./allocator.js";
import { analyticMaxBatch } from "./analytic.js";
import { budgetBytes, type BudgetLimits } from "./budget.js";
import { deviceFits } from "./device.js";
import { freeBytesForProbe, withDeviceLock, type DeviceAccessOptions } from "./deviceMemory.js";
import { searchMaxBatch } from "./search.js";
import { analyticMemory, deviceSummary, type AnalyticTarget, type DeviceSummary } from "./target.js";

export interface SearchLimits extends BudgetLimits {
  /** The largest batch wanted; without it there is no upper bound. */
  maxBatch?: number;
}

/** One answer of `vramfit batch` (its `--json` object). */
export interface BatchResult {
  batchSize: number;
  source: "device" | "analytic";
  /** Why the answer is analytic, when it is. */
  reason?: string;
  device: DeviceSummary;
  budgetBytes: number;
  /** Device bytes the plan takes at `batchSize` (allocator rounding and context included). */
  bytesAtBatch: number;
  /** Σ fixed bytes of the plan, before rounding. */
  fixedBytes: number;
  /** Σ per-sample bytes of the plan, before rounding. */
  perSampleBytes: number;
  /** fits() evaluations that reached the device (0 for an analytic answer). */
  probes: number;
  /** What the analytic model predicted for the same budget (the device search's seed). */
  predictedBatchSize: number;
  elapsedMs: number;
}

/** A plan without per-sample bytes fits at every batch size: the search needs a cap. */
function requireBound(plan: MemoryPlan, limits: SearchLimits): void {
  if (planTotals(plan).perSampleBytes <= 0 && limits.maxBatch === undefined) {
    throw invalidArgument("--max-batch", "none", "a cap: this workload needs no per-sample memory, so any batch fits");
  }
}

export async function analyticBatch(
  plan: MemoryPlan,
  target: AnalyticTarget,
  limits: SearchLimits = {},
  reason?: string,
): Promise<BatchResult> {
  requireBound(plan, limits);
  // process.hrtime, not performance.now(): the first use of `performance` loads Node's perf_hooks,
  // a millisecond of the CLI's cold start, which is mostly this function (docs/benchmarks.md).
  const started = process.hrtime.bigint();
  const { device, allocator } = analyticMemory(target);
  const budget = budgetBytes(device.freeBytes, limits);
  const { batchSize } = await analyticMaxBatch(plan, budget, allocator, limits.maxBatch);
  return {
    batchSize,
    source: "analytic",
    ...(reason !== undefined && { reason }),
    device,
    budgetBytes: budget,
    bytesAtBatch: plannedBytes(plan, batchSize, allocator),
    ...planTotals(plan),
    probes: 0,
    predictedBatchSize: batchSize,
    elapsedMs: Number(process.hrtime.bigint() - started) / 1e6,
  };
}

export interface DeviceSearchOptions extends SearchLimits, DeviceAccessOptions {
  /** Write every probed byte so the memory is really backed (default true). */
  touch?: boolean;
}

/**
 * Measures free memory on the device, seeds the search with the analytic answer for exactly that
 * budget, and verifies it with probes: two when the model is right. Holds the device's
 * cross-process lock throughout (elapsedMs starts once it is held), so another vramfit's probes
 * cannot shrink the free memory under this search.
 */
export async function deviceBatch(
  addon: Addon,
  device: NativeDevice,
  plan: MemoryPlan,
  options: DeviceSearchOptions = {},
): Promise<BatchResult> {
  requireBound(plan, options);
  return withDeviceLock(addon, device, options, () => searchDevice(addon, device, plan, options));
}

async function searchDevice(addon: Addon, device: NativeDevice, plan: MemoryPlan, options: DeviceSearchOptions): Promise<BatchResult> {
  const started = performance.now();
  const freeBytes = await freeBytesForProbe(addon, device);
  const budget = budgetBytes(freeBytes, options);
  const predicted = await analyticMaxBatch(plan, budget, MEASURED_DEVICE, options.maxBatch);
  const evaluator = deviceFits(addon, device.ordinal, plan, budget, options.touch ?? true, options.signal);
  const { batchSize } = await searchMaxBatch(evaluator.fits, {
    seed: predicted.batchSize,
    ...(options.maxBatch !== undefined && { maxBatch: options.maxBatch }),
    ...(options.signal !== undefined && { signal: options.signal }),
  });
  return {
    batchSize,
    source: "device",
    device: deviceSummary(device, freeBytes),
    budgetBytes: budget,
    bytesAtBatch: plannedBytes(plan, batchSize, MEASURED_DEVICE),
    ...planTotals(plan),
    probes: evaluator.probes(),
    predictedBatchSize: predicted.batchSize,
    elapsedMs: performance.now() - started,
  };
}
