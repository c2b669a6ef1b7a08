// The training step's phase convention: order, sub-phases and the lifetimes plans spread into tensors.
import { describe, expect, it } from "vitest";
import { TrainingPhases, transformerLayerStage, transformerStages } from "../../src/plan/stepPhases.js";

describe("the phases of a training step", () => {
  it("runs forward over the stages and the loss, backward in reverse, then the optimizer and zero_grad", () => {
    const step = new TrainingPhases(transformerStages(2));
    expect(step.names).toEqual([
      "forward embeddings",
      "forward layers.0",
      "forward layers.1",
      "forward head",
      "forward loss",
      "backward loss",
      "backward head",
      "backward layers.1",
      "backward layers.0",
      "backward embeddings",
      "optimizer.step",
      "zero_grad",
    ]);
    expect(step.loss).toBe(4);
    expect(step.forward(transformerLayerStage(1))).toBe(2);
    expect(step.backward(transformerLayerStage(1))).toBe(7);
    expect(step.stage("layers.1")).toBe(transformerLayerStage(1));
    expect(step.optimizerStep).toBe(10);
    expect(step.zeroGrad).toBe(11);
  });

  it("gives the lifetimes of saved tensors, gradients, transients and optimizer temporaries", () => {
    const step = new TrainingPhases(["model"]);
    expect(step.names).toEqual(["forward model", "forward loss", "backward loss", "backward model", "optimizer.step", "zero_grad"]);
    expect(step.saved(0)).toEqual({ firstPhase: 0, lastPhase: 3 });
    expect(step.gradient(0)).toEqual({ firstPhase: 3, lastPhase: 4 });
    expect(step.forwardTransient(1)).toEqual({ firstPhase: 1, lastPhase: 1 });
    expect(step.backwardTransient(0)).toEqual({ firstPhase: 3, lastPhase: 3 });
    expect(step.optimizerTemporary()).toEqual({ firstPhase: 4, lastPhase: 4 });
  });

  it("splits a stage into sub-phases, and a stage's range spans them", () => {
    const step = new TrainingPhases([{ name: "layers.0", forwardSteps: ["attention", "mlp"], backwardSteps: ["mlp", "attention"] }]);
    expect(step.names.slice(0, 6)).toEqual([
      "forward layers.0 attention",
      "forward layers.0 mlp",
      "forward loss",
      "backward loss",
      "backward layers.0 mlp",
      "backward layers.0 attention",
    ]);
    expect(step.forward(0, "mlp")).toBe(1);
    expect(step.backward(0, "attention")).toBe(5);
    expect(step.saved(0)).toEqual({ firstPhase: 0, lastPhase: 5 });
    expect(step.forwardTransient(0)).toEqual({ firstPhase: 0, lastPhase: 1 });
    expect(() => step.backward(0, "norm")).toThrow(/no backward step norm/);
    expect(() => step.forward(3)).toThrow(/no stage 3/);
  });

  it("refuses two stages of one name, and a loss that is not last", () => {
    expect(() => new TrainingPhases(["a", "a"])).toThrow(/distinct/);
    expect(() => new TrainingPhases(["loss", "a"])).toThrow(/distinct/);
  });

  it("takes a last stage named loss as the loss, with its sub-phases", () => {
    const step = new TrainingPhases(["a", { name: "loss", forwardSteps: ["log_softmax", "nll_loss"], backwardSteps: ["nll_loss", "log_softmax"] }]);
    expect(step.names.slice(0, 5)).toEqual(["forward a", "forward loss log_softmax", "forward loss nll_loss", "backward loss nll_loss", "backward loss log_softmax"]);
    expect(step.forwardStep(1, 1)).toBe(2);
    expect(step.backwardStep(1, 1)).toBe(4);
  });
});
