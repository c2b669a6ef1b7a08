// A joined list's columns, made from its parts' (src/plan/tensorColumns.ts), against the columns read tensor by tensor.
import { describe, expect, it } from "vitest";
import { planMemory, resolveWorkload } from "../../src/index.js";
import { concatTensors, recordCopiedColumns, sharedPart, tensorColumns, type ColumnTensor } from "../../src/plan/tensorColumns.js";

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

  it("gives the timelines made by replication and refilled from a layout the columns read tensor by tensor", () => {
    // Each model's first setup of a kind replicates its five-layer timeline; the others of the kind
    // (another length or tensor-parallel degree) refill that layout (src/plan/layerReplication.ts).
    for (const model of ["llama-3.2-1b", "gpt2", "bert-base"]) {
      const workload = resolveWorkload({ model });
      const base = { mode: "train", precision: "amp", optimizer: "adamw", seq: 256 } as const;
      const setups = [base, { ...base, seq: 128 }, { ...base, seq: 64, optimizer: "sgd" }, { ...base, checkpointing: "selective" }, { ...base, seq: 128, checkpointing: "selective" }, { ...base, tp: 2 }, { ...base, tp: 4 }] as const;
      for (const setup of setups) {
        const plan = planMemory(workload, setup);
        const phases = plan.phases!.length;
        expect(tensorColumns(plan, phases), `${model} ${JSON.stringify(setup)}`).toEqual(readDirectly(plan.tensors, phases));
      }
    }
  });

  it("records copied columns only where the source's tensors and the ranges are plain", () => {
    const source = [
      { name: "a", category: "activations", fixedBytes: 1, perSampleBytes: 2, firstPhase: 0, lastPhase: 1 },
      { name: "b", category: "workspace", fixedBytes: 2 ** 40, perSampleBytes: 0 },
    ];
    const sourceColumns = tensorColumns({ tensors: source }, 4);
    const copy = (k: number, first: number, last: number) => ({ ...source[k]!, firstPhase: first, lastPhase: last });
    const list = [copy(0, 0, 1), copy(1, 0, 3), copy(0, 2, 3)];
    recordCopiedColumns(list, sourceColumns, Int32Array.of(0, 1, 0), Int32Array.of(0, 0, 2), Int32Array.of(1, 3, 3), 4);
    expect(tensorColumns({ tensors: list }, 4)).toEqual(readDirectly(list, 4));
    // A range past the last phase: nothing recorded, so the list is read (and found malformed).
    const outside = [copy(0, 0, 1), copy(1, 0, 5)];
    recordCopiedColumns(outside, sourceColumns, Int32Array.of(0, 1), Int32Array.of(0, 0), Int32Array.of(1, 5), 4);
    expect(tensorColumns({ tensors: outside }, 4).firstMalformed).toBe(1);
    // A malformed source (fractional bytes): nothing recorded either.
    const fractional = [{ name: "c", category: "activations", fixedBytes: 0.5, perSampleBytes: 0 }];
    const copied = [{ ...fractional[0]!, fixedBytes: 3 }];
    recordCopiedColumns(copied, tensorColumns({ tensors: fractional }, 4), Int32Array.of(0), Int32Array.of(0), Int32Array.of(3), 4);
    expect(tensorColumns({ tensors: copied }, 4).fixedBytes[0]).toBe(3);
  });
});
