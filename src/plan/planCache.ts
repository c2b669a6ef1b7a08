// One plan per distinct question: a workload's plan under a setup, built once per process and shared by every device, candidate and advice row that asks for it.
import { VramfitError } from "../errors.js";
import type { Workload } from "../workload/workload.js";
import { buildPlan } from "./buildPlan.js";
import { phaseTotalColumns, type MemoryPlan, type PlannedTensor } from "./memoryPlan.js";
import { resolveSetup, type RunSetup } from "./setup.js";

/**
 * How many tensors the kept plans may hold in all. `gpus --fit` asks for the same variants
 * (tensor-parallel degree × data-parallel ranks) for every catalog GPU: kept, GPT-3's sixty-odd
 * variants of 10,225 tensors answer `--min-batch 1536` in 1.5 s; with only the last 16 plans kept
 * they were rebuilt for every GPU, 20 s (commit 50a81d2). But a 5,000-layer CNN's plan is 51,604
 * tensors, and keeping every variant of it took 2.7 GB and made half-second garbage-collection
 * pauses; at this bound it takes 1.1 GB. Past it the least recently used plans go.
 */
const TENSORS_KEPT = 1_000_000;

/** A built plan, or why the setup does not apply to the workload (kept too: advice asks again). */
type Built = { plan: MemoryPlan } | { error: VramfitError };

/** Per workload (by identity: the CLI and the library's callers resolve it once), its plans by setup, least recently used first. */
const byWorkload = new WeakMap<Workload, Map<string, Built>>();
/** Every kept entry in use order across workloads, for the one bound on what is kept. */
const kept = new Map<Built, { cache: Map<string, Built>; key: string; tensors: number }>();
let tensorsKept = 0;

/**
 * Identical steps under different setups share their arrays: `--gpus 2` and `--gpus 64` without
 * ZeRO, or a ZeRO stage that shards nothing more, make the same tensors and differ only in the
 * description. What is computed per tensor list (src/plan/memoryPlan.ts: the step's order and
 * phase totals) and per step (src/advice/scaleOut.ts: the largest batch on a budget) is then
 * computed once. Keyed by a hash of the numbers; equal lists are compared in full.
 */
const stepsByHash = new Map<number, WeakRef<readonly PlannedTensor[]>[]>();

/** Phases apart that the step's hash reads (hashStep): a collision costs only sameStep's comparison. */
const HASHED_PHASE_STRIDE = 16;

function hashStep(plan: MemoryPlan): number {
  let hash = 0x811c9dc5 ^ (plan.phases?.length ?? 0);
  const mix = (value: number) => {
    // Numbers up to 2^53: both halves count.
    hash = Math.imul(hash ^ (value >>> 0), 0x01000193);
    hash = Math.imul(hash ^ Math.floor(value / 2 ** 32), 0x01000193);
  };
  // From the phase totals every answer reads next (made here once), not from every tensor: the
  // tensor-by-tensor hash was eight multiplications per tensor, run cold in a fresh process
  // (the advice case's 42 plans, 114,000 tensors: a tenth of its time). Lists with equal totals
  // but different tensors collide, and sameStep tells them apart. Every HASHED_PHASE_STRIDE-th
  // phase and the last: two setups' steps differ in their states (live every phase) or their
  // timelines (other phases, usually another count), and every phase was still four
  // multiplications a phase, cold (GPT-3's 23 plans of ~3,000 phases: 2-3 ms each under load).
  mix(plan.tensors.length);
  const { fixedBytes, perSampleBytes } = phaseTotalColumns(plan);
  const phases = fixedBytes.length;
  for (let phase = 0; phase < phases; phase += HASHED_PHASE_STRIDE) {
    mix(fixedBytes[phase]!);
    mix(perSampleBytes[phase]!);
  }
  if (phases > 0) {
    mix(fixedBytes[phases - 1]!);
    mix(perSampleBytes[phases - 1]!);
  }
  return hash >>> 0;
}

function sameStep(a: readonly PlannedTensor[], b: readonly PlannedTensor[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    const y = b[i]!;
    if (x === y) continue; // the same tensor: setups share their timeline (src/plan/timelineCache.ts)
    if (x.fixedBytes !== y.fixedBytes || x.perSampleBytes !== y.perSampleBytes || x.firstPhase !== y.firstPhase || x.lastPhase !== y.lastPhase) return false;
    if (x.name !== y.name || x.category !== y.category) return false;
  }
  return true;
}

/** The plan with its tensor list replaced by an equal one already kept (same phases too), if there is one. */
function shareStep(plan: MemoryPlan): MemoryPlan {
  const hash = hashStep(plan);
  const refs = stepsByHash.get(hash) ?? [];
  const phases = plan.phases?.length ?? 0;
  for (let i = refs.length - 1; i >= 0; i--) {
    const tensors = refs[i]!.deref();
    if (tensors === undefined) {
      refs.splice(i, 1);
      continue;
    }
    if ((phasesOfList.get(tensors) ?? 0) === phases && sameStep(tensors, plan.tensors)) return { ...plan, tensors: tensors as PlannedTensor[] };
  }
  refs.push(new WeakRef(plan.tensors));
  phasesOfList.set(plan.tensors, phases);
  stepsByHash.set(hash, refs);
  return plan;
}
const phasesOfList = new WeakMap<readonly PlannedTensor[], number>();

/** The key of a question: the setup with its defaults filled in, so `{}` and `{ tp: 1 }` are one question. */
function setupKey(setup: RunSetup): string {
  return JSON.stringify(resolveSetup(setup)) + String(setup.gpusPerNode);
}

/**
 * The plan of `workload` under `setup`, built the first time it is asked for and the same object
 * every time after (plans are values: nothing edits one once built). Throws the VramfitError
 * buildPlan throws when the setup does not apply (bad --tp, --seq for a CNN, …), again each time.
 * Byte limits (checkPlanBytes) are the caller's to check, as with buildPlan.
 */
export function sharedPlan(workload: Workload, setup: RunSetup): MemoryPlan {
  let cache = byWorkload.get(workload);
  if (cache === undefined) byWorkload.set(workload, (cache = new Map()));
  const key = setupKey(setup);
  let built = cache.get(key);
  if (built !== undefined) {
    const entry = kept.get(built);
    if (entry !== undefined) {
      kept.delete(built); // most recently used last
      kept.set(built, entry);
    }
  } else {
    try {
      built = { plan: shareStep(buildPlan(workload, setup)) };
    } catch (error) {
      if (!(error instanceof VramfitError)) throw error;
      built = { error };
    }
    cache.set(key, built);
    const tensors = "plan" in built ? built.plan.tensors.length : 0;
    kept.set(built, { cache, key, tensors });
    tensorsKept += tensors;
    for (const [oldest, entry] of kept) {
      if (tensorsKept <= TENSORS_KEPT || oldest === built) break;
      kept.delete(oldest);
      entry.cache.delete(entry.key);
      tensorsKept -= entry.tensors;
    }
  }
  if ("error" in built) throw built.error;
  return built.plan;
}

/** Plans for variants of one workload, shared as {@link sharedPlan}; a variant that does not apply is undefined. */
export function planner(workload: Workload): (setup: RunSetup) => MemoryPlan | undefined {
  return (setup) => {
    try {
      return sharedPlan(workload, setup);
    } catch (error) {
      if (error instanceof VramfitError) return undefined;
      throw error;
    }
  };
}
