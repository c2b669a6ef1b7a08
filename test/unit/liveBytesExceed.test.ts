// liveBytesExceed against a check of every phase, for random plans, batches and rooms: the search's shortcut (the likeliest phases, then a bound) gives the same verdict.
import { describe, expect, it } from "vitest";
import { liveBytesExceed } from "../../src/fit/analytic.js";
import { phaseTotalColumns, type MemoryPlan, type PlannedTensor } from "../../src/plan/memoryPlan.js";

/** A deterministic generator (mulberry32), so a failure names its seed. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function randomPlan(seed: number): MemoryPlan {
  const next = random(seed);
  // Up to a few hundred phases: several of liveBytesExceed's blocks of 32.
  const phases = 1 + Math.floor(next() * 200);
  const tensors: PlannedTensor[] = [];
  const count = 1 + Math.floor(next() * 80);
  for (let i = 0; i < count; i++) {
    const first = Math.floor(next() * phases);
    const last = first + Math.floor(next() * (phases - first));
    // Sizes of every scale, some repeated exactly (ties between phases), some large enough to round.
    const scale = 2 ** Math.floor(next() * 45);
    tensors.push({
      name: `t${i}`,
      category: "activations",
      fixedBytes: next() < 0.3 ? 0 : Math.floor(next() * scale),
      perSampleBytes: next() < 0.3 ? 0 : Math.floor(next() * scale),
      firstPhase: first,
      lastPhase: last,
    });
  }
  return { description: `random ${seed}`, parameterCount: 0, phases: Array.from({ length: phases }, (_, p) => `p${p}`), tensors };
}

/** Whether any phase holds more than `room` at `batch`, asking each. */
function anyPhaseExceeds(plan: MemoryPlan, batch: number, room: number): boolean {
  const { fixedBytes, perSampleBytes } = phaseTotalColumns(plan);
  for (let p = 0; p < fixedBytes.length; p++) if (fixedBytes[p]! + perSampleBytes[p]! * batch > room) return true;
  return false;
}

describe("liveBytesExceed", () => {
  it("answers as a check of every phase, for random plans, batches and rooms around each phase's bytes", () => {
    let exceeded = 0;
    let checks = 0;
    for (let seed = 1; seed <= 300; seed++) {
      const plan = randomPlan(seed);
      const { fixedBytes, perSampleBytes } = phaseTotalColumns(plan);
      const next = random(seed * 7919);
      for (const batch of [0, 1, 2, 3, 7, 64, 1000, 123_457, Math.floor(next() * 5000), 2 ** 40]) {
        // Rooms at, just below and just above some phase's bytes at this batch: where the verdict turns.
        const p = Math.floor(next() * fixedBytes.length);
        const at = fixedBytes[p]! + perSampleBytes[p]! * batch;
        for (const room of [at, at - 1, at + 1, Math.floor(at / 2), at * 2, 0]) {
          const expected = anyPhaseExceeds(plan, batch, room);
          expect(liveBytesExceed(plan, batch, room), `seed ${seed}, batch ${batch}, room ${room}`).toBe(expected);
          exceeded += expected ? 1 : 0;
          checks += 1;
        }
      }
    }
    // Both verdicts occur often (about 9 in 10 exceed), so the comparison is not one-sided.
    expect(exceeded).toBeGreaterThan(checks / 20);
    expect(checks - exceeded).toBeGreaterThan(checks / 20);
  });
});
