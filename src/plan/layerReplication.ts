// A transformer's training timeline for many identical layers, made from a five-layer one: its middle layer's tensors replicated with shifted phases and names.
import type { PlannedTensor } from "./memoryPlan.js";
import { NameTable } from "./nameTable.js";
import { TrainingPhases, type Stage } from "./stepPhases.js";
import { recordCopiedColumns, tensorColumns } from "./tensorColumns.js";

/** What TrainingTape.timeline returns: the phases, the tensors, when each group's gradients start, and each tensor's stage. */
export interface StepTimeline {
  phases: TrainingPhases;
  tensors: PlannedTensor[];
  gradientStarts: Map<string, number>;
  /** Per group, the phases its ops' backwards make their parameters' gradients in. */
  parameterGradientStarts: Map<string, { phase: number; parameters: number }[]>;
  /** The stage each tensor comes from (stage 0 the embeddings, layer i stage i + 1). */
  origins: Int32Array;
}

/** Layers of the model built in full: 0 and 1 (what follows the embeddings), 2 (replicated), 3 and 4 (what precedes the head). */
const BUILT_LAYERS = 5;
/** The layer replicated. */
const TEMPLATE_LAYER = 2;
const TEMPLATE_STAGE = TEMPLATE_LAYER + 1;

let enabled = true;

/** Runs `fn` with every timeline built layer by layer: how the tests get the timeline replication must equal. */
export function withoutReplication<T>(fn: () => T): T {
  const was = enabled;
  enabled = false;
  try {
    return fn();
  } finally {
    enabled = was;
  }
}

/**
 * The timeline of a model with `layers` identical layers; `build(n)` makes it for `n` layers op by
 * op. Every layer of a transformer's training tape is the same ops on the same sizes (sliding
 * windows and caches are inference's), so GPT-3's 96 layers were 96 copies of one layer's work:
 * the tape of five layers is built, and six as a check that replicating five gives six exactly
 * (phases, tensors in order, gradient starts); if not, the model is built in full.
 */
export function layeredTimeline(layers: number, build: (layers: number) => StepTimeline, checked?: CheckedTape): StepTimeline {
  if (!enabled || layers <= BUILT_LAYERS + 1) return build(layers);
  let known = checked === undefined ? undefined : verdicts.get(checked.owner)?.get(checked.key);
  if (known === false) {
    replicationCounts.refused += 1;
    return build(layers);
  }
  const small = build(BUILT_LAYERS);
  if (known === undefined) {
    known = sameTimeline(replicate(small, BUILT_LAYERS + 1).timeline, build(BUILT_LAYERS + 1));
    replicationCounts.checked += 1;
    if (checked !== undefined) {
      let byKey = verdicts.get(checked.owner);
      if (byKey === undefined) verdicts.set(checked.owner, (byKey = new Map()));
      byKey.set(checked.key, known);
    }
    if (!known) {
      replicationCounts.refused += 1;
      return build(layers);
    }
  }
  replicationCounts.replicated += 1;
  if (checked === undefined) return replicate(small, layers).timeline;
  // Another timeline of this kind (other sizes) made from a small one laid out alike: the same
  // names, phases and origins, so only the bytes are copied (GPT-3's 96 layers renamed per tensor
  // for each of its 12 timelines was a fifth of a timeline's cost).
  const key = `${layers} ${checked.key}`;
  let byKey = layouts.get(checked.owner);
  if (byKey === undefined) layouts.set(checked.owner, (byKey = new Map()));
  const layout = byKey.get(key);
  if (layout !== undefined && sameLayout(layout.small, small)) {
    replicationCounts.refilled += 1;
    return refill(layout, small);
  }
  const made = replicate(small, layers);
  // (Groups whose renamed names met would leave the sources out of step: not kept then.)
  if (made.groupSources.length === made.timeline.parameterGradientStarts.size) byKey.set(key, { small, ...made });
  return made.timeline;
}

/** A replicated timeline, the small one it came from, and where each of its tensors and gradient groups came from in it. */
interface Layout {
  small: StepTimeline;
  timeline: StepTimeline;
  /** Per tensor of `timeline`, the index of the small timeline's tensor it copies. */
  sources: Int32Array;
  /** Per group of `timeline.parameterGradientStarts` (in its order), the small timeline's group it copies. */
  groupSources: string[];
}
/** Per model (by identity), the last layout of each kind and layer count. */
const layouts = new WeakMap<object, Map<string, Layout>>();

/** Whether two small timelines differ at most in their tensors' bytes and their ops' parameter counts. */
function sameLayout(a: StepTimeline, b: StepTimeline): boolean {
  if (a.phases.names.length !== b.phases.names.length || a.phases.names.some((name, i) => name !== b.phases.names[i])) return false;
  if (JSON.stringify(a.phases.stages) !== JSON.stringify(b.phases.stages)) return false;
  if (a.phases.optimizerStep !== b.phases.optimizerStep || a.phases.zeroGrad !== b.phases.zeroGrad) return false;
  if (a.tensors.length !== b.tensors.length || a.origins.some((o, i) => o !== b.origins[i])) return false;
  for (let i = 0; i < a.tensors.length; i++) {
    const x = a.tensors[i]!;
    const y = b.tensors[i]!;
    if (x.name !== y.name || x.category !== y.category || x.firstPhase !== y.firstPhase || x.lastPhase !== y.lastPhase) return false;
  }
  if (a.gradientStarts.size !== b.gradientStarts.size) return false;
  const groups = [...b.gradientStarts.keys()];
  if ([...a.gradientStarts].some(([group, phase], i) => groups[i] !== group || b.gradientStarts.get(group) !== phase)) return false;
  if (a.parameterGradientStarts.size !== b.parameterGradientStarts.size) return false;
  const parameterGroups = [...b.parameterGradientStarts.keys()];
  let i = 0;
  for (const [group, list] of a.parameterGradientStarts) {
    const other = b.parameterGradientStarts.get(group);
    if (parameterGroups[i++] !== group || other === undefined || other.length !== list.length || list.some((x, j) => x.phase !== other[j]!.phase)) return false;
  }
  return true;
}

/** `layout.timeline` with the bytes (and parameter counts) of `small`, laid out as `layout.small` (sameLayout): what replicate(small) makes. */
function refill(layout: Layout, small: StepTimeline): StepTimeline {
  const made = layout.timeline;
  const tensors: PlannedTensor[] = new Array(made.tensors.length);
  for (let i = 0; i < tensors.length; i++) {
    const m = made.tensors[i]!;
    const t = small.tensors[layout.sources[i]!]!;
    tensors[i] = { name: m.name, category: m.category, fixedBytes: t.fixedBytes, perSampleBytes: t.perSampleBytes, firstPhase: m.firstPhase, lastPhase: m.lastPhase };
  }
  const parameterGradientStarts = new Map<string, { phase: number; parameters: number }[]>();
  let g = 0;
  for (const [group, list] of made.parameterGradientStarts) {
    const from = small.parameterGradientStarts.get(layout.groupSources[g++]!)!;
    parameterGradientStarts.set(group, list.map((x, j) => ({ phase: x.phase, parameters: from[j]!.parameters })));
  }
  // The columns every plan on this timeline reads (src/plan/tensorColumns.ts): the bytes copied from
  // the small timeline's as the tensors were, the ranges the layout's (its names are strings: made
  // from plain ones, or the small timeline's, which sameLayout found equal).
  const madeColumns = tensorColumns(made, made.phases.names.length);
  if (madeColumns.firstMalformed < 0) recordCopiedColumns(tensors, tensorColumns(small, small.phases.names.length), layout.sources, madeColumns.firstPhase, madeColumns.lastPhase, made.phases.names.length);
  // Phases, gradient starts and origins are the layout's: values nobody edits (src/plan/timelineCache.ts).
  return { phases: made.phases, tensors, gradientStarts: made.gradientStarts, parameterGradientStarts, origins: made.origins };
}

/**
 * What the six-layer check's verdict holds for: a model (by identity) and a key naming what
 * decides whether its layers are alike — the tape's ops and where they free, not their sizes. The
 * check fails only where layers differ or the layer count matters (LoRA's residual gradient,
 * test/unit/layerReplication.test.ts), which no size changes; so advice's setups that differ only
 * in the sequence length or the tensor-parallel degree (GPT-3's check: 12 timelines, 7 kinds) check once.
 */
export interface CheckedTape {
  owner: object;
  key: string;
}
const verdicts = new WeakMap<object, Map<string, boolean>>();

/** Timelines made by replication, those refused (built in full), and six-layer checks run: what the tests read. */
export const replicationCounts = { replicated: 0, refused: 0, checked: 0, refilled: 0 };

/** A name split around its layer numbers (`layers.3.mlp.up` → ["layers.", 3, ".mlp.up"]), once per name. */
const splitNames = new NameTable<string, "", readonly (string | number)[]>((name) => name.split(/(?<=layers\.)(\d+)/).map((piece, i) => (i % 2 === 1 ? Number(piece) : piece)));

/**
 * A name with its layer numbers moved by `delta` (`layers.3.mlp.up`, 2 → `layers.5.mlp.up`), made
 * once per process: every timeline of a model, of every kind, names its layers alike.
 */
const RENAMED = new NameTable<string, number>((name, delta) => {
  const split = splitNames.get(name, "");
  if (split.length === 1) return name;
  let renamed = "";
  for (const piece of split) renamed += typeof piece === "number" ? piece + delta : piece;
  return renamed;
});

/**
 * A template layer's name under every shift from 0 to `shift` (`delta` 0: the name itself), made
 * once per name and layer count: replicate names each template tensor once per middle layer, and
 * a lookup per tensor and layer (two maps deep) was most of GPT-3's renaming.
 */
const RENAMED_SERIES = new NameTable<string, number, readonly string[]>((name, shift) => {
  const series = [name];
  for (let delta = 1; delta <= shift; delta++) series.push(RENAMED.get(name, delta));
  return series;
});

/** `small` (BUILT_LAYERS layers) with its template layer repeated to make `layers`. */
function replicate(small: StepTimeline, layers: number): Omit<Layout, "small"> {
  const k = BUILT_LAYERS;
  const shift = layers - k;
  const stages = small.phases.stages;
  const layerStage = stages[TEMPLATE_STAGE]!;
  const phases = new TrainingPhases([
    stages[0]!,
    ...Array.from({ length: layers }, (_, i): Stage => ({ ...layerStage, name: `layers.${i}` })),
    ...stages.slice(k + 1),
  ]);
  // Where each phase of the small step goes, for a layer shifted by δ: a layer's phase moves δ
  // layers on (forward) or back (backward); the head's, the loss's and the optimizer's move with the end.
  const perLayer = (layerStage.forwardSteps ?? [""]).length;
  const base = new Int32Array(small.phases.names.length);
  const sign = new Int8Array(small.phases.names.length);
  const mapStage = (stage: number) => (stage === 0 ? 0 : stage <= k ? stage : stage + shift);
  stages.forEach((stage, s) => {
    (stage.forwardSteps ?? [""]).forEach((_, i) => {
      const p = small.phases.forwardStep(s, i);
      base[p] = phases.forwardStep(mapStage(s), i);
      if (s >= 1 && s <= k) sign[p] = 1;
    });
    (stage.backwardSteps ?? [""]).forEach((_, i) => {
      const p = small.phases.backwardStep(s, i);
      base[p] = phases.backwardStep(mapStage(s), i);
      if (s >= 1 && s <= k) sign[p] = -1;
    });
  });
  base[small.phases.optimizerStep] = phases.optimizerStep;
  base[small.phases.zeroGrad] = phases.zeroGrad;
  const phaseAt = (p: number, delta: number) => base[p]! + sign[p]! * delta * perLayer;
  const rename = (name: string, delta: number) => (delta === 0 ? name : RENAMED.get(name, delta));
  /** How far a tensor of the small step moves: the first layers stay, the last ones move with the end. */
  const deltaOf = (origin: number) => (origin <= TEMPLATE_LAYER ? 0 : shift);

  const tensors: PlannedTensor[] = [];
  const origins: number[] = [];
  const sources: number[] = [];
  const firstPhases: number[] = [];
  const lastPhases: number[] = [];
  const emit = (t: PlannedTensor, origin: number, delta: number, source: number, name: string) => {
    sources.push(source);
    const firstPhase = phaseAt(t.firstPhase!, delta);
    const lastPhase = phaseAt(t.lastPhase!, delta);
    firstPhases.push(firstPhase);
    lastPhases.push(lastPhase);
    tensors.push({ name, category: t.category, fixedBytes: t.fixedBytes, perSampleBytes: t.perSampleBytes, firstPhase, lastPhase });
    origins.push(origin === 0 ? 0 : origin <= k ? origin + delta : origin + shift);
  };
  const n = small.tensors.length;
  for (let a = 0; a < n; ) {
    if (small.origins[a] !== TEMPLATE_STAGE) {
      const t = small.tensors[a]!;
      const delta = deltaOf(small.origins[a]!);
      emit(t, small.origins[a]!, delta, a, rename(t.name, delta));
      a += 1;
      continue;
    }
    // A run of the template layer's tensors: once per middle layer, in the order of the list's
    // section (ascending after the layer before it, as storages are made; descending after the
    // layer after it, as backward makes gradients).
    let b = a;
    while (b < n && small.origins[b] === TEMPLATE_STAGE) b += 1;
    const ascending = a === 0 || small.origins[a - 1]! < TEMPLATE_STAGE;
    const names: (readonly string[])[] = [];
    for (let x = a; x < b; x++) names.push(RENAMED_SERIES.get(small.tensors[x]!.name, shift));
    for (let j = 0; j <= shift; j++) {
      const delta = ascending ? j : shift - j;
      for (let x = a; x < b; x++) emit(small.tensors[x]!, TEMPLATE_STAGE, delta, x, names[x - a]![delta]!);
    }
    a = b;
  }

  /** A map by parameter group, each layer's groups once per layer it stands for, in forward order. */
  const byGroup = <V>(small: Map<string, V>, move: (value: V, delta: number) => V, sources?: string[]): Map<string, V> => {
    const out = new Map<string, V>();
    for (const [group, value] of small) {
      const layer = /^layers\.(\d+)/.exec(group);
      const index = layer === null ? -1 : Number(layer[1]);
      if (index !== TEMPLATE_LAYER) {
        const delta = index > TEMPLATE_LAYER ? shift : 0;
        out.set(rename(group, delta), move(value, delta));
        sources?.push(group);
      } else {
        for (let delta = 0; delta <= shift; delta++) {
          out.set(rename(group, delta), move(value, delta));
          sources?.push(group);
        }
      }
    }
    return out;
  };
  const groupSources: string[] = [];
  const copied = Int32Array.from(sources);
  // The columns every plan on this timeline reads (src/plan/tensorColumns.ts), made as the tensors
  // were: their names are strings (renamed, or the small timeline's, plain where this applies).
  recordCopiedColumns(tensors, tensorColumns(small, small.phases.names.length), copied, Int32Array.from(firstPhases), Int32Array.from(lastPhases), phases.names.length);
  return {
    timeline: {
      phases,
      tensors,
      gradientStarts: byGroup(small.gradientStarts, phaseAt),
      parameterGradientStarts: byGroup(small.parameterGradientStarts, (list, delta) => list.map((x) => ({ phase: phaseAt(x.phase, delta), parameters: x.parameters })), groupSources),
      origins: Int32Array.from(origins),
    },
    sources: copied,
    groupSources,
  };
}

function sameTimeline(a: StepTimeline, b: StepTimeline): boolean {
  if (a.phases.names.length !== b.phases.names.length || a.phases.names.some((name, i) => name !== b.phases.names[i])) return false;
  if (a.tensors.length !== b.tensors.length || a.origins.some((o, i) => o !== b.origins[i])) return false;
  for (let i = 0; i < a.tensors.length; i++) {
    const x = a.tensors[i]!;
    const y = b.tensors[i]!;
    if (x.name !== y.name || x.category !== y.category || x.fixedBytes !== y.fixedBytes || x.perSampleBytes !== y.perSampleBytes || x.firstPhase !== y.firstPhase || x.lastPhase !== y.lastPhase) return false;
  }
  if (a.gradientStarts.size !== b.gradientStarts.size) return false;
  for (const [group, phase] of a.gradientStarts) if (b.gradientStarts.get(group) !== phase) return false;
  if (a.parameterGradientStarts.size !== b.parameterGradientStarts.size) return false;
  for (const [group, list] of a.parameterGradientStarts) {
    const other = b.parameterGradientStarts.get(group);
    if (other === undefined || other.length !== list.length || list.some((x, i) => x.phase !== other[i]!.phase || x.parameters !== other[i]!.parameters)) return false;
  }
  return true;
}
