// A plan's tensors as typed columns (bytes and live ranges), made once per tensor list for the loops every answer runs over them.

/** What the columns read of a planned tensor (memoryPlan.ts's PlannedTensor; named here so memoryPlan.ts can import this file without a cycle). */
export interface ColumnTensor {
  name?: unknown;
  category?: unknown;
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
  /**
   * What validatePlan asks of every tensor, answered in the same walk (src/plan/validatePlan.ts,
   * plainTensor): the first tensor that is not an object with a string name, whole byte counts
   * from 0 to 2^53 and phases within [0, phases - 1] (last at or after first), or -1; and the
   * distinct categories, which validatePlan checks against CATEGORIES.
   */
  firstMalformed: number;
  categories: unknown[];
  /** Σ fixedBytes and Σ perSampleBytes of the tensors (src/plan/planLimits.ts's check). */
  fixedTotal: number;
  perSampleTotal: number;
}

/** A whole byte count that stays exact (validatePlan's rule). */
export function exactBytes(v: unknown): boolean {
  return typeof v === "number" && Number.isInteger(v) && v >= 0 && v <= 2 ** 53;
}

/** An absent phase, or one from `min` to the last of `phases`. */
export function phaseWithin(v: unknown, min: number, phases: number): boolean {
  return v === undefined || (typeof v === "number" && Number.isSafeInteger(v) && v >= min && v <= phases - 1);
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
    firstMalformed: -1,
    categories: [],
    fixedTotal: 0,
    perSampleTotal: 0,
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
        if (columns.firstMalformed < 0 && from.firstMalformed >= 0) columns.firstMalformed = at + from.firstMalformed;
        for (const category of from.categories) if (!columns.categories.includes(category)) columns.categories.push(category);
        // Whole numbers: exact sums while below 2^53 in any order, and at or above it in any order.
        columns.fixedTotal += from.fixedTotal;
        columns.perSampleTotal += from.perSampleTotal;
      }
      at += part.length;
    }
  } else readInto(columns, list, 0);
  columnsByList.set(list, columns);
  return columns;
}

/**
 * Records the columns of `list`, a list made from another (`source`'s tensors, as `sources[i]`
 * names for tensor i) with its own names and live ranges (`firstPhase`, `lastPhase`, `phases`
 * phases): what readInto would read from it, without reading it. src/plan/layerReplication.ts
 * makes a deep model's timeline (GPT-3: ~8,000 tensors) from a five-layer one this way, and every
 * timeline's tensors were then read back, field by field, for their columns.
 *
 * Only where readInto would find every tensor plain: `source`'s all are (its bytes, copied here),
 * every range lies within the phases, and every name is a string (the caller's word); else
 * nothing is recorded, and the list is read as any other. The categories are `source`'s, in its
 * order: the caller's word that every one of its tensors is copied, each first at a later index
 * than the one before it (so the list meets them in `source`'s order).
 */
export function recordCopiedColumns(list: readonly ColumnTensor[], source: TensorColumns, sources: Int32Array, firstPhase: Int32Array, lastPhase: Int32Array, phases: number): void {
  const n = list.length;
  if (source.firstMalformed >= 0 || sources.length !== n || firstPhase.length !== n || lastPhase.length !== n || phases < 1) return;
  const last = phases - 1;
  const fixedBytes = new Float64Array(n);
  const perSampleBytes = new Float64Array(n);
  const { fixedBytes: fromFixed, perSampleBytes: fromPerSample } = source;
  let fixedTotal = 0;
  let perSampleTotal = 0;
  for (let i = 0; i < n; i++) {
    const from = firstPhase[i]!;
    const to = lastPhase[i]!;
    if (from < 0 || from > last || to < from || to > last) return;
    const k = sources[i]!;
    const fixed = fromFixed[k]!;
    const perSample = fromPerSample[k]!;
    fixedBytes[i] = fixed;
    perSampleBytes[i] = perSample;
    // In index order from 0, as readInto sums: the same totals.
    fixedTotal += fixed;
    perSampleTotal += perSample;
  }
  columnsByList.set(list, { fixedBytes, perSampleBytes, firstPhase, lastPhase, phases, firstMalformed: -1, categories: source.categories.slice(), fixedTotal: 0 + fixedTotal, perSampleTotal: 0 + perSampleTotal });
}

/** Lists that many joined lists share (a timeline's step, src/plan/transformerPlan.ts): their columns are kept. */
const sharedParts = new WeakSet<readonly ColumnTensor[]>();

/** Marks `list` as a part many plans join (see concatTensors): its columns are made once and copied. */
export function sharedPart<T extends readonly ColumnTensor[]>(list: T): T {
  sharedParts.add(list);
  return list;
}

/**
 * Reads `list`'s tensors into `columns` from index `at` on. The same walk answers what the plan's
 * check asks of each tensor (see TensorColumns): a new plan was walked once to check it and once
 * for these columns, both cold in a fresh process.
 */
function readInto(columns: TensorColumns, list: readonly ColumnTensor[], at: number): void {
  const phases = columns.phases;
  const last = phases - 1;
  let fixedTotal = 0;
  let perSampleTotal = 0;
  let category: unknown;
  for (let i = 0; i < list.length; i++) {
    const t = list[i]!;
    if (t === null || typeof t !== "object" || Array.isArray(t)) {
      if (columns.firstMalformed < 0) columns.firstMalformed = at + i;
      continue;
    }
    const { name, fixedBytes, perSampleBytes, firstPhase, lastPhase } = t;
    columns.fixedBytes[at + i] = fixedBytes;
    columns.perSampleBytes[at + i] = perSampleBytes;
    columns.firstPhase[at + i] = firstPhase ?? 0;
    columns.lastPhase[at + i] = lastPhase ?? last;
    fixedTotal += fixedBytes;
    perSampleTotal += perSampleBytes;
    if (t.category !== category) {
      category = t.category;
      if (!columns.categories.includes(category)) columns.categories.push(category);
    }
    // exactBytes and phaseWithin written out, the same tests (`x % 1 === 0` is Number.isInteger's
    // for a number within the bounds, and a phase within them is a safe integer): no calls per
    // tensor in a loop that runs cold in a fresh process.
    const from = typeof firstPhase === "number" ? firstPhase : 0;
    const plain =
      typeof name === "string" &&
      typeof fixedBytes === "number" && fixedBytes >= 0 && fixedBytes <= 2 ** 53 && fixedBytes % 1 === 0 &&
      typeof perSampleBytes === "number" && perSampleBytes >= 0 && perSampleBytes <= 2 ** 53 && perSampleBytes % 1 === 0 &&
      (firstPhase === undefined || (typeof firstPhase === "number" && firstPhase >= 0 && firstPhase <= last && firstPhase % 1 === 0)) &&
      (lastPhase === undefined || (typeof lastPhase === "number" && lastPhase >= from && lastPhase <= last && lastPhase % 1 === 0));
    if (!plain && columns.firstMalformed < 0) columns.firstMalformed = at + i;
  }
  columns.fixedTotal += fixedTotal;
  columns.perSampleTotal += perSampleTotal;
}

/**
 * Drops the columns made for `list` and its parts: a list that failed the plan's check may be
 * mended in place and checked again, and its columns must then be read afresh.
 */
export function forgetColumns(list: readonly ColumnTensor[]): void {
  columnsByList.delete(list);
  for (const part of partsByList.get(list) ?? []) columnsByList.delete(part);
}
