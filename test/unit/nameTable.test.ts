// Names made once per pair of parts and shared (src/plan/nameTable.ts): what plans share must be what each would have made.
import { describe, expect, it } from "vitest";
import { NameTable, NumberedNames } from "../../src/plan/nameTable.js";
import { TrainingPhases } from "../../src/plan/stepPhases.js";

describe("NameTable", () => {
  it("makes each pair's name once and gives it again after", () => {
    const made: string[] = [];
    const table = new NameTable<string, number>((a, b) => {
      made.push(`${a}/${b}`);
      return `${a}.${b}`;
    });
    expect([table.get("layers.3", 1), table.get("layers.3", 2), table.get("layers.3", 1), table.get("head", 1)]).toEqual(["layers.3.1", "layers.3.2", "layers.3.1", "head.1"]);
    expect(made).toEqual(["layers.3/1", "layers.3/2", "head/1"]);
  });

  it("gives each first part its own names when runs of them alternate", () => {
    const table = new NameTable<string, number>((a, b) => `${a}.${b}`);
    const asked: [string, number][] = [["conv1", 0], ["conv1", 1], ["fc", 0], ["fc", 1], ["conv1", 1], ["conv1", 2], ["fc", 2], ["conv1", 0]];
    expect(asked.map(([a, b]) => table.get(a, b))).toEqual(asked.map(([a, b]) => `${a}.${b}`));
  });

  it("numbers a base's names from .1, the base itself first, one list grown as asked", () => {
    const names = new NumberedNames();
    expect(names.get("conv1.weights", 3)).toEqual(["conv1.weights", "conv1.weights.1", "conv1.weights.2"]);
    const longer = names.get("conv1.weights", 5);
    expect(longer.slice(0, 5)).toEqual(["conv1.weights", "conv1.weights.1", "conv1.weights.2", "conv1.weights.3", "conv1.weights.4"]);
    // A shorter ask gives the list already made: its first names are the same strings.
    expect(names.get("conv1.weights", 2)[1]).toBe(longer[1]);
    expect(names.get("fc.grads", 2).slice(0, 2)).toEqual(["fc.grads", "fc.grads.1"]);
  });

  it("names phases as before whichever timeline asked first", () => {
    const stages = [{ name: "embeddings" }, { name: "layers.0", forwardSteps: ["attention", "mlp"], backwardSteps: ["mlp", "attention"] }];
    const first = new TrainingPhases(stages).names;
    expect(new TrainingPhases(stages).names).toEqual(first);
    expect(first).toEqual([
      "forward embeddings",
      "forward layers.0 attention",
      "forward layers.0 mlp",
      "forward loss",
      "backward loss",
      "backward layers.0 mlp",
      "backward layers.0 attention",
      "backward embeddings",
      "optimizer.step",
      "zero_grad",
    ]);
  });
});
