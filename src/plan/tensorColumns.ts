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

/**
 * Per list made by {@link concatTensors}, the lists it joins (flattened: a part made so is
 * replaced by its own parts). Its columns are then the parts' copied end to end: a plan shares its
 * step with every plan of the same timeline (src/plan/timelineCache.ts), so the step's thousands
 * of tensors are read once per timeline instead of once per plan (GPT-3's check: 23 plans of
 * about 10,000 tensors each, read field by field through megamorphic loads).
 */
const partsByList = new WeakMap<readonly ColumnTensor[], readonly (readonly ColumnTensor[])[]>();

/** `parts` joined into one new list (as `Array.prototype.concat`), whose columns are made from theirs. */
export function concatTensors<T extends ColumnTensor>(...parts: readonly (readonly T[])[]): T[] {
  const flat = parts.flatMap((part) => (partsByList.get(part) ?? [part]) as readonly (readonly T[])[]).filter((part) => part.length > 0);
  const list = ([] as T[]).concat(...flat);
  partsByList.set(list, flat);
  return list;
}

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
  const parts = partsByList.get(list);
  if (parts !== undefined && parts.reduce((sum, part) => sum + part.length, 0) === n) {
    let at = 0;
    for (const part of parts) {
      // A part other plans join too (a shared step) keeps its columns, copied here; the others (this
      // plan's states, a workspace) are read where they land.
      const from = sharedParts.has(part) ? tensorColumns({ tensors: part }, phases) : undefined;
      if (from === undefined) readInto(columns, part, at);
      else {
        columns.fixedBytes.set(from.fixedBytes, at);
        columns.perSampleBytes.set(from.perSampleBytes, at);
        columns.firstPhase.set(from.firstPhase, at);
        columns.lastPhase.set(from.lastPhase, at);
      }
      at += part.length;
    }
  } else readInto(columns, list, 0);
  columnsByList.set(list, columns);
  return columns;
}

/** Lists that many joined lists share (a timeline's step, src/plan/transformerPlan.ts): their columns are kept. */
const sharedParts = new WeakSet<readonly ColumnTensor[]>();

/** Marks `list` as a part many plans join (see concatTensors): its columns are made once and copied. */
export function sharedPart<T extends readonly ColumnTensor[]>(list: T): T {
  sharedParts.add(list);
  return list;
}

/** Reads `list`'s tensors into `columns` from index `at` on. */
function readInto(columns: TensorColumns, list: readonly ColumnTensor[], at: number): void {
  const last = columns.phases - 1;
  for (let i = 0; i < list.length; i++) {
    const t = list[i]!;
    columns.fixedBytes[at + i] = t.fixedBytes;
    columns.perSampleBytes[at + i] = t.perSampleBytes;
    columns.firstPhase[at + i] = t.firstPhase ?? 0;
    columns.lastPhase[at + i] = t.lastPhase ?? last;
  }
}
