// The tape: live ranges derived from the ops the way autograd frees memory, checked by hand on a tiny net.
import { describe, expect, it } from "vitest";
import { largestBatchWithin, peakBytes, phaseBytes, type MemoryPlan } from "../../src/plan/memoryPlan.js";
import { TrainingTape } from "../../src/plan/trainingTape.js";

const ps = (perSampleBytes: number) => ({ fixedBytes: 0, perSampleBytes });

/** x → fc1 (saves x) → relu_ in place (saves its output) → fc2 (saves it) → loss (saves its input). */
function tinyTape(): TrainingTape {
  const tape = new TrainingTape(["fc1", "fc2"]);
  const x = tape.input("inputs.x", ps(100));
  const [h] = tape.op(0, "linear", [x], [{ name: "fc1.output", size: ps(200) }], { saves: [x], groups: ["fc1"] });
  const r = tape.inPlace(0, "relu", h!, []);
  tape.ops.at(-1)!.saves.push(r);
  const [y] = tape.op(1, "linear", [r], [{ name: "fc2.output", size: ps(50) }], { saves: [r], groups: ["fc2"] });
  tape.op(tape.lossStage, "loss", [y!], [{ name: "loss.value", size: { fixedBytes: 4, perSampleBytes: 0 } }], { saves: [y!] });
  return tape;
}

describe("TrainingTape", () => {
  const { phases, tensors, gradientStarts } = tinyTape().timeline();
  const range = (name: string) => {
    const t = tensors.find((x) => x.name === name)!;
    return [phases.names[t.firstPhase!], phases.names[t.lastPhase!], t.category];
  };

  it("runs one phase per op, forward then backward in reverse", () => {
    expect(phases.names).toEqual([
      "forward fc1 linear",
      "forward fc1 relu",
      "forward fc2 linear",
      "forward loss loss",
      "backward loss loss",
      "backward fc2 linear",
      "backward fc1 relu",
      "backward fc1 linear",
      "optimizer.step",
      "zero_grad",
    ]);
  });

  it("keeps saved tensors to their saver's backward, and a view or in-place result in its storage", () => {
    expect(range("inputs.x")).toEqual(["forward fc1 linear", "zero_grad", "activations"]); // a batch input
    // fc1's output is relu'd in place: one storage, saved by relu and fc2, freed after relu's backward.
    expect(range("fc1.output")).toEqual(["forward fc1 linear", "backward fc1 relu", "activations"]);
    expect(range("fc2.output")).toEqual(["forward fc2 linear", "backward loss loss", "activations"]);
    expect(tensors.filter((t) => t.name === "fc1.output")).toHaveLength(1);
  });

  it("allocates a gradient at its first consumer's backward and frees it after its producer's", () => {
    expect(range("fc2.output.grad")).toEqual(["backward loss loss", "backward fc2 linear", "workspace"]);
    // relu_'s output gradient (fc2's backward makes it), and relu's backward makes one for its input.
    expect(range("fc1.output.grad")).toEqual(["backward fc2 linear", "backward fc1 relu", "workspace"]);
    expect(tensors.filter((t) => t.name === "fc1.output.grad")).toHaveLength(2);
    expect(tensors.some((t) => t.name === "inputs.x.grad")).toBe(false); // the input needs none
    expect(gradientStarts.get("fc2")).toBe(phases.names.indexOf("backward fc2 linear"));
    expect(gradientStarts.get("fc1")).toBe(phases.names.indexOf("backward fc1 linear"));
  });

  it("peaks where the most is live: by hand, at fc2's forward and at relu's backward", () => {
    const plan: MemoryPlan = { description: "tiny", parameterCount: 0, phases: phases.names, tensors };
    // forward fc2: x 100 + h 200 + y 50 = 350; the loss adds its 4-byte value (nothing keeps it);
    // backward loss: x + h + y + y's gradient = 400; fc2's: x + h + both gradients = 550; relu's:
    // x + h + its output's and its input's gradients = 700; fc1's: x + h's gradient = 300.
    expect(phaseBytes(plan, 1).slice(0, 8)).toEqual([300, 300, 350, 354, 400, 550, 700, 300]);
    expect(peakBytes(plan, 2)).toBe(1400);
    expect(largestBatchWithin(plan, 7000)).toBe(10);
  });

  it("a recomputed op lives again from its stage's backward; what it reads from outside is kept", () => {
    const tape = tinyTape();
    const { phases: p, tensors: t } = tape.timeline({ recomputed: (op) => op.stage === 1 });
    const named = (name: string) => t.filter((x) => x.name === name).map((x) => [p.names[x.firstPhase!], p.names[x.lastPhase!], x.category]);
    // fc2's output is kept by the loss (not recomputed): unchanged. fc1's output is fc2's checkpointed input: kept.
    expect(named("fc2.output")).toEqual([["forward fc2 linear", "backward loss loss", "activations"]]);
    expect(named("fc1.output")).toEqual([["forward fc1 linear", "backward fc1 relu", "activations"]]);
  });
});
