// The largest batch on one target: the seeded device search, or the analytic answer.
import { invalidArgument } from "../errors.js";
import type { NativeDevice } from "../native/addonTypes.js";
import { planTotals, type MemoryPlan } from "../plan/memoryPlan.js";
import { formatAllocConf } from "./allocConf.js";
import { bytesWithin, type AllocatorKind, type AllocatorModel } from "./allocator.js";
import { analyticMaxBatch } from "./analytic.js";
import { budgetBytes, reserveBytes } from "./budget.js";
import { jobModel, type JobModelOptions, type SearchLimits } from "./charges.js";
import { unpaidContextBytes } from "./context.js";
import { deviceFits, type DeviceProbeOptions, type ProbeEvent } from "./device.js";
import { readDevice, withDeviceLock, type DeviceAccessOptions } from "./deviceMemory.js";
import { searchMaxBatch } from "./search.js";
import { analyticMemory, deviceSummary, type AnalyticTarget, type DeviceSummary, type DeviceTarget } from "./target.js";
import { elapsedMsSince, roundMs } from "../duration.js";

export type { SearchLimits };

/** One answer of `vramfit batch` (its `--json` object). */
export interface BatchResult {
  batchSize: number;
  source: "device" | "analytic";
  /** Why the answer is analytic (no usable GPU, a catalog target, --analytic); null when the device answered. */
  reason: string | null;
  device: DeviceSummary;
  /**
   * Where the free memory came from: `cuda` (measured with vramfit's context live), `nvml` (read
   * without a context: `--analytic` on a GPU), `total` (nothing could be read: the device's total).
   * Absent for a catalog GPU or a raw budget.
   */
  memorySource?: "cuda" | "nvml" | "total";
  /** What the job may use: free memory (with what vramfit's own context holds) less the reserve, capped by --max-mem. */
  budgetBytes: number;
  /**
   * Device bytes the plan takes at `batchSize` within the budget: the most the allocator's
   * segments hold at once when its step is replayed at that capacity, and the job's CUDA context.
   */
  bytesAtBatch: number;
  /** Σ fixed bytes of the plan, before the allocator. */
  fixedBytes: number;
  /** Σ per-sample bytes of the plan, before the allocator. */
  perSampleBytes: number;
  /** fits() evaluations that reached the device (0 for an analytic answer). */
  probes: number;
  /** What the analytic model predicted for the same budget (the device search's seed). */
  predictedBatchSize: number;
  /** The allocator the job was modelled (and probed) with. */
  allocator: AllocatorKind;
  /** The PYTORCH_CUDA_ALLOC_CONF modelled, only what differs from PyTorch's defaults ("" for none). */
  allocConf: string;
  /** The job's CUDA context charged in bytesAtBatch. */
  jobContextBytes: number;
  /** vramfit's own context, measured on the device (NVML's figure for this process); 0 elsewhere. */
  ownContextBytes: number;
  /** The headroom left free (and kept free during every probe). */
  reserveBytes: number;
  elapsedMs: number;
}

export interface DeviceSearchOptions extends SearchLimits, JobModelOptions, DeviceAccessOptions {
  /** Write every probed byte so the memory is really backed (default true). */
  touch?: boolean;
  /**
   * Map expandable segments' pages through the driver's virtual-memory API, one `cuMemCreate` per
   * page as PyTorch does (default true, where the driver has the API); false: one `cuMemAlloc` per
   * run of pages, the same bytes with fewer driver calls (a simulated device of terabytes holds
   * millions of pages).
   */
  virtualMemory?: boolean;
  onProbe?: (event: ProbeEvent) => void;
}

/** The allocator an answer says it modelled: its kind and its PYTORCH_CUDA_ALLOC_CONF. */
export function modelled(model: AllocatorModel): { allocator: AllocatorKind; allocConf: string } {
  return { allocator: model.kind, allocConf: model.conf === undefined ? "" : formatAllocConf(model.conf) };
}

/** A plan without per-sample bytes fits at every batch size: the search needs a cap. */
function requireBound(plan: MemoryPlan, limits: SearchLimits): void {
  if (planTotals(plan).perSampleBytes <= 0 && limits.maxBatch === undefined) {
    throw invalidArgument("--max-batch", "none", "a cap: this workload needs no per-sample memory, so any batch fits");
  }
}

export async function analyticBatch(plan: MemoryPlan, target: AnalyticTarget, options: SearchLimits & JobModelOptions = {}, reason?: string): Promise<BatchResult> {
  requireBound(plan, options);
  // process.hrtime, not performance.now(): the first use of `performance` loads Node's perf_hooks,
  // a millisecond of the CLI's cold start, which is mostly this function (docs/benchmarks.md).
  const started = process.hrtime.bigint();
  const { device, memory } = analyticMemory(target);
  const model = jobModel(options, memory.totalBytes);
  const budget = budgetBytes(memory, options);
  const { batchSize } = await analyticMaxBatch(plan, budget, model, options.maxBatch);
  return {
    batchSize,
    source: "analytic",
    reason: reason ?? null,
    device,
    ...(target.kind === "reading" && { memorySource: target.memorySource }),
    budgetBytes: budget,
    bytesAtBatch: bytesWithin(plan, batchSize, model, budget),
    ...planTotals(plan),
    probes: 0,
    predictedBatchSize: batchSize,
    ...modelled(model),
    jobContextBytes: model.contextBytes,
    ownContextBytes: 0,
    reserveBytes: reserveBytes(memory.totalBytes, options),
    elapsedMs: roundMs(Number(process.hrtime.bigint() - started) / 1e6),
  };
}

/**
 * Reads free memory on the device, seeds the search with the analytic answer for exactly that
 * budget, and lets probes decide, upward as well as downward: two probes (the seed and the next
 * batch) when the model is right. Holds the device's cross-process lock throughout (elapsedMs
 * starts once it is held), so another vramfit's probes cannot shrink the free memory under it.
 */
export async function deviceBatch(target: DeviceTarget, plan: MemoryPlan, options: DeviceSearchOptions = {}): Promise<BatchResult> {
  requireBound(plan, options);
  return withDeviceLock(target.addon, target.device, options, () => searchDevice(target, plan, options));
}

/** The device's budget and the probe's floor and cap, from one reading. */
export async function deviceCharges(target: DeviceTarget, options: SearchLimits & JobModelOptions) {
  const reading = await readDevice(target.addon, target.device, target.nvml);
  const model = jobModel(options, reading.totalBytes);
  const charge = { jobContextBytes: model.contextBytes, spentBytes: Math.min(reading.ownContextBytes, model.contextBytes) };
  const memory = { freeBytes: reading.freeBytes, totalBytes: reading.totalBytes };
  const reserve = reserveBytes(reading.totalBytes, options);
  return {
    model,
    reading,
    reserve,
    budget: budgetBytes(memory, options, charge.spentBytes),
    // The addon holds the floor against the driver's free figure: on an integrated GPU that is
    // more than MemAvailable lets a probe take, and the difference stays free too.
    floorBytes: reserve + unpaidContextBytes(charge) + (reading.driverFreeBytes - reading.freeBytes),
    ...(options.maxMemBytes !== undefined && { limitBytes: options.maxMemBytes - model.contextBytes }),
  };
}

/** How every probe on the device is made under these charges: the job's allocator, the addon's floor and cap. */
export function probeOptions(
  charges: Awaited<ReturnType<typeof deviceCharges>>,
  options: { touch?: boolean; virtualMemory?: boolean; signal?: AbortSignal; onProbe?: (event: ProbeEvent) => void },
): DeviceProbeOptions {
  return {
    allocator: charges.model.kind,
    ...(charges.model.conf !== undefined && { conf: charges.model.conf }),
    ...(charges.model.allowedBytes !== undefined && { allowedBytes: charges.model.allowedBytes }),
    capacityBytes: charges.budget - charges.model.contextBytes,
    floorBytes: charges.floorBytes,
    ...(charges.limitBytes !== undefined && { limitBytes: charges.limitBytes }),
    touch: options.touch ?? true,
    virtualMemory: options.virtualMemory ?? true,
    ...(options.signal !== undefined && { signal: options.signal }),
    ...(options.onProbe !== undefined && { onProbe: options.onProbe }),
  };
}

async function searchDevice(target: DeviceTarget, plan: MemoryPlan, options: DeviceSearchOptions): Promise<BatchResult> {
  const started = performance.now();
  const charges = await deviceCharges(target, options);
  const { model, reading, budget } = charges;
  const predicted = await analyticMaxBatch(plan, budget, model, options.maxBatch);
  const evaluator = deviceFits(target.addon, target.device.ordinal, plan, probeOptions(charges, options));
  const { batchSize } = await searchMaxBatch(evaluator.fits, {
    seed: predicted.batchSize,
    ...(options.maxBatch !== undefined && { maxBatch: options.maxBatch }),
    ...(options.signal !== undefined && { signal: options.signal }),
  });
  return {
    batchSize,
    source: "device",
    reason: null,
    device: deviceSummary(target.device, reading.freeBytes),
    memorySource: "cuda",
    budgetBytes: budget,
    bytesAtBatch: bytesWithin(plan, batchSize, model, budget),
    ...planTotals(plan),
    probes: evaluator.probes(),
    predictedBatchSize: predicted.batchSize,
    ...modelled(model),
    jobContextBytes: model.contextBytes,
    ownContextBytes: reading.ownContextBytes,
    reserveBytes: charges.reserve,
    elapsedMs: elapsedMsSince(started),
  };
}

export type { NativeDevice };
