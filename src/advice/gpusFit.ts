// `vramfit gpus --fit`: every catalog GPU's largest batch for a workload, and how many of it reach a global batch.
import { GPU_CATALOG } from "../devices/catalog.js";
import { budgetBytes, type BudgetLimits } from "../fit/budget.js";
import { jobModel, type JobModelOptions } from "../fit/charges.js";
import type { ZeroStage } from "../plan/bytesPerParameter.js";
import type { MemoryPlan } from "../plan/memoryPlan.js";
import { resolveSetup, type RunSetup } from "../plan/setup.js";
import { validateGpusFit } from "./validateAdvice.js";
import type { Workload } from "../workload/workload.js";
import { checkpoint } from "../checkpoint.js";
import { TP_DEGREES, analyticMaxBatchOn, planner, type Budget } from "./scaleOut.js";

/** How a global batch is spread: `tp`-way tensor parallel groups, `dataParallel` of them, ZeRO over those. */
export interface GpuLayout {
  tp: number;
  dataParallel: number;
  zeroStage: ZeroStage;
  /** Samples each data-parallel rank runs: ceil(global batch / dataParallel). */
  batchPerGpu: number;
  /** The most each rank could run in this layout. */
  maxBatchPerGpu: number;
}

/** One row of `gpus --fit` (its `--json` element). */
export interface GpuFit {
  id: string;
  name: string;
  totalBytes: number;
  /** The analytic budget: the total, the assumed context charged with the plan. */
  budgetBytes: number;
  /** The largest batch per GPU with the setup as given; 0 when even batch 1 does not fit. */
  batchSize: number;
  /** With a global batch to reach: the fewest GPUs that reach it (tp × dataParallel); null when no layout does. */
  gpusNeeded?: number | null;
  layout?: GpuLayout | null;
}

/** What `gpusFit` needs of a GPU (a catalog entry has it). */
export interface FitGpu {
  id: string;
  name: string;
  totalBytes: number;
  /** Memory shared with the CPU (Jetson): one module, which does not scale out. */
  integrated: boolean;
}

export interface GpusFitOptions extends BudgetLimits, JobModelOptions {
  /** The global batch to reach, summed over data-parallel ranks. */
  minBatch?: number;
  /** The most data-parallel ranks considered (default 65,536). */
  maxDataParallel?: number;
  /** The GPUs to answer for (default: the catalog, `vramfit gpus`). */
  catalog?: readonly FitGpu[];
  /** Cancels the work between measurements; the promise rejects with the signal's reason. */
  signal?: AbortSignal;
}

export const MAX_DATA_PARALLEL = 65_536;

/**
 * For each catalog GPU, sorted by memory: the largest batch of the workload as set up, and with
 * `minBatch`, the fewest GPUs that reach that global batch: `dataParallel` ranks, each with ZeRO's
 * stage of the setup partitioning over them (training), each rank a `tp`-way tensor-parallel group.
 * The tensor-parallel degree is the setup's when given, else the best of 1, 2, 4, 8 (within a node)
 * that the model allows. Every figure is the analytic model on the catalog GPU.
 */
export async function gpusFit(workload: Workload, setup: RunSetup, options: GpusFitOptions = {}): Promise<GpuFit[]> {
  validateGpusFit(workload, setup, options);
  const plan = planner(workload);
  const s = resolveSetup(setup);
  const train = s.mode === "train";
  // Each plan of a deep model takes a while to build: a signal gets its chance between them.
  const degrees: number[] = [];
  for (const t of setup.tp !== undefined || workload.kind !== "transformer" ? [s.tp] : TP_DEGREES) {
    await checkpoint(options.signal);
    if (setup.tp !== undefined || workload.kind !== "transformer" || plan({ ...setup, tp: t }) !== undefined) degrees.push(t);
  }
  const maxRanks = options.maxDataParallel ?? MAX_DATA_PARALLEL;
  const rows: GpuFit[] = [];
  for (const { gpu, budget } of catalogBudgets(options)) {
    const maxBatchOf = async (variant: RunSetup): Promise<number> => {
      // A deep model's plan takes hundreds of milliseconds to build (docs/reliability.md): the replay before it must not add to that stretch.
      await checkpoint(options.signal);
      const p = plan(variant);
      return p === undefined ? 0 : analyticMaxBatchOn(p, budget, options.signal);
    };
    const row: GpuFit = { id: gpu.id, name: gpu.name, totalBytes: gpu.totalBytes, budgetBytes: budget.budgetBytes, batchSize: await maxBatchOf(setup) };
    if (options.minBatch !== undefined) {
      const target = options.minBatch;
      let best: GpuLayout | undefined;
      // An integrated GPU (Jetson) is one module: it does not scale out.
      const maxRanksHere = gpu.integrated ? 1 : maxRanks;
      for (const tp of gpu.integrated ? degrees.filter((t) => t === 1) : degrees) {
        const at = (ranks: number): RunSetup => ({ ...setup, tp, ...(train && { gpus: ranks }) });
        const perRank = (ranks: number) => maxBatchOf(at(ranks));
        const ranks = await fewestRanks(perRank, target, maxRanksHere, (ranks) => plan(at(ranks))?.tensors);
        if (ranks === undefined) continue;
        if (best === undefined || tp * ranks < best.tp * best.dataParallel) {
          best = { tp, dataParallel: ranks, zeroStage: train ? s.zeroStage : 0, batchPerGpu: Math.ceil(target / ranks), maxBatchPerGpu: await maxBatchOf(at(ranks)) };
        }
      }
      row.gpusNeeded = best === undefined ? null : best.tp * best.dataParallel;
      row.layout = best ?? null;
    }
    rows.push(row);
  }
  return rows;
}

/** The GPUs to answer for, sorted by memory, each with its budget as `batch --gpu ID` has it: the total less the reserve, the job's allocator and context charged. */
function catalogBudgets(options: GpusFitOptions): { gpu: FitGpu; budget: Budget }[] {
  return [...(options.catalog ?? GPU_CATALOG)]
    .sort((a, b) => a.totalBytes - b.totalBytes)
    .map((gpu) => ({ gpu, budget: { budgetBytes: budgetBytes({ freeBytes: gpu.totalBytes, totalBytes: gpu.totalBytes }, options), allocator: jobModel(options, gpu.totalBytes) } }));
}

/**
 * For each catalog GPU, sorted by memory: the largest batch of a plan as it stands — a traced step,
 * whose run is baked in, so there is no setup to scale out (no `minBatch`).
 */
export async function gpusFitPlan(plan: MemoryPlan, options: Omit<GpusFitOptions, "minBatch" | "maxDataParallel"> = {}): Promise<GpuFit[]> {
  const rows: GpuFit[] = [];
  for (const { gpu, budget } of catalogBudgets(options)) {
    const batchSize = await analyticMaxBatchOn(plan, budget, options.signal);
    rows.push({ id: gpu.id, name: gpu.name, totalBytes: gpu.totalBytes, budgetBytes: budget.budgetBytes, batchSize });
  }
  return rows;
}

/**
 * The fewest data-parallel ranks, at most `max`, whose largest batch per rank × ranks reaches
 * `target`; that is monotone (more ranks: at least as much memory per rank under ZeRO, and more
 * samples in all). Doubling finds a bracket, bisection the count. ZeRO-3 may need more ranks than
 * samples to fit one each. Where both ends of the bracket have the same step (`stepAt`: the plan's
 * shared tensor list; without ZeRO every count from 2 up holds the same tensors), every count
 * between has it too, since ZeRO's shards only shrink as ranks grow: each rank's batch is the
 * same, and the count is ⌈target / batch⌉, found without a plan for each count tried.
 */
async function fewestRanks(
  perRank: (ranks: number) => Promise<number>,
  target: number,
  max: number,
  stepAt: (ranks: number) => unknown,
): Promise<number | undefined> {
  const reaches = async (ranks: number) => ranks * (await perRank(ranks)) >= target;
  let failed = 0; // the largest count known not to reach
  let high = 1; // a count that reaches, once found
  while (!(await reaches(high))) {
    if (high >= max) return undefined;
    failed = high;
    high = Math.min(high * 2, max);
  }
  if (failed > 0 && stepAt(failed) !== undefined && stepAt(failed) === stepAt(high)) {
    return Math.max(failed + 1, Math.ceil(target / (await perRank(high))));
  }
  while (high - failed > 1) {
    const middle = failed + Math.floor((high - failed) / 2);
    if (await reaches(middle)) high = middle;
    else failed = middle;
  }
  return high;
}
