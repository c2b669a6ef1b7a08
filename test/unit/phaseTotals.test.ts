// phaseTotalColumns (src/plan/memoryPlan.ts) sums its differences in plain arrays: the totals against the same differences summed in Float64Arrays, and against each phase's live tensors.
import { describe, expect, it } from "vitest";
import { phaseTotalColumns, type MemoryPlan, type PlannedTensor } from "../../src/plan/memoryPlan.js";

/** The differences summed in Float64Arrays, as phaseTotalColumns did before: the same operations in the same order. */
function inFloat64Arrays(tensors: readonly PlannedTensor[], phases: number): { fixed: number[]; perSample: number[] } {
  const fixed = new Float64Array(phases + 1);
  const perSample = new Float64Array(phases + 1);
  for (const t of tensors) {
    const first = t.firstPhase ?? 0;
    const end = (t.lastPhase ?? phases - 1) + 1;
    fixed[first]! += t.fixedBytes;
    fixed[end]! -= t.fixedBytes;
    perSample[first]! += t.perSampleBytes;
    perSample[end]! -= t.perSampleBytes;
  }
  let f = 0;
  let p = 0;
  const out = { fixed: [] as number[], perSample: [] as number[] };
  for (let phase = 0; phase < phases; phase++) {
    out.fixed.push((f += fixed[phase]!));
    out.perSample.push((p += perSample[phase]!));
  }
  return out;
}

/** A deterministic generator (mulberry32), so a failure replays. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const exact = (values: ArrayLike<number>) => Array.from(values, (v) => (Object.is(v, -0) ? "-0" : String(v)));

describe("phaseTotalColumns", () => {
  it("gives the Float64Array sums for sizes small, past 2^31, near 2^53, fractional and -0", () => {
    const sizes = [0, -0, 1, 512, 802816, 2 ** 31 - 1, 2 ** 31, 2 ** 32 + 512, 16e9, 2 ** 52, 2 ** 53, 0.5, 1e-3];
    for (let seed = 1; seed <= 40; seed++) {
      const next = random(seed);
      const phases = 1 + Math.floor(next() * 60);
      const tensors: PlannedTensor[] = [];
      for (let i = 0; i < 1 + Math.floor(next() * 80); i++) {
        const a = Math.floor(next() * phases);
        const b = Math.floor(next() * phases);
        tensors.push({
          name: `t${i}`,
          category: "activations",
          fixedBytes: sizes[Math.floor(next() * sizes.length)]!,
          perSampleBytes: sizes[Math.floor(next() * sizes.length)]!,
          ...(next() < 0.8 && { firstPhase: Math.min(a, b), lastPhase: Math.max(a, b) }),
        });
      }
      const plan: MemoryPlan = { description: "random", parameterCount: 0, phases: Array.from({ length: phases }, (_, p) => `p${p}`), tensors } as MemoryPlan;
      const totals = phaseTotalColumns(plan);
      const reference = inFloat64Arrays(tensors, phases);
      expect(exact(totals.fixedBytes), `seed ${seed}`).toEqual(exact(reference.fixed));
      expect(exact(totals.perSampleBytes), `seed ${seed}`).toEqual(exact(reference.perSample));
    }
  });

  it("gives each phase the bytes of the tensors live in it (whole sizes below 2^53: any order sums alike)", () => {
    const next = random(7);
    const phases = 50;
    const tensors: PlannedTensor[] = Array.from({ length: 300 }, (_, i) => {
      const a = Math.floor(next() * phases);
      const b = Math.floor(next() * phases);
      return { name: `t${i}`, category: "activations", fixedBytes: Math.floor(next() * 2 ** 40), perSampleBytes: Math.floor(next() * 2 ** 24), firstPhase: Math.min(a, b), lastPhase: Math.max(a, b) };
    });
    const totals = phaseTotalColumns({ description: "", parameterCount: 0, phases: Array.from({ length: phases }, (_, p) => `p${p}`), tensors } as MemoryPlan);
    for (let phase = 0; phase < phases; phase++) {
      const live = tensors.filter((t) => t.firstPhase! <= phase && phase <= t.lastPhase!);
      expect(totals.fixedBytes[phase]).toBe(live.reduce((sum, t) => sum + t.fixedBytes, 0));
      expect(totals.perSampleBytes[phase]).toBe(live.reduce((sum, t) => sum + t.perSampleBytes, 0));
    }
  });
});
