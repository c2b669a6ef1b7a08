// The phases of a training step in the order PyTorch runs them: the timeline convention of every plan.
import { NameTable } from "./nameTable.js";

/**
 * A model as the units a step runs one after another ("stages"): a transformer's `embeddings`,
 * `layers.0` … `layers.{L-1}`, `head`; a CNN's top-level layers (`conv1`, `layer1`, …, `fc`); a
 * raw `--params` workload's single `model`. The last stage is always `loss`. A stage may split its
 * forward or backward into sub-phases (`steps`) where memory changes inside it (a transformer
 * layer's backward: its MLP, then its attention), named `forward layers.3 mlp`.
 */
export interface Stage {
  name: string;
  /** Sub-phases of the stage's forward, in order (default: one phase). */
  forwardSteps?: string[];
  /** Sub-phases of the stage's backward, in the order backward runs them (default: one phase). */
  backwardSteps?: string[];
}

/** `forward layers.3 mlp.up`: a phase's name by direction, stage and sub-phase (`""`: none), shared by every timeline that has it. */
const phaseNames = (direction: "forward" | "backward") => new NameTable<string, string>((stage, step) => `${direction} ${stage}${step === "" ? "" : ` ${step}`}`);
const PHASE_NAMES = { forward: phaseNames("forward"), backward: phaseNames("backward") };

/** The first and last phase (inclusive) a tensor is live in: spread it into a PlannedTensor. */
export interface PhaseRange {
  firstPhase: number;
  lastPhase: number;
}

/**
 * The phases of one training step (`MemoryPlan.phases`), after `zero_grad(set_to_none=True)`
 * freed the previous step's gradients (PyTorch 2.x's default), with the weights and optimizer
 * states live throughout:
 *
 *   forward <stage 0> … forward <stage n-1 = loss>, backward loss, backward <stage n-2> …
 *   backward <stage 0>, optimizer.step, zero_grad
 *
 * Lifetimes by convention (each a `PhaseRange` to spread into a PlannedTensor):
 * - `saved(k)`: what autograd keeps for stage k's backward, from its forward to the end of its backward;
 * - `gradient(k)`: stage k's parameter gradients, from its backward to the optimizer step
 *   (zero_grad frees them);
 * - `forwardTransient(k)` / `backwardTransient(k)`: live only while stage k runs forward / backward;
 * - `optimizerTemporary()`: the optimizer step's temporaries;
 * - weights, optimizer states and buffers allocated once: no range (the whole step).
 */
export class TrainingPhases {
  /** The phase names, in order: what `MemoryPlan.phases` holds. */
  readonly names: string[] = [];
  readonly stages: readonly Stage[];
  private readonly forwardPhases: number[][] = [];
  private readonly backwardPhases: number[][] = [];
  /** The `optimizer.step` phase. */
  readonly optimizerStep: number;
  /** The `zero_grad` phase: the gradients are gone, weights and optimizer states remain. */
  readonly zeroGrad: number;

  /** `stages` in forward order; the loss is appended as the last stage unless the last one given is `loss`. */
  constructor(stages: readonly (Stage | string)[]) {
    const given = stages.map((s) => (typeof s === "string" ? { name: s } : s));
    const all = given.at(-1)?.name === "loss" ? given : [...given, { name: "loss" }];
    if (new Set(all.map((s) => s.name)).size !== all.length) throw new Error(`stage names must be distinct: ${all.map((s) => s.name).join(", ")}`);
    this.stages = all;
    const add = (direction: "forward" | "backward", stage: Stage, steps: string[] | undefined): number[] =>
      (steps ?? [""]).map((step) => this.names.push(PHASE_NAMES[direction].get(stage.name, step)) - 1);
    for (const stage of all) this.forwardPhases.push(add("forward", stage, stage.forwardSteps));
    for (let k = all.length - 1; k >= 0; k--) this.backwardPhases[k] = add("backward", all[k]!, all[k]!.backwardSteps);
    this.optimizerStep = this.names.push("optimizer.step") - 1;
    this.zeroGrad = this.names.push("zero_grad") - 1;
  }

  /** The index of a stage by name (a transformer's `layers.3`). */
  stage(name: string): number {
    const index = this.stages.findIndex((s) => s.name === name);
    if (index < 0) throw new Error(`no stage ${name}`);
    return index;
  }

  /** The loss stage's index (the last). */
  get lossStage(): number {
    return this.stages.length - 1;
  }

  /** The phase of the loss's forward (`forward loss`). */
  get loss(): number {
    return this.forward(this.lossStage);
  }

  /** The first phase of stage k's forward (or of its forward sub-phase `step`). */
  forward(k: number, step?: string): number {
    return this.phaseOf(this.forwardPhases, k, step, "forward");
  }

  /** The first phase of stage k's backward (or of its backward sub-phase `step`). */
  backward(k: number, step?: string): number {
    return this.phaseOf(this.backwardPhases, k, step, "backward");
  }

  /** The phase of stage k's forward sub-phase number `index` (in forward order). */
  forwardStep(k: number, index: number): number {
    return this.stepAt(this.forwardPhases, k, index);
  }

  /** The phase of stage k's backward sub-phase number `index` (in the order backward runs them). */
  backwardStep(k: number, index: number): number {
    return this.stepAt(this.backwardPhases, k, index);
  }

  /** The last phase of stage k's forward. */
  forwardEnd(k: number): number {
    return this.phasesOf(this.forwardPhases, k).at(-1)!;
  }

  /** The last phase of stage k's backward. */
  backwardEnd(k: number): number {
    return this.phasesOf(this.backwardPhases, k).at(-1)!;
  }

  saved(k: number): PhaseRange {
    return { firstPhase: this.forward(k), lastPhase: this.backwardEnd(k) };
  }

  gradient(k: number): PhaseRange {
    return { firstPhase: this.backward(k), lastPhase: this.optimizerStep };
  }

  forwardTransient(k: number): PhaseRange {
    return { firstPhase: this.forward(k), lastPhase: this.forwardEnd(k) };
  }

  backwardTransient(k: number): PhaseRange {
    return { firstPhase: this.backward(k), lastPhase: this.backwardEnd(k) };
  }

  optimizerTemporary(): PhaseRange {
    return { firstPhase: this.optimizerStep, lastPhase: this.optimizerStep };
  }

  private phasesOf(table: number[][], k: number): number[] {
    const phases = table[k];
    if (phases === undefined) throw new Error(`no stage ${k} (${this.stages.length} stages)`);
    return phases;
  }

  private stepAt(table: number[][], k: number, index: number): number {
    const phase = this.phasesOf(table, k)[index];
    if (phase === undefined) throw new Error(`stage ${this.stages[k]!.name} has no sub-phase ${index}`);
    return phase;
  }

  private phaseOf(table: number[][], k: number, step: string | undefined, direction: string): number {
    const phases = this.phasesOf(table, k);
    if (step === undefined) return phases[0]!;
    const steps = (direction === "forward" ? this.stages[k]!.forwardSteps : this.stages[k]!.backwardSteps) ?? [];
    const index = steps.indexOf(step);
    if (index < 0) throw new Error(`stage ${this.stages[k]!.name} has no ${direction} step ${step}`);
    return phases[index]!;
  }
}

/** The stages of a transformer with `layers` layers: `embeddings`, `layers.0` … `layers.{L-1}`, `head` (the loss follows). */
export function transformerStages(layers: number): string[] {
  return ["embeddings", ...Array.from({ length: layers }, (_, i) => `layers.${i}`), "head"];
}

/** The stage index of a transformer's layer i among `transformerStages`. */
export function transformerLayerStage(i: number): number {
  return i + 1;
}
