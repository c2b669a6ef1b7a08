// The library's check of a MemoryPlan as the evaluators take it (from planMemory, or built by hand).
import { object, shown, integer, bytes, oneOf, boolean, string } from "../checks.js";
import { invalidArgument } from "../errors.js";
import { LIMITS } from "../workload/limits.js";
import { CATEGORIES, type MemoryPlan } from "./memoryPlan.js";
import { checkPlanBytes } from "./planLimits.js";

/**
 * A MemoryPlan as the evaluators take it (from planMemory, or built by hand): its tensors with
 * whole, non-negative byte counts, phases within the timeline, and every total exact (≤ 2^53).
 */
export function validatePlan(value: unknown, label = "plan"): asserts value is MemoryPlan {
  const plan = object(label, value);
  string(`${label}.description`, plan.description);
  integer(`${label}.parameterCount`, plan.parameterCount, 0, Number.MAX_SAFE_INTEGER);
  let phases = 1;
  if (plan.phases !== undefined) {
    if (!Array.isArray(plan.phases) || plan.phases.some((p) => typeof p !== "string")) throw invalidArgument(`${label}.phases`, shown(plan.phases), "an array of phase names");
    phases = Math.max(1, plan.phases.length);
  }
  const tensors = (key: string, list: unknown, fixedOnly: boolean) => {
    if (!Array.isArray(list)) throw invalidArgument(`${label}.${key}`, shown(list), "an array of tensors");
    list.forEach((item, i) => {
      const at = `${label}.${key}[${i}]`;
      const tensor = object(at, item);
      string(`${at}.name`, tensor.name);
      oneOf(`${at}.category`, tensor.category, CATEGORIES);
      bytes(`${at}.fixedBytes`, tensor.fixedBytes);
      bytes(`${at}.perSampleBytes`, tensor.perSampleBytes);
      if (fixedOnly && tensor.perSampleBytes !== 0) throw invalidArgument(`${at}.perSampleBytes`, tensor.perSampleBytes, "0 (host memory holds model states, which do not grow with the batch)");
      const first = tensor.firstPhase === undefined ? 0 : integer(`${at}.firstPhase`, tensor.firstPhase, 0, phases - 1);
      if (tensor.lastPhase !== undefined) integer(`${at}.lastPhase`, tensor.lastPhase, first, phases - 1);
    });
  };
  tensors("tensors", plan.tensors, false);
  if (plan.host !== undefined) {
    const host = object(`${label}.host`, plan.host);
    tensors("host.tensors", host.tensors, true);
    integer(`${label}.host.ranks`, host.ranks, 1, LIMITS.gpus, "GPUs");
  }
  checkPlanBytes(value as MemoryPlan);
}
