// What `check` and `batch` add around a result: the host side of --offload, and ranked advice when it does not fit.
import { allowedMemoryBytes, parseAllocConf } from "../fit/allocConf.js";
import { advise, type AdviceReport, type AdviceTarget } from "../advice/advise.js";
import { measureAnalytic } from "../advice/scaleOut.js";
import { withDeviceLock } from "../fit/deviceMemory.js";
import { findMaxBatch, type BatchResult, type BudgetLimits, type DeviceLockOptions, type JobModelOptions, type Target } from "../index.js";
import { hostBytes, type MemoryPlan } from "../plan/memoryPlan.js";
import { formatBytes } from "../units.js";
import type { HostBudget } from "./hostMemory.js";
import { asLongRun } from "./longRun.js";
import { renderTable } from "./table.js";
import type { PlannedWorkload } from "./workloadOptions.js";

/** The host side of a plan that offloads (`host` in `check --json` and `batch --json`). */
export interface HostCheck {
  /** Host bytes on one node: every sharing rank's offloaded states. */
  needBytes: number;
  /** What the host offers; null when unknown (no --host-memory and no /proc/meminfo). */
  budgetBytes: number | null;
  source: HostBudget["source"] | null;
  /** null when the budget is unknown. */
  fits: boolean | null;
  /** Ranks whose states share the host (--gpus-per-node). */
  ranks: number;
}

export function checkHost(plan: MemoryPlan, budget: HostBudget | undefined): HostCheck | undefined {
  if (plan.host === undefined) return undefined;
  const needBytes = hostBytes(plan);
  return {
    needBytes,
    budgetBytes: budget?.bytes ?? null,
    source: budget?.source ?? null,
    fits: budget === undefined ? null : needBytes <= budget.bytes,
    ranks: plan.host.ranks,
  };
}

export function describeHost(host: HostCheck): string {
  const verdict = host.fits === null ? "unknown" : host.fits ? "fits" : "does not fit";
  const of = host.budgetBytes === null ? "(host memory unknown: pass --host-memory SIZE)" : `of ${formatBytes(host.budgetBytes)} [${host.source}]`;
  const ranks = host.ranks > 1 ? ` for ${host.ranks} GPUs` : "";
  return `${verdict}: needs ${formatBytes(host.needBytes)}${ranks} ${of}`;
}

export interface AdviceOptions {
  limits: BudgetLimits & JobModelOptions;
  maxBatch?: number;
  touch: boolean;
  hostBudget?: HostBudget;
  /** On a device: the cross-process lock and the interruption signal, as for the command's own probes. */
  access?: { signal?: AbortSignal; lock?: DeviceLockOptions | false };
  /** Interrupts the advice's measurements (SIGINT, SIGTERM). */
  signal?: AbortSignal;
}

/** What advice needs of a result: where it was measured and how the job was charged there. */
export type AdviceBasis = Pick<BatchResult, "budgetBytes" | "allocator" | "allocConf" | "jobContextBytes" | "device" | "reserveBytes" | "ownContextBytes">;

/** An answer's modelled configuration as its allocator model has it, with the cap its memory fraction sets on the device. */
function allocConfModel(text: string, totalBytes: number): { conf: ReturnType<typeof parseAllocConf>; allowedBytes?: number } {
  const conf = parseAllocConf(text);
  const allowedBytes = allowedMemoryBytes(conf, totalBytes);
  return { conf, ...(allowedBytes !== Number.POSITIVE_INFINITY && { allowedBytes }) };
}

/** Where `result` was evaluated, for advice to measure its changes the same way (the same probes on a device). */
export function adviceTarget(target: Target, result: AdviceBasis, options: AdviceOptions): AdviceTarget {
  const maxBatch = options.maxBatch !== undefined ? { maxBatch: options.maxBatch } : {};
  const base = {
    budgetBytes: result.budgetBytes,
    allocator: { kind: result.allocator, contextBytes: result.jobContextBytes, ...(result.allocConf !== "" && allocConfModel(result.allocConf, result.device.totalBytes)) },
    totalBytes: result.device.totalBytes,
    ...(result.device.id !== undefined && { id: result.device.id }),
    ...maxBatch,
  };
  if (target.kind !== "device") return base;
  return {
    ...base,
    measure: async (plan) => (await findMaxBatch(plan, { ...options.limits, ...maxBatch, ...options.access, touch: options.touch, keepWarm: true, target })).batchSize,
  };
}

/** The advice for one target: the largest batch now, then every change measured the same way (V8 tiered for a long run: src/cli/longRun.ts). */
export async function adviceFor(
  planned: PlannedWorkload,
  target: AdviceTarget,
  targetBatch: number,
  options: AdviceOptions,
  fromBatchSize?: number,
): Promise<AdviceReport> {
  return asLongRun(() => measuredAdvice(planned, target, targetBatch, options, fromBatchSize));
}

async function measuredAdvice(
  planned: PlannedWorkload,
  target: AdviceTarget,
  targetBatch: number,
  options: AdviceOptions,
  fromBatchSize?: number,
): Promise<AdviceReport> {
  const from = fromBatchSize ?? (target.measure ? await target.measure(planned.plan) : (await measureAnalytic(planned.plan, target, targetBatch, options.signal)).batchSize);
  return advise({
    workload: planned.workload,
    setup: planned.setup,
    targetBatch,
    fromBatchSize: from,
    target,
    limits: budgetLimits(options.limits),
    ...(options.hostBudget !== undefined && { hostBudgetBytes: options.hostBudget.bytes }),
    ...(options.signal !== undefined && { signal: options.signal }),
  });
}

/**
 * The limits advice applies to the catalog GPUs it advises: `batch` hands its search limits over
 * whole, and --max-batch among them made advise refuse the request ("request.limits.maxBatch:
 * expected no such field", exit 2, for any batch that did not fit under --max-batch); the cap
 * reaches advice as the target's maxBatch instead.
 */
function budgetLimits(limits: AdviceOptions["limits"] & { maxBatch?: number }): AdviceOptions["limits"] {
  const { maxBatch: _, ...rest } = limits;
  return rest;
}

/** The advice fields a `batch` or `check` report carries (`adviceText` is for people, not JSON). */
export interface AdviceFields {
  advice: AdviceReport["items"];
  adviceSummary: string;
  adviceText: string;
}

/**
 * The advice for `result` on `target`, measured where that result was (the same probes
 * on a device, the same model elsewhere): what `batch` and `check` attach when it does not fit.
 */
export async function adviceFields(
  planned: PlannedWorkload,
  target: Target,
  result: AdviceBasis,
  targetBatch: number,
  options: AdviceOptions,
  where: string,
  fromBatchSize?: number,
): Promise<AdviceFields> {
  return (await adviceFieldsOn(planned, target, result, targetBatch, options, fromBatchSize))(where);
}

/**
 * {@link adviceFields} measured once, for any target it names (`where`): identical devices
 * answered together (src/fit/deviceGroup.ts) share one advice, each with its own heading.
 */
export async function adviceFieldsOn(
  planned: PlannedWorkload,
  target: Target,
  result: AdviceBasis,
  targetBatch: number,
  options: AdviceOptions,
  fromBatchSize?: number,
): Promise<(where: string) => AdviceFields> {
  // A reserve that takes all the free memory leaves no budget, on this GPU or on N of them: the
  // change to make is the reserve (a row of --tp 4 that still fits nothing would be advice no one can take).
  const free = result.device.freeBytes + Math.min(result.ownContextBytes, result.jobContextBytes);
  if (result.budgetBytes === 0 && result.reserveBytes >= free) {
    const summary = `the reserve (${formatBytes(result.reserveBytes)}, --reserve) is at least the ${formatBytes(free)} free: no budget is left on any GPU like it; lower --reserve`;
    return (where) => ({ advice: [], adviceSummary: summary, adviceText: `advice    to fit batch ${targetBatch} on ${where}: ${summary}` });
  }
  // On a device, the advice's measurements (a device search per change, and the answer now for
  // `check`) hold the device's cross-process lock once, for all of them, rather than each its own:
  // another vramfit process cannot probe between them either, and the eight simulated H100s of the
  // bench took the lock 72 times (~0.8 ms each) for nine measurements a device.
  const lock = target.kind === "device" && options.access?.lock !== false ? options.access : undefined;
  const measureWith = lock === undefined ? options : { ...options, access: { ...options.access, lock: false as const } };
  const advise = () => adviceFor(planned, adviceTarget(target, result, measureWith), targetBatch, measureWith, fromBatchSize);
  const advice = target.kind === "device" && lock !== undefined ? await withDeviceLock(target.addon, target.device, lock, advise) : await advise();
  return (where) => ({ advice: advice.items, adviceSummary: advice.summary, adviceText: renderAdvice(advice, where) });
}

/**
 * Runs every target's advice at once (identical devices probe in parallel, and share what the
 * model measured: src/advice/scaleOut.ts), waits for all of them, then fails with the first
 * failure in target order, as running them one after another would have.
 */
export async function allAdvice(work: readonly Promise<unknown>[]): Promise<void> {
  const settled = await Promise.allSettled(work);
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === "rejected");
  if (failed !== undefined) throw failed.reason;
}

/** The advice as people read it: a heading naming the target and the goal, then one row per change. */
export function renderAdvice(report: AdviceReport, where: string): string {
  const heading = `advice    to fit batch ${report.targetBatch} on ${where} (max batch now ${report.fromBatchSize}): ${report.summary}`;
  if (report.items.length === 0) return heading;
  const rows = report.items.map((a) => {
    // Short on host memory, not on the GPU: the GPU's bytes at the target are beside the point.
    const shortOnHost = !a.reachesTarget && a.hostFits === false && a.batchSize >= a.targetBatch;
    const batch = `${a.fromBatchSize} → ${a.batchSize}${a.reachesTarget ? "" : shortOnHost ? " on the GPU; the host cannot hold it" : `, needs ${formatBytes(a.bytesAtTarget)} at batch ${a.targetBatch}`}`;
    const host = a.hostFits === false ? "; more than this host has" : "";
    return [a.change, batch, a.source, `${a.cost}${host}`];
  });
  return `${heading}\n${renderTable(["change", "max batch per GPU", "measured", "cost"], rows)}`;
}
