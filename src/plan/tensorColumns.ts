// A plan's tensors as typed columns (bytes and live ranges), made once per tensor list for the loops every answer runs over them.

/** What the columns read of a planned tensor (memoryPlan.ts's PlannedTensor; named here so memoryPlan.ts can import this file without a cycle). */
export interface ColumnTensor {
  fixedBytes: number;
  perSampleBytes: number;
  firstPhase?: number;
  lastPhase?: number;
}

/**
 * Tensor i's `fixedBytes`, `perSampleBytes` and live range [first, last] (phase indices, the
 * defaults filled in). A plan's tensors are objects of many shapes (the tape's, the model
 * states', the spreads that place them on the timeline), so every loop over them reads their
 * fields through V8's slowest, megamorphic property loads: a GPT-3 answer walked its 10,226
 * tensors that way once per replay, for the phase totals and for the step's order. Read once
 * into typed arrays, the later loops index numbers.
 */
export interface TensorColumns {
  fixedBytes: Float64Array;
  perSampleBytes: Float64Array;
  firstPhase: Int32Array;
  lastPhase: Int32Array;
  /** The phase count the defaults were filled in for. */
  phases: number;
}

/** Per tensor list (plans are values: src/plan/planCache.ts), its columns. */
const columnsByList = new WeakMap<readonly ColumnTensor[], TensorColumns>();

/** The columns of `plan.tensors` (`phases`: the plan's phase count, at least 1). */
export function tensorColumns(plan: { tensors: readonly ColumnTensor[] }, phases: number): TensorColumns {
  const list = plan.tensors;
  const known = columnsByList.get(list);
  if (known !== undefined && known.phases === phases && known.fixedBytes.length === list.length) return known;
  const n = list.length;
  const columns: TensorColumns = {
    fixedBytes: new Float64Array(n),
    perSampleBytes: new Float64Array(n),
    firstPhase: new Int32Array(n),
    lastPhase: new Int32Array(n),
    phases,
  };
  for (let i = 0; i < n; i++) {
    const t = list[i]!;
    columns.fixedBytes[i] = t.fixedBytes;
    columns.perSampleBytes[i] = t.perSampleBytes;
    columns.firstPhase[i] = t.firstPhase ?? 0;
    columns.lastPhase[i] = t.lastPhase ?? phases - 1;
  }
  columnsByList.set(list, columns);
  return columns;
}
