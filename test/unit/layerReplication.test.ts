// A transformer's training plan from its replicated middle layer equals the plan built layer by layer, for every preset and the setups that change the tape.
import { describe, expect, it } from "vitest";
import { buildPlan } from "../../src/plan/buildPlan.js";
import { replicationCounts, withoutReplication } from "../../src/plan/layerReplication.js";
import type { RunSetup } from "../../src/plan/setup.js";
import { listPresets, presetWorkload } from "../../src/workload/presets.js";
import type { Workload } from "../../src/workload/workload.js";

/** The setups whose tapes differ: checkpointing, tensor parallelism, LoRA, the legacy loss, fp32, a short sequence. */
function setupsOf(workload: Workload): RunSetup[] {
  const base: RunSetup = { mode: "train", precision: "amp", optimizer: "adamw" };
  const text = workload.kind === "transformer" && workload.architecture.vision === undefined;
  const decoder = workload.kind === "transformer" && workload.architecture.head === "lm";
  return [
    base,
    { ...base, checkpointing: "full" },
    { ...base, checkpointing: "selective" },
    { ...base, precision: "fp32", optimizer: "sgd" },
    { ...base, lora: { rank: 8, targets: ["q", "v"] } },
    { ...base, lora: { rank: 16, targets: ["q", "k", "v", "o", "gate", "up", "down"] }, weights: "nf4", checkpointing: "full" },
    ...(text ? ([{ ...base, seq: 128 }, { ...base, tp: 2, seq: 256 }] satisfies RunSetup[]) : []),
    ...(decoder ? ([{ ...base, hfLoss: "legacy", seq: 256 }] satisfies RunSetup[]) : []),
  ];
}

describe("layer replication", () => {
  it("gives every transformer preset's plan exactly as the tape built layer by layer does", () => {
    let compared = 0;
    for (const preset of listPresets()) {
      const workload = presetWorkload(preset.name)!;
      if (workload.kind !== "transformer") continue;
      // The deepest (GPT-3's 96 layers, Llama 2 70B's 80) built in full take a while: two setups each.
      for (const setup of setupsOf(workload).slice(0, workload.architecture.layers > 40 ? 2 : undefined)) {
        // New workload objects: no timeline shared from an earlier build (src/plan/timelineCache.ts).
        let full;
        try {
          full = withoutReplication(() => buildPlan(structuredClone(workload), setup));
        } catch {
          continue; // a setup that does not apply to this preset (tp not dividing its heads, …)
        }
        const before = { ...replicationCounts };
        const replicated = buildPlan(structuredClone(workload), setup);
        // Replicated, not refused by the six-layer check and built in full (which would prove
        // nothing) — but under LoRA, where a frozen model passes the residual stream's gradient
        // through every layer as one tensor, living longer the more layers there are: no layer's copy.
        if (setup.lora === undefined && workload.architecture.layers > 6) {
          expect(replicationCounts.refused, `${preset.name} ${JSON.stringify(setup)}: refused`).toBe(before.refused);
          expect(replicationCounts.replicated).toBe(before.replicated + 1);
        }
        expect(replicated, `${preset.name} ${JSON.stringify(setup)}`).toEqual(full);
        compared += 1;
      }
    }
    expect(compared).toBeGreaterThan(100);
  }, 120_000);

  it("checks six layers once per kind of tape: other lengths and tensor-parallel degrees reuse the verdict and the layout, and equal the tape built layer by layer", () => {
    // One workload object for all (the verdict is kept per model); the references each from a new one.
    const workload = presetWorkload("llama-3.2-1b")!;
    const base: RunSetup = { mode: "train", precision: "amp", optimizer: "adamw" };
    const lora: RunSetup = { ...base, lora: { rank: 8, targets: ["q", "v"] } };
    const kinds = [
      [128, 256, 512].map((seq): RunSetup => ({ ...base, seq })),
      [2, 4, 8].map((tp): RunSetup => ({ ...base, tp, seq: 256 })),
      [128, 256].map((seq): RunSetup => ({ ...lora, seq })),
    ];
    for (const setups of kinds) {
      const before = { ...replicationCounts };
      for (const setup of setups) {
        const full = withoutReplication(() => buildPlan(structuredClone(workload), setup));
        expect(buildPlan(workload, setup), JSON.stringify(setup)).toEqual(full);
      }
      expect(replicationCounts.checked, JSON.stringify(setups[0])).toBe(before.checked + 1);
      // The verdict, whichever it was, held for every setup of the kind.
      const replicated = replicationCounts.replicated - before.replicated;
      expect([0, setups.length]).toContain(replicated);
      expect(replicated + replicationCounts.refused - before.refused).toBe(setups.length);
      // Replicated ones after the first are the first's layout with their own bytes (and equal the full build, above).
      expect(replicationCounts.refilled - before.refilled).toBe(replicated === 0 ? 0 : setups.length - 1);
    }
  });
});
