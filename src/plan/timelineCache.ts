// A training step's activation timeline, built once per distinct model shape and shared by every setup that differs only in what the tape does not read.
import type { PlannedTensor } from "./memoryPlan.js";

/**
 * How many timeline tensors may be kept in all. Advice and `gpus --fit` ask for many setups of
 * one workload that differ only in ZeRO, GPU count, offload or optimizer — none of which changes
 * a single activation — so the tape (tens of thousands of ops for GPT-3) was built and walked
 * again for each: 36 plans for `check --model gpt3-175b --batch 1`, of 12 distinct timelines.
 * At this bound the kept timelines of GPT-3's advice (about 8,000 tensors each) all stay; a
 * 5,000-layer CNN's (51,604 tensors) keep the last few. Past it the least recently used go.
 */
const TENSORS_KEPT = 250_000;

interface Kept {
  owner: WeakRef<object>;
  key: string;
  tensors: number;
}

/** Per owner (a workload's architecture or network, by identity), its timelines by shape key. */
const byOwner = new WeakMap<object, Map<string, { tensors: readonly PlannedTensor[] }>>();
/** Every kept timeline in use order, for the one bound on what is kept. */
const kept = new Map<{ tensors: readonly PlannedTensor[] }, Kept>();
let tensorsKept = 0;

/**
 * The timeline `build()` makes for `owner` under `key` — every input of the tape but `owner`,
 * serialized — built the first time and the same object after. A timeline is a value: callers
 * copy its tensors into their plans and never edit them (src/plan/planCache.ts shares them too).
 */
export function sharedTimeline<T extends { tensors: readonly PlannedTensor[] }>(owner: object, key: string, build: () => T): T {
  let timelines = byOwner.get(owner);
  if (timelines === undefined) byOwner.set(owner, (timelines = new Map()));
  const found = timelines.get(key);
  if (found !== undefined) {
    const entry = kept.get(found)!;
    kept.delete(found); // most recently used last
    kept.set(found, entry);
    return found as T;
  }
  const built = build();
  timelines.set(key, built);
  kept.set(built, { owner: new WeakRef(owner), key, tensors: built.tensors.length });
  tensorsKept += built.tensors.length;
  for (const [oldest, entry] of kept) {
    if (tensorsKept <= TENSORS_KEPT || oldest === built) break;
    kept.delete(oldest);
    const owner = entry.owner.deref();
    if (owner !== undefined) byOwner.get(owner)?.delete(entry.key);
    tensorsKept -= entry.tensors;
  }
  return built;
}
