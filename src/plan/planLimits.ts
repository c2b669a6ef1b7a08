// The plan's side of the input limits: every byte count it holds stays an exact integer (≤ 2^53).
import { invalidArgument } from "../errors.js";
import { formatBytes } from "../units.js";
import { LIMITS, formatLimit } from "../workload/limits.js";
import { phasesOf, type MemoryPlan } from "./memoryPlan.js";
import { tensorColumns } from "./tensorColumns.js";

/**
 * Throws when a plan's byte counts leave the exact range: any tensor's fixed or per-sample bytes
 * not a whole number, or the fixed or per-sample total of the step above 2^53 (8 PiB). Beyond it
 * a JS number no longer holds every byte count, so no answer could be trusted.
 */
export function checkPlanBytes(plan: MemoryPlan): void {
  if (plan.host === undefined) {
    if (withinBytes.get(plan.tensors) === plan.tensors.length) return;
    if (stepWithinBytes(plan)) {
      withinBytes.set(plan.tensors, plan.tensors.length);
      return;
    }
  }
  let fixed = 0;
  let perSample = 0;
  let largest = plan.tensors[0];
  for (const list of [plan.tensors, plan.host?.tensors ?? []]) {
    for (const t of list) {
      if (!Number.isSafeInteger(t.fixedBytes) || !Number.isSafeInteger(t.perSampleBytes) || t.fixedBytes < 0 || t.perSampleBytes < 0) {
        const bytes = Number.isSafeInteger(t.perSampleBytes) && t.perSampleBytes >= 0 ? `${t.fixedBytes.toPrecision(3)} bytes` : `${t.perSampleBytes.toPrecision(3)} bytes per sample`;
        throw tooLarge(plan, `${bytes} in ${t.name}`);
      }
      fixed += t.fixedBytes;
      perSample += t.perSampleBytes;
      if (largest === undefined || t.fixedBytes + t.perSampleBytes > largest.fixedBytes + largest.perSampleBytes) largest = t;
    }
  }
  const ranks = plan.host?.ranks ?? 1;
  if (fixed > LIMITS.bytes || perSample > LIMITS.bytes || (plan.host !== undefined && !Number.isSafeInteger(fixed * ranks))) {
    const total = perSample > LIMITS.bytes ? `${perSample.toPrecision(3)} bytes per sample` : `${fixed.toPrecision(3)} fixed bytes`;
    throw tooLarge(plan, `${total} in all, the most in ${largest?.name ?? "?"}`);
  }
}

/**
 * Tensor lists of plans without host tensors found within the limits, with their length then:
 * plans are values (src/plan/planCache.ts), and the CLI checks one where it is made and again
 * where the library takes it.
 */
const withinBytes = new WeakMap<readonly unknown[], number>();

/**
 * Whether a plan without host tensors is within the limits, from its columns (made once per
 * tensor list, in the walk that checks their fields: src/plan/tensorColumns.ts): every byte count
 * whole from 0 to 2^53 and both totals below 2^53, so no count is 2^53 itself either. False
 * leaves the verdict, and the message naming the tensor, to the walk over the tensors.
 */
function stepWithinBytes(plan: MemoryPlan): boolean {
  const columns = tensorColumns(plan, phasesOf(plan).length);
  return columns.firstMalformed < 0 && columns.fixedTotal < LIMITS.bytes && columns.perSampleTotal < LIMITS.bytes;
}

function tooLarge(plan: MemoryPlan, got: string) {
  return invalidArgument("workload", got, `a plan whose byte counts stay below ${formatBytes(LIMITS.bytes)} (2^53, where they stop being exact): lower --seq, --image or the model's size (${plan.description.split(";")[0]})`);
}

/** Σ fixed and Σ per-sample bytes of every tensor of the step, summed once per tensor list (checkFits asks on every call). */
function stepSums(plan: MemoryPlan): { fixed: number; perSample: number } {
  const known = sums.get(plan.tensors);
  if (known !== undefined && known.count === plan.tensors.length) return known;
  let fixed = 0;
  let perSample = 0;
  for (const t of plan.tensors) {
    fixed += t.fixedBytes;
    perSample += t.perSampleBytes;
  }
  const computed = { fixed, perSample, count: plan.tensors.length };
  sums.set(plan.tensors, computed);
  return computed;
}
const sums = new WeakMap<readonly unknown[], { fixed: number; perSample: number; count: number }>();

/**
 * The largest batch at which the plan's bytes stay below 2^53, or throws naming `option` when
 * `batch` is beyond it (a `--batch` that large could only be answered with inexact numbers).
 */
export function checkBatchBytes(option: string, plan: MemoryPlan, batch: number): void {
  const { fixed, perSample } = stepSums(plan);
  if (perSample === 0 || fixed + perSample * batch <= LIMITS.bytes) return;
  const most = Math.floor((LIMITS.bytes - fixed) / perSample);
  throw invalidArgument(option, batch, `at most ${formatLimit(most)} for this workload (beyond it its bytes pass 8 PiB, 2^53, where they stop being exact)`);
}
