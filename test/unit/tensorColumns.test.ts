// A joined list's columns, made from its parts' (src/plan/tensorColumns.ts), against the columns read tensor by tensor.
import { describe, expect, it } from "vitest";
import { planMemory, resolveWorkload } from "../../src/index.js";
import { concatTensors, sharedPart, tensorColumns, type ColumnTensor } from "../../src/plan/tensorColumns.js";

/** The columns of a copy of the list: a list no part is known of, read tensor by tensor. */
const readDirectly = (tensors: readonly ColumnTensor[], phases: number) => tensorColumns({ tensors: [...tensors] }, phases);

describe("tensorColumns of joined lists", () => {
  it("copies a shared part's columns and reads the rest, with each part's defaults filled in for the list's phases", () => {
    const shared = sharedPart<ColumnTensor[]>([
      { fixedBytes: 1, perSampleBytes: 2, firstPhase: 3, lastPhase: 4 },
      { fixedBytes: 5, perSampleBytes: 0 },
    ]);
    const own: ColumnTensor[] = [{ fixedBytes: 7, perSampleBytes: 8, firstPhase: 1 }];
    const tail: ColumnTensor[] = [{ fixedBytes: 9, perSampleBytes: 10, lastPhase: 2 }];
    // Columns made for the shared part with another phase count must not leak into this list's.
    tensorColumns({ tensors: shared }, 3);
    const joined = concatTensors(own, concatTensors(shared, []), tail);
    expect(joined).toEqual([...own, ...shared, ...tail]);
    const columns = tensorColumns({ tensors: joined }, 9);
    expect(Array.from(columns.fixedBytes)).toEqual([7, 1, 5, 9]);
    expect(Array.from(columns.perSampleBytes)).toEqual([8, 2, 0, 10]);
    expect(Array.from(columns.firstPhase)).toEqual([1, 3, 0, 0]);
    expect(Array.from(columns.lastPhase)).toEqual([8, 4, 8, 2]);
  });

  it("gives every plan advice builds of a model the columns read tensor by tensor", () => {
    const workload = resolveWorkload({ model: "llama-3.2-1b" });
    const base = { mode: "train", precision: "amp", optimizer: "adamw", seq: 512 } as const;
    const setups = [base, { ...base, zeroStage: 3, gpus: 8 }, { ...base, gpus: 4 }, { ...base, tp: 2, checkpointing: "full" }, { ...base, offload: "optimizer" }] as const;
    for (const setup of setups) {
      const plan = planMemory(workload, setup);
      const phases = plan.phases!.length;
      const columns = tensorColumns(plan, phases);
      const direct = readDirectly(plan.tensors, phases);
      expect(columns).not.toBe(direct);
      expect(columns).toEqual(direct);
    }
  });
});
