// The longest sequence that fits at a given batch: the seeded search over tokens instead of samples.
import { invalidArgument } from "../errors.js";
import { checkSetupApplies } from "../plan/applicability.js";
import { buildPlan } from "../plan/buildPlan.js";
import { planTotals, type MemoryPlan } from "../plan/memoryPlan.js";
import { checkPlanBytes } from "../plan/planLimits.js";
import type { RunSetup } from "../plan/setup.js";
import { LIMITS } from "../workload/limits.js";
import type { Workload } from "../workload/workload.js";
import { bytesWithin, plannedBytes, type AllocatorModel } from "./allocator.js";
import { analyticFits } from "./analytic.js";
import { budgetBytes, reserveBytes, type BudgetLimits } from "./budget.js";
import { jobModel, type JobModelOptions } from "./charges.js";
import { deviceFits, type ProbeEvent } from "./device.js";
import { withDeviceLock, type DeviceAccessOptions } from "./deviceMemory.js";
import { deviceCharges, modelled, probeOptions, type BatchResult } from "./findMaxBatch.js";
import { searchMaxBatch } from "./search.js";
import { analyticMemory, deviceSummary, type AnalyticTarget, type DeviceTarget } from "./target.js";
import { elapsedMsSince } from "../duration.js";

/** The plan of the workload at `seq` tokens per sample (the same setup otherwise). */
export type PlanAtSeq = (seq: number) => MemoryPlan;

export interface SeqLimits extends BudgetLimits, JobModelOptions {
  /** The longest sequence to consider (a learned position table's size); without it no upper bound. */
  maxSeq?: number;
}

/** One answer of `vramfit batch --solve seq`: a batch answer at `batchSize` samples, plus the sequence. */
export interface SeqResult extends BatchResult {
  /** The longest sequence that fits at the batch; 0 when not even one token does. */
  seq: number;
  /** What the analytic model predicted for the same budget (the device search's seed). */
  predictedSeq: number;
  /** `context` when the answer is the longest sequence considered (the model's context length): memory would allow more. */
  limitedBy: "memory" | "context";
}

/**
 * What the search over the sequence needs for a workload run a given way: its plan at any `seq`
 * (the setup's own `seq` ignored), and the longest sequence to consider, the model's context
 * length (`max_position_embeddings`: a learned table's size, or what rotary positions were
 * trained for) less the setup's generated tokens. Text transformers only: a vision transformer's
 * tokens follow its image.
 */
export function seqSearchFor(workload: Workload, setup: RunSetup): { planAt: PlanAtSeq; maxSeq: number } {
  if (workload.kind !== "transformer" || workload.architecture.vision !== undefined) {
    const what = workload.kind === "affine" ? "a raw --params workload" : workload.name;
    throw invalidArgument("--solve", "seq", `a text transformer (${what} has no --seq to solve for)`);
  }
  const arch = workload.architecture;
  const generated = setup.generatedTokens ?? 0;
  const maxSeq = Math.min(arch.maxPositions - generated, LIMITS.dimension);
  if (maxSeq < 1) throw invalidArgument("--generate", generated, `fewer than ${arch.maxPositions} tokens: ${workload.name}'s context length`);
  const planAt: PlanAtSeq = (seq) => {
    const at = { ...setup, seq };
    checkSetupApplies(workload, at);
    const plan = buildPlan(workload, at);
    checkPlanBytes(plan);
    return plan;
  };
  return { planAt, maxSeq };
}

/** Tokens the seed starts from: short enough to fit nearly anything, long enough to show the slope. */
const SEED_PROBE_TOKENS = 1024;

/**
 * The analytic model's longest sequence for `budget`: seeded by the straight line through the
 * plan's bytes at 1024 and 2048 tokens (exact when memory grows linearly in the sequence, as with
 * flash attention; a guess with eager attention's s² terms), then the same gallop-and-bisect search
 * as for the batch, evaluated analytically.
 */
export async function analyticMaxSeq(planAt: PlanAtSeq, batch: number, budget: number, allocator: AllocatorModel, maxSeq?: number): Promise<number> {
  const at = (seq: number) => plannedBytes(planAt(seq), batch, allocator);
  const low = Math.min(SEED_PROBE_TOKENS, maxSeq ?? SEED_PROBE_TOKENS);
  const high = Math.min(2 * low, maxSeq ?? 2 * low);
  const atLow = at(low);
  const slope = high > low ? (at(high) - atLow) / (high - low) : 0;
  const seed = slope > 0 ? Math.max(1, Math.floor(low + (budget - atLow) / slope)) : low;
  const { batchSize } = await searchMaxBatch((seq) => analyticFits(planAt(seq), budget, allocator)(batch), {
    seed,
    ...(maxSeq !== undefined && { maxBatch: maxSeq }),
  });
  return batchSize;
}

function seqResult(plan: MemoryPlan, seq: number, batch: number, allocator: AllocatorModel, budget: number, maxSeq: number | undefined): Pick<SeqResult, "seq" | "batchSize" | "bytesAtBatch" | "fixedBytes" | "perSampleBytes" | "limitedBy"> {
  return {
    seq,
    batchSize: seq > 0 ? batch : 0,
    bytesAtBatch: seq > 0 ? bytesWithin(plan, batch, allocator, budget) : 0,
    ...planTotals(plan),
    limitedBy: seq === maxSeq ? "context" : "memory",
  };
}

/** The longest sequence at `batch` on an analytic target (a catalog GPU or a raw budget). */
export async function analyticSeq(planAt: PlanAtSeq, batch: number, target: AnalyticTarget, limits: SeqLimits = {}, reason?: string): Promise<SeqResult> {
  const started = performance.now();
  const { device, memory } = analyticMemory(target);
  const allocator = jobModel(limits, memory.totalBytes);
  const budget = budgetBytes(memory, limits);
  const seq = await analyticMaxSeq(planAt, batch, budget, allocator, limits.maxSeq);
  return {
    ...seqResult(planAt(Math.max(seq, 1)), seq, batch, allocator, budget, limits.maxSeq),
    source: "analytic",
    reason: reason ?? null,
    device,
    ...(target.kind === "reading" && { memorySource: target.memorySource }),
    budgetBytes: budget,
    probes: 0,
    predictedBatchSize: batch,
    predictedSeq: seq,
    ...modelled(allocator),
    jobContextBytes: allocator.contextBytes,
    ownContextBytes: 0,
    reserveBytes: reserveBytes(memory.totalBytes, limits),
    elapsedMs: elapsedMsSince(started),
  };
}

export interface DeviceSeqOptions extends SeqLimits, DeviceAccessOptions {
  /** Write every probed byte so the memory is really backed (default true). */
  touch?: boolean;
  /** As DeviceSearchOptions' (default true). */
  virtualMemory?: boolean;
  onProbe?: (event: ProbeEvent) => void;
}

/**
 * The longest sequence at `batch` on a device: as `deviceBatch` does for the batch, it reads the
 * free memory, seeds the search with the analytic answer for exactly that budget, and lets probes
 * of the job's segments at that sequence (and the next) decide, within the addon's floor: two
 * probes when the model is right.
 */
export async function deviceSeq(target: DeviceTarget, planAt: PlanAtSeq, batch: number, options: DeviceSeqOptions = {}): Promise<SeqResult> {
  return withDeviceLock(target.addon, target.device, options, async () => {
    const started = performance.now();
    const charges = await deviceCharges(target, options);
    const { model, reading, budget } = charges;
    const predicted = await analyticMaxSeq(planAt, batch, budget, model, options.maxSeq);
    let probes = 0;
    const fits = async (seq: number): Promise<boolean> => {
      const evaluator = deviceFits(target.addon, target.device.ordinal, planAt(seq), probeOptions(charges, options));
      const result = await evaluator.fits(batch);
      probes += evaluator.probes();
      return result;
    };
    const { batchSize: seq } = await searchMaxBatch(fits, {
      seed: Math.max(1, predicted),
      ...(options.maxSeq !== undefined && { maxBatch: options.maxSeq }),
      ...(options.signal !== undefined && { signal: options.signal }),
    });
    return {
      ...seqResult(planAt(Math.max(seq, 1)), seq, batch, model, budget, options.maxSeq),
      source: "device",
      reason: null,
      device: deviceSummary(target.device, reading.freeBytes),
      memorySource: "cuda",
      budgetBytes: budget,
      probes,
      predictedBatchSize: batch,
      predictedSeq: predicted,
      ...modelled(model),
      jobContextBytes: model.contextBytes,
      ownContextBytes: reading.ownContextBytes,
      reserveBytes: charges.reserve,
      elapsedMs: elapsedMsSince(started),
    };
  });
}
