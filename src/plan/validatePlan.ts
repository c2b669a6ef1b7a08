// The library's check of a MemoryPlan as the evaluators take it (from planMemory, or built by hand).
import { object, shown, integer, bytes, oneOf, string, type Fields } from "../checks.js";
import { invalidArgument } from "../errors.js";
import { LIMITS } from "../workload/limits.js";
import { CATEGORIES, type MemoryPlan } from "./memoryPlan.js";
import { checkPlanBytes } from "./planLimits.js";
import { exactBytes, forgetColumns, phaseWithin, tensorColumns } from "./tensorColumns.js";

const CATEGORY_SET: ReadonlySet<unknown> = new Set(CATEGORIES);

/**
 * A tensor that passes needs no message: this test builds none (labels for every tensor were most
 * of a repeated answer's time), nor a closure (a new plan's check walks every tensor once).
 */
function plainTensor(item: unknown, phases: number, fixedOnly: boolean): boolean {
  if (item === null || typeof item !== "object" || Array.isArray(item)) return false;
  const t = item as Fields;
  return (
    typeof t.name === "string" &&
    CATEGORY_SET.has(t.category) &&
    exactBytes(t.fixedBytes) &&
    exactBytes(t.perSampleBytes) &&
    (!fixedOnly || t.perSampleBytes === 0) &&
    phaseWithin(t.firstPhase, 0, phases) &&
    phaseWithin(t.lastPhase, typeof t.firstPhase === "number" ? t.firstPhase : 0, phases)
  );
}

/**
 * Whether every tensor of a step passes plainTensor, from the walk that makes the step's columns
 * (src/plan/tensorColumns.ts), which every answer needs next: one walk of a new plan, not two.
 */
function plainColumns(list: unknown[], phases: number): boolean {
  const columns = tensorColumns({ tensors: list as never[] }, phases);
  if (columns.firstMalformed < 0 && columns.categories.every((c) => CATEGORY_SET.has(c))) return true;
  forgetColumns(list as never[]); // read again once mended
  return false;
}

/**
 * Plans already checked, with what the check saw: the library's boundary checks a plan once, not
 * on every call (a repeated findMaxBatch spent 75–95 % of its time here). Plans are values, as
 * every per-plan cache assumes (the step's order, its phase totals, its replays): a plan whose
 * lists were replaced or grew since is checked again; one edited in place is not noticed.
 */
const checkedPlans = new WeakMap<object, { tensors: unknown; count: number; phases: unknown; host: unknown; hostTensors: unknown; hostCount: number }>();

/** What a check remembers of a plan's lists. */
function listsOf(plan: Fields) {
  const host = plan.host as Fields | undefined;
  const length = (list: unknown) => (Array.isArray(list) ? list.length : -1);
  return { tensors: plan.tensors, count: length(plan.tensors), phases: plan.phases, host, hostTensors: host?.tensors, hostCount: length(host?.tensors) };
}

function checkedBefore(plan: Fields): boolean {
  const seen = checkedPlans.get(plan);
  if (seen === undefined) return false;
  const now = listsOf(plan);
  return (Object.keys(now) as (keyof typeof now)[]).every((key) => seen[key] === now[key]);
}

/**
 * A MemoryPlan as the evaluators take it (from planMemory, or built by hand): its tensors with
 * whole, non-negative byte counts, phases within the timeline, and every total exact (≤ 2^53).
 * Checked once per plan (see checkedPlans).
 */
export function validatePlan(value: unknown, label = "plan"): asserts value is MemoryPlan {
  const plan = object(label, value);
  if (checkedBefore(plan)) return;
  string(`${label}.description`, plan.description);
  integer(`${label}.parameterCount`, plan.parameterCount, 0, Number.MAX_SAFE_INTEGER);
  let phases = 1;
  if (plan.phases !== undefined) {
    if (!Array.isArray(plan.phases) || plan.phases.some((p) => typeof p !== "string")) throw invalidArgument(`${label}.phases`, shown(plan.phases), "an array of phase names");
    phases = Math.max(1, plan.phases.length);
  }
  const tensors = (key: string, list: unknown, fixedOnly: boolean) => {
    if (!Array.isArray(list)) throw invalidArgument(`${label}.${key}`, shown(list), "an array of tensors");
    if (!fixedOnly && plainColumns(list, phases)) return;
    for (let i = 0; i < list.length; i++) {
      const item: unknown = list[i];
      if (plainTensor(item, phases, fixedOnly)) continue;
      // The one that fails, checked again field by field for its message.
      const at = `${label}.${key}[${i}]`;
      const tensor = object(at, item);
      string(`${at}.name`, tensor.name);
      oneOf(`${at}.category`, tensor.category, CATEGORIES);
      bytes(`${at}.fixedBytes`, tensor.fixedBytes);
      bytes(`${at}.perSampleBytes`, tensor.perSampleBytes);
      if (fixedOnly && tensor.perSampleBytes !== 0) throw invalidArgument(`${at}.perSampleBytes`, tensor.perSampleBytes, "0 (host memory holds model states, which do not grow with the batch)");
      const first = tensor.firstPhase === undefined ? 0 : integer(`${at}.firstPhase`, tensor.firstPhase, 0, phases - 1);
      if (tensor.lastPhase !== undefined) integer(`${at}.lastPhase`, tensor.lastPhase, first, phases - 1);
    }
  };
  tensors("tensors", plan.tensors, false);
  if (plan.host !== undefined) {
    const host = object(`${label}.host`, plan.host);
    tensors("host.tensors", host.tensors, true);
    integer(`${label}.host.ranks`, host.ranks, 1, LIMITS.gpus, "GPUs");
  }
  checkPlanBytes(value as MemoryPlan);
  checkedPlans.set(plan, listsOf(plan));
}
