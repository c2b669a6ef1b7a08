// Shared by advice and `gpus --fit`: plans for variants of a setup, their largest batch, and monotone searches over GPU counts.
import { checkpoint } from "../checkpoint.js";
import { bytesWithin, fitsBudget, reservedBytes, type AllocatorModel } from "../fit/allocator.js";
import { analyticMaxBatch, liveBytesExceed } from "../fit/analytic.js";
import { phasesOf, type MemoryPlan, type PlannedTensor } from "../plan/memoryPlan.js";

export { planner } from "../plan/planCache.js";

/** GPU counts tried when scaling out: powers of two, as clusters are built. */
export const GPU_COUNTS: readonly number[] = Array.from({ length: 13 }, (_, i) => 2 ** i); // 1 … 4096

/** Tensor-parallel degrees within one node (Megatron keeps tensor parallelism inside the NVLink domain). */
export const TP_DEGREES: readonly number[] = [1, 2, 4, 8];

/** A budget and how allocations are charged on it: what the analytic model needs to answer. */
export interface Budget {
  budgetBytes: number;
  allocator: AllocatorModel;
  /** The largest batch worth finding (the user's --max-batch). */
  maxBatch?: number;
}

/**
 * Answers already measured, per step (a plan's tensor list: plans with equal steps share one,
 * src/plan/planCache.ts) and question (budget, allocator, cap, batch). Advice asks the same
 * question of the same plan several times (its searches over GPU counts and lengths, then the
 * change they chose), every identical device and every catalog GPU of the same size asks it
 * again, and `gpus --fit` asks it of every data-parallel count whose step is the same.
 */
const measured = new WeakMap<readonly PlannedTensor[], Map<string, Promise<number>>>();

/**
 * The analytic largest batch of a plan on a budget. Advice and `gpus --fit` make hundreds of
 * these: each first gives a signal its chance (`checkpoint`). An answer being measured is shared
 * too (identical devices' advice runs at once); one that failed (an interruption) is forgotten.
 */
export async function analyticMaxBatchOn(plan: MemoryPlan, budget: Budget, signal?: AbortSignal): Promise<number> {
  await checkpoint(signal);
  const { answers, key, known } = answerOf(plan, budget);
  if (known !== undefined) return known;
  const answer = phaseExceedsAtOne(plan, budget) ? Promise.resolve(0) : analyticMaxBatch(plan, budget.budgetBytes, budget.allocator, budget.maxBatch, signal).then((r) => r.batchSize);
  answers.set(key, answer);
  answer.catch(() => answers.delete(key));
  return answer;
}

/** Where a plan's answer on a budget is kept, and the answer if it is known (or being measured). */
function answerOf(plan: MemoryPlan, budget: Budget): { answers: Map<string, Promise<number>>; key: string; known: Promise<number> | undefined } {
  let answers = measured.get(plan.tensors);
  if (answers === undefined) measured.set(plan.tensors, (answers = new Map()));
  const key = JSON.stringify([phasesOf(plan).length, budget.budgetBytes, budget.allocator, budget.maxBatch ?? null]);
  return { answers, key, known: answers.get(key) };
}

/**
 * Whether the analytic largest batch of a plan on a budget ({@link analyticMaxBatchOn}) is at
 * least `batch`: what advice's searches over GPU counts, degrees and lengths ask of each setup
 * they try. For batch 1 (advice's goal when nothing fits, `batch`'s default) one replay settles
 * it wherever the step fits at batch 1: the search starts from a seed of at least 1 and, from a
 * seed that does not fit, steps down to batch 1 before it answers 0 (src/fit/search.ts), so a step
 * that fits at 1 answers at least 1 whatever happens above it (fits need not be monotone). Then
 * neither the seed's replays (two) nor the search's (two or more) are made; otherwise, or for a
 * larger batch, the search runs.
 */
export async function analyticReaches(plan: MemoryPlan, budget: Budget, batch: number, signal?: AbortSignal): Promise<boolean> {
  if (batch <= 1 && (budget.maxBatch ?? 1) >= 1 && answerOf(plan, budget).known === undefined) {
    await checkpoint(signal);
    if (!phaseExceedsAtOne(plan, budget) && fitsBudget(plan, 1, budget.allocator, budget.budgetBytes)) return true;
  }
  return (await analyticMaxBatchOn(plan, budget, signal)) >= batch;
}

/**
 * Whether some phase of the step at batch 1 already holds more bytes than the budget leaves for
 * allocations (src/fit/analytic.ts, liveBytesExceed; bytes only grow with the batch): then no
 * batch fits, and the search would answer 0 after replaying batch 1. It skips the replays of the
 * search's seed too — for a model whose states alone do not fit, all of its answer's replays
 * (`check --model gpt3-175b --gpu H100-80GB --batch 1`: most of its advice's plans).
 */
function phaseExceedsAtOne(plan: MemoryPlan, budget: Budget): boolean {
  if (budget.maxBatch !== undefined && budget.maxBatch < 1) return false; // the search's own answer, then
  return liveBytesExceed(plan, 1, budget.budgetBytes - budget.allocator.contextBytes);
}

/**
 * The analytic largest batch of a plan on a budget ({@link analyticMaxBatchOn}), and the bytes it
 * needs at `batch` (one more replay: asked for only where the bytes are shown).
 */
export async function measureAnalytic(plan: MemoryPlan, budget: Budget, batch: number, signal?: AbortSignal): Promise<{ batchSize: number; bytesAtBatch: number }> {
  const batchSize = await analyticMaxBatchOn(plan, budget, signal);
  await checkpoint(signal); // each replay of a deep model's step takes a while
  // Where the step's own bytes at `batch` exceed the room (liveBytesExceed), the replay at capacity
  // cannot complete and bytesWithin answers with the replay without a limit: only that one is made
  // (advice's rows that do not fit, each a replay to its failure fewer).
  const { allocator, budgetBytes } = budget;
  const bytesAtBatch = liveBytesExceed(plan, batch, budgetBytes - allocator.contextBytes)
    ? reservedBytes(plan, batch, allocator.kind, allocator.conf) + allocator.contextBytes
    : bytesWithin(plan, batch, allocator, budgetBytes);
  await checkpoint(signal); // and so does the next plan the caller builds
  return { batchSize, bytesAtBatch };
}

/**
 * The first value of an ascending list that passes a monotone test (false … false true … true),
 * or undefined. With `lastFirst` the last value is tried first: when it fails nothing passes,
 * found with one test instead of log2(n) (the common case where a change cannot help at all, such
 * as a shorter sequence for a model whose weights alone do not fit); one test more otherwise.
 *
 * With `below` (an index), a caller that wants the answer only when its index is below that one
 * (advice's combination: a layout on as many GPUs as one found already cannot lead) gets exactly
 * the full search's answer when it is, and undefined otherwise, without the tests that cannot
 * change that: the search stops once its answer's index is known to be at least `below`, and a
 * value at or past it is not tested when the search reaches it but taken as passing, so that the
 * search goes on along the path it would take, and tested only once an answer below the index is
 * found (that answer is the full search's only if they pass). No test is assumed monotone: the
 * same tests on the same path as the full search, fewer of them.
 */
export async function firstPassing<T>(
  values: readonly T[],
  pass: (value: T) => Promise<boolean> | boolean,
  { lastFirst = false, below = values.length }: { lastFirst?: boolean; below?: number } = {},
): Promise<T | undefined> {
  const deferred: T[] = [];
  const test = async (index: number): Promise<boolean> => {
    if (index < below) return pass(values[index]!);
    deferred.push(values[index]!);
    return true;
  };
  let low = 0;
  let high = values.length; // the answer's index lies in [low, high]; high = none
  if (lastFirst && high > 0) {
    if (!(await pass(values[high - 1]!))) return undefined; // tested even past `below`: the one test that settles "none"
    high -= 1;
  }
  while (low < high && low < below) {
    const middle = low + Math.floor((high - low) / 2);
    if (await test(middle)) high = middle;
    else low = middle + 1;
  }
  if (low >= below) return undefined;
  for (const value of deferred) if (!(await pass(value))) return undefined; // the full search's answer lies past `below`
  return values[low];
}
