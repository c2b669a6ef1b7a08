// Names made once per pair of parts and shared (src/plan/nameTable.ts): what plans share must be what each would have made.
import { describe, expect, it } from "vitest";
import { NameTable } from "../../src/plan/nameTable.js";
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
