// Does a plan at one batch size fit a target: one probe on a device, NVML's free memory, or the analytic sum.
import type { NativeProbeLimit } from "../native/addonTypes.js";
import type { MemoryPlan } from "../plan/memoryPlan.js";
import { bytesWithin, fitsBudget, type AllocatorKind } from "./allocator.js";
import { budgetBytes, reserveBytes, type BudgetLimits } from "./budget.js";
import { jobModel, type JobModelOptions } from "./charges.js";
import { deviceFits, type ProbeEvent } from "./device.js";
import { withDeviceLock, type DeviceAccessOptions } from "./deviceMemory.js";
import { deviceCharges, modelled, probeOptions } from "./findMaxBatch.js";
import { analyticMemory, deviceSummary, type AnalyticTarget, type DeviceSummary, type DeviceTarget } from "./target.js";

/** One answer of `vramfit check` (its `--json` object). */
export interface CheckResult {
  fits: boolean;
  /**
   * Device bytes the plan takes at the batch: where it fits, the most the allocator's segments
   * hold at once when the step is replayed within the budget, else what they hold with no limit
   * (more than the budget); and the job's CUDA context.
   */
  needBytes: number;
  /** What the job may use: free memory (with what vramfit's own context holds) less the reserve, capped by --max-mem. */
  budgetBytes: number;
  device: DeviceSummary;
  source: "device" | "analytic";
  /** Why the answer is analytic (no usable GPU, a catalog target, --analytic); null when the device answered. */
  reason: string | null;
  /** Probes made on the device (0 or 1). */
  probes: number;
  /**
   * Who read the free memory: `cuda` (a probe, vramfit's context live), `nvml` (no context, no
   * probe), or `total` (`--analytic` where nothing could be read). Absent for a catalog GPU or a raw budget.
   */
  memorySource?: "nvml" | "cuda" | "total";
  /** On a probe that did not fit: what stopped it (the driver ran out, the reserve, --max-mem). */
  limit?: NativeProbeLimit;
  allocator: AllocatorKind;
  /** The PYTORCH_CUDA_ALLOC_CONF modelled, only what differs from PyTorch's defaults ("" for none). */
  allocConf: string;
  jobContextBytes: number;
  ownContextBytes: number;
  reserveBytes: number;
}

export type CheckOptions = BudgetLimits & JobModelOptions;

/** `--need SIZE` as a plan: one allocation of that size. */
export function needPlan(bytes: number): MemoryPlan {
  return {
    description: `${bytes} bytes`,
    parameterCount: 0,
    tensors: [{ name: "need", category: "workspace", fixedBytes: bytes, perSampleBytes: 0 }],
  };
}

/** The analytic answer on a target whose free memory is known (a catalog GPU, a raw budget, a device's NVML reading). */
export function checkAnalytic(plan: MemoryPlan, batch: number, target: AnalyticTarget, options: CheckOptions = {}, reason?: string): CheckResult {
  const { device, memory } = analyticMemory(target);
  const model = jobModel(options, memory.totalBytes);
  const budget = budgetBytes(memory, options);
  // The same fits() as the analytic search's: `check --batch B` agrees with `batch` at B and B + 1.
  const needBytes = bytesWithin(plan, batch, model, budget);
  return {
    fits: fitsBudget(plan, batch, model, budget),
    needBytes,
    budgetBytes: budget,
    device,
    source: "analytic",
    reason: reason ?? null,
    probes: 0,
    ...(target.kind === "reading" && { memorySource: target.memorySource }),
    ...modelled(model),
    jobContextBytes: model.contextBytes,
    ownContextBytes: 0,
    reserveBytes: reserveBytes(memory.totalBytes, options),
  };
}

/**
 * The same question answered from NVML's free memory, with no probe and no CUDA context: the
 * job's whole context is charged, as on a catalog GPU (NVML's reading cannot include it yet).
 */
export function checkOnNvml(target: DeviceTarget, nvmlFreeBytes: number, uuid: string, plan: MemoryPlan, batch: number, options: CheckOptions = {}): CheckResult {
  const device = { ...target.device, uuid };
  const result = checkAnalytic(plan, batch, { kind: "reading", device, freeBytes: nvmlFreeBytes, memorySource: "nvml" }, options);
  const { reason: _, ...rest } = result;
  return { ...rest, source: "device", reason: null, device: deviceSummary(device, nvmlFreeBytes), memorySource: "nvml" };
}

export interface DeviceCheckOptions extends CheckOptions, JobModelOptions, DeviceAccessOptions {
  touch?: boolean;
  virtualMemory?: boolean;
  onProbe?: (event: ProbeEvent) => void;
}

/** One probe of the plan at `batch`, under the device's cross-process lock, within the reserve. */
export async function checkOnDevice(target: DeviceTarget, plan: MemoryPlan, batch: number, options: DeviceCheckOptions = {}): Promise<CheckResult> {
  return withDeviceLock(target.addon, target.device, options, async () => {
    const charges = await deviceCharges(target, options);
    const { model, reading } = charges;
    let limit: NativeProbeLimit | null = null;
    const evaluator = deviceFits(target.addon, target.device.ordinal, plan, {
      ...probeOptions(charges, options),
      onProbe: (event) => {
        if (event.phase === "end") limit = event.limit;
        options.onProbe?.(event);
      },
    });
    const fits = await evaluator.fits(batch);
    return {
      fits,
      needBytes: bytesWithin(plan, batch, model, charges.budget),
      budgetBytes: charges.budget,
      device: deviceSummary(target.device, reading.freeBytes),
      source: "device",
      reason: null,
      probes: evaluator.probes(),
      memorySource: "cuda",
      ...(limit !== null && { limit }),
      ...modelled(model),
      jobContextBytes: model.contextBytes,
      ownContextBytes: reading.ownContextBytes,
      reserveBytes: charges.reserve,
    };
  });
}
