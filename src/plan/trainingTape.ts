// What a training step allocates, op by op: forward in order, then backward in reverse, freeing as autograd does.
import type { Category, PlannedTensor } from "./memoryPlan.js";
import { TrainingPhases, type Stage } from "./stepPhases.js";

/** Bytes of a tensor as `fixed + perSample × batch`. */
export interface Size {
  fixedBytes: number;
  perSampleBytes: number;
}

const NONE: readonly never[] = Object.freeze([]);
const NONE_TEMPORARY = NONE as unknown as { name: string; size: Size }[];

/** A storage: what the allocator hands out once (views and in-place results share it). */
interface Storage extends Size {
  name: string;
  /** Unset: `activations` when an op saves it for backward (or it is a batch input), else `workspace`. */
  category?: Category;
  /** Kept until the loss is computed (a model's returned outputs, such as Hugging Face's KV cache). */
  heldToLoss: boolean;
  /** The batch's inputs: allocated before the step and alive through it. */
  input: boolean;
}

/** A logical tensor: what autograd computes a gradient for. */
interface Value {
  storage: number;
  /** Its own bytes (a view's are fewer than its storage's): the size of its gradient. */
  size: Size;
  requiresGrad: boolean;
  /** The op that produced it (undefined for the batch's inputs). */
  producer?: number;
}

/** One op of the forward pass as autograd records it. */
export interface TapeOp {
  name: string;
  /** The stage it belongs to (an index into the stages the tape was made with). */
  stage: number;
  inputs: number[];
  outputs: number[];
  /** Values its backward needs (inputs, outputs or extra outputs such as masks): their storages live until its backward. */
  saves: number[];
  /** Parameter groups whose weights it uses: their gradients exist from its backward on. */
  groups: string[];
  /** Its backward hands the output's gradient to every input as is (addition, views): no new gradient. */
  passGradient: boolean;
  /** Extra allocations that live only during its backward. */
  backwardTemporaries: { name: string; size: Size }[];
  /** Extra allocations that live only during its forward (an op's intermediate the model does not return). */
  forwardTemporaries: { name: string; size: Size }[];
  /** Values that stay allocated at least through this op's forward though it does not read them (a Python local of the function running it). */
  holds: number[];
  /** Elements of the parameters it uses, when known: their gradients are made by its backward (`gradientStartsByOp`). */
  parameters?: number;
}

export interface OpOptions {
  saves?: number[];
  groups?: string[];
  passGradient?: boolean;
  backwardTemporaries?: { name: string; size: Size }[];
  forwardTemporaries?: { name: string; size: Size }[];
  holds?: number[];
  /** Elements of the group's parameters it uses (its parameter tensors, in the group's order). */
  parameters?: number;
  /** Whether it has trainable parameters (default: when it names parameter groups); frozen ops' outputs need a gradient only if an input does. */
  trains?: boolean;
}

/**
 * The forward pass of a training step as a list of ops over values, from which `timeline()`
 * derives every allocation's live range over the phases of the step: outputs live from their op
 * to their last use, or, when saved, to the end of the saving op's backward; the gradient of a
 * value is allocated by the backward of its last consumer and freed after its producer's
 * backward; a value used twice gets its second gradient contribution as a temporary that is
 * added in place (autograd's InputBuffer::accumulate).
 */
export class TrainingTape {
  private readonly storages: Storage[] = [];
  /** Each storage's stage: its op's, or for an input the stage of the op recorded before it (src/plan/layerReplication.ts). */
  private readonly storageStages: number[] = [];
  private readonly values: Value[] = [];
  readonly ops: TapeOp[] = [];

  constructor(readonly stages: readonly string[]) {}

  /** A batch input (token ids, images, labels): allocated before the step, alive to its end. */
  input(name: string, size: Size, category: Category = "activations"): number {
    this.storages.push({ name, category, ...size, heldToLoss: false, input: true });
    this.storageStages.push(this.ops.at(-1)?.stage ?? 0);
    this.values.push({ storage: this.storages.length - 1, size, requiresGrad: false });
    return this.values.length - 1;
  }

  /**
   * A batch of floating-point inputs (images, pixels) of `elements` per sample, as the model
   * consumes them: in the run's dtype (`e` bytes), or under autocast (`--precision amp`) the
   * loader's fp32 tensor, alive all step, and the 16-bit copy the first layer casts and saves
   * (`copyName`): 6 bytes an element, not 2. Measured against CPU autocast steps
   * (docs/memory-model.md, "amp, measured"): without the fp32 inputs a CNN's largest batch came
   * out 0.6-1.4% too large.
   */
  floatInput(name: string, copyName: string, elements: number, e: number, autocast: boolean): number {
    const perSample = (bytes: number): Size => ({ fixedBytes: 0, perSampleBytes: bytes });
    if (!autocast) return this.input(name, perSample(elements * e));
    const loaded = this.input(name, perSample(elements * 4));
    return this.op(0, "autocast", [loaded], [{ name: copyName, size: perSample(elements * e) }])[0]!;
  }

  /**
   * An op producing new tensors: `outputs` are their names and sizes (`requiresGrad` false for
   * masks and indices; `heldToLoss` for outputs the model returns, alive until the loss is done).
   */
  op(
    stage: number,
    name: string,
    inputs: number[],
    outputs: { name: string; size: Size; category?: Category; requiresGrad?: boolean; heldToLoss?: boolean }[],
    options: OpOptions = {},
  ): number[] {
    const index = this.ops.length;
    // Autograd's rule: an output needs a gradient when an input does or the op has trainable parameters.
    // Plain loops (no closure per op): a deep model's tape is built cold, once per process.
    let differentiable = options.trains ?? (options.groups !== undefined && options.groups.length > 0);
    for (let j = 0; j < inputs.length && !differentiable; j++) differentiable = this.values[inputs[j]!]!.requiresGrad;
    const ids: number[] = [];
    for (let j = 0; j < outputs.length; j++) {
      const o = outputs[j]!;
      const storage: Storage = { name: o.name, fixedBytes: o.size.fixedBytes, perSampleBytes: o.size.perSampleBytes, heldToLoss: o.heldToLoss ?? false, input: false };
      if (o.category !== undefined) storage.category = o.category;
      this.storages.push(storage);
      this.storageStages.push(stage);
      this.values.push({ storage: this.storages.length - 1, size: o.size, requiresGrad: o.requiresGrad ?? differentiable, producer: index });
      ids.push(this.values.length - 1);
    }
    this.push(stage, name, inputs, ids, options);
    return ids;
  }

  /** An op that writes into its input's storage (in-place ReLU, `+=`): a new value, no allocation. */
  inPlace(stage: number, name: string, target: number, inputs: number[], options: OpOptions = {}): number {
    const index = this.ops.length;
    const t = this.values[target]!;
    let differentiable = options.trains ?? (options.groups !== undefined && options.groups.length > 0);
    if (!differentiable) differentiable = t.requiresGrad;
    for (let j = 0; j < inputs.length && !differentiable; j++) differentiable = this.values[inputs[j]!]!.requiresGrad;
    this.values.push({ storage: t.storage, size: t.size, requiresGrad: differentiable, producer: index });
    const id = this.values.length - 1;
    this.push(stage, name, [target, ...inputs.filter((i) => i !== target)], [id], options);
    return id;
  }

  /**
   * Views of a value (a split, a slice, the first token): no allocation; their backward makes one
   * gradient of the whole value from theirs (`split_backward`'s cat, `slice_backward`'s zeros).
   */
  views(stage: number, name: string, source: number, sizes: Size[], options: OpOptions = {}): number[] {
    const index = this.ops.length;
    const storage = this.values[source]!.storage;
    const ids = sizes.map((size) => {
      this.values.push({ storage, size, requiresGrad: this.values[source]!.requiresGrad, producer: index });
      return this.values.length - 1;
    });
    this.push(stage, name, [source], ids, options);
    return ids;
  }

  /** Keeps values allocated through the last op recorded so far (a Python local held until its function returns). */
  hold(...values: number[]): void {
    this.ops.at(-1)!.holds.push(...values);
  }

  /** Marks a value's storage as kept by the model's outputs until the loss is computed. */
  holdToLoss(value: number): void {
    this.storages[this.values[value]!.storage]!.heldToLoss = true;
  }

  /** Whether autograd computes a gradient for a value (an input that does needs it saved by some ops). */
  requiresGrad(value: number): boolean {
    return this.values[value]!.requiresGrad;
  }

  /** The size of a value (of its gradient). */
  sizeOf(value: number): Size {
    return this.values[value]!.size;
  }

  private push(stage: number, name: string, inputs: number[], outputs: number[], options: OpOptions): void {
    if (stage < 0 || stage >= this.stages.length + 1) throw new Error(`op ${name}: no stage ${stage}`);
    // Plans of deep models have tens of thousands of ops: the lists nothing appends to are shared when empty.
    const op: TapeOp = {
      name,
      stage,
      inputs,
      outputs,
      saves: options.saves ?? [],
      groups: options.groups ?? (NONE as unknown as string[]),
      passGradient: options.passGradient ?? false,
      backwardTemporaries: options.backwardTemporaries ?? NONE_TEMPORARY,
      forwardTemporaries: options.forwardTemporaries ?? NONE_TEMPORARY,
      holds: options.holds ?? [],
    };
    if (options.parameters !== undefined) op.parameters = options.parameters;
    this.ops.push(op);
  }

  /** The stage index of the loss (after the model's stages). */
  get lossStage(): number {
    return this.stages.length;
  }

  /**
   * The phases (one per op and direction, in TrainingPhases' order) and the tensors of the
   * forward and backward passes with their live ranges. `recomputed(op)`: activation
   * checkpointing — the op runs in forward without keeping anything for backward, and again when
   * backward reaches its stage, from where its outputs live as saved. Model states are not on the tape.
   */
  timeline(options: { recomputed?: (op: TapeOp) => boolean } = {}): {
    phases: TrainingPhases;
    tensors: PlannedTensor[];
    gradientStarts: Map<string, number>;
    parameterGradientStarts: Map<string, { phase: number; parameters: number }[]>;
    origins: Int32Array;
  } {
    const stageOps: { op: TapeOp; i: number }[][] = [...this.stages, "loss"].map(() => []);
    this.ops.forEach((op, i) => stageOps[op.stage]!.push({ op, i }));
    const stages: Stage[] = [...this.stages, "loss"].map((name, k) => {
      const names = stageOps[k]!.map((x) => x.op.name);
      return names.length === 0 ? { name } : { name, forwardSteps: names, backwardSteps: [...names].reverse() };
    });
    const phases = new TrainingPhases(stages);
    const forwardPhase: number[] = [];
    const backwardPhase: number[] = [];
    stageOps.forEach((list, k) =>
      list.forEach(({ i }, position) => {
        forwardPhase[i] = phases.forwardStep(k, position);
        backwardPhase[i] = phases.backwardStep(k, list.length - 1 - position);
      }),
    );
    const lastPhase = phases.names.length - 1;
    const lossEnd = phases.forwardEnd(phases.lossStage);
    const recomputed = options.recomputed ?? (() => false);

    // Each storage's forward range: from its producer to its last forward use, extended to the end
    // of the last backward that keeps it (saved by an op, or kept by a checkpoint as a recomputed
    // stage's input). A recomputed output also lives again from its stage's recomputation to the
    // end of the backward that saved it.
    const n = this.storages.length;
    const first = new Int32Array(n).fill(2 ** 31 - 1);
    const last = new Int32Array(n).fill(-1);
    const recomputedAt = new Int32Array(n).fill(2 ** 31 - 1);
    const recomputedUntil = new Int32Array(n).fill(-1);
    const storageOf = (v: number) => this.values[v]!.storage;
    const producedIn = (v: number, stage: number) => {
      const producer = this.values[v]!.producer;
      return producer !== undefined && this.ops[producer]!.stage === stage && recomputed(this.ops[producer]!);
    };
    const values = this.values;
    // Autograd records no node for an op none of whose outputs needs a gradient (its inputs need
    // none and it trains nothing): it saves nothing (a LoRA model's first layers, frozen norms' inputs).
    const recorded = (op: TapeOp): boolean => {
      for (let j = 0; j < op.outputs.length; j++) if (values[op.outputs[j]!]!.requiresGrad) return true;
      return false;
    };
    // Indexed loops here and below, and no closure made per op: a for-of makes an iterator result
    // per element until V8 optimizes the function, and a fresh process builds a deep model's tape cold.
    const touch = (list: readonly number[], at: number): void => {
      for (let j = 0; j < list.length; j++) {
        const k = values[list[j]!]!.storage;
        if (at < first[k]!) first[k] = at;
        if (at > last[k]!) last[k] = at;
      }
    };
    const ops = this.ops;
    for (let i = 0; i < ops.length; i++) {
      const op = ops[i]!;
      const again = recomputed(op);
      const at = forwardPhase[i]!;
      touch(op.outputs, at);
      touch(op.inputs, at);
      touch(op.holds, at);
      if (again) {
        const again = phases.backward(op.stage);
        for (let j = 0; j < op.outputs.length; j++) {
          const k = storageOf(op.outputs[j]!);
          recomputedAt[k] = Math.min(recomputedAt[k]!, again);
        }
        // What the recomputation reads from outside its stage, the checkpoint keeps from the forward pass.
        for (let j = 0; j < op.inputs.length; j++) {
          const v = op.inputs[j]!;
          if (!producedIn(v, op.stage)) last[storageOf(v)] = Math.max(last[storageOf(v)]!, again);
        }
      }
      if (!recorded(op)) continue;
      for (let j = 0; j < op.saves.length; j++) {
        const v = op.saves[j]!;
        const k = storageOf(v);
        if (again && producedIn(v, op.stage)) recomputedUntil[k] = Math.max(recomputedUntil[k]!, backwardPhase[i]!);
        else last[k] = Math.max(last[k]!, backwardPhase[i]!);
      }
    }

    const saved = new Uint8Array(n);
    for (let i = 0; i < this.ops.length; i++) {
      const op = this.ops[i]!;
      if (recorded(op)) for (let j = 0; j < op.saves.length; j++) saved[storageOf(op.saves[j]!)] = 1;
    }
    // Only the tensors of some bytes are kept (an empty one is no allocation), each with the stage it
    // comes from (its storage's, or the op's whose temporary or gradient it is): left out as they
    // come rather than filtered after, which made two more lists and a closure call per tensor.
    const tensors: PlannedTensor[] = [];
    const origins: number[] = [];
    const keep = (tensor: PlannedTensor, origin: number): void => {
      if (!(tensor.fixedBytes > 0 || tensor.perSampleBytes > 0)) return;
      tensors.push(tensor);
      origins.push(origin);
    };
    const push = (s: Storage, origin: number, firstPhase: number, lastPhase: number, name: string, category: Category): void =>
      keep({ name, category, fixedBytes: s.fixedBytes, perSampleBytes: s.perSampleBytes, firstPhase, lastPhase }, origin);
    const storages = this.storages;
    for (let k = 0; k < storages.length; k++) {
      const s = storages[k]!;
      const origin = this.storageStages[k]!;
      const kept = s.category ?? (saved[k] === 1 || s.input ? "activations" : "workspace");
      if (s.input) {
        push(s, origin, 0, lastPhase, s.name, kept);
        continue;
      }
      if (last[k]! < 0) continue;
      const end = s.heldToLoss ? Math.max(last[k]!, lossEnd) : last[k]!;
      if (recomputedUntil[k]! < 0) {
        push(s, origin, first[k]!, end, s.name, kept);
        continue;
      }
      // Recomputed: in forward a transient (unless something outside the recomputation keeps it), saved again in backward.
      push(s, origin, first[k]!, end, s.name, end > lossEnd ? kept : s.category ?? "workspace");
      push(s, origin, recomputedAt[k]!, recomputedUntil[k]!, `recompute.${s.name}`, kept);
    }
    for (let i = 0; i < ops.length; i++) {
      const op = ops[i]!;
      for (let j = 0; j < op.forwardTemporaries.length; j++) {
        const t = op.forwardTemporaries[j]!;
        keep({ name: t.name, category: "workspace", fixedBytes: t.size.fixedBytes, perSampleBytes: t.size.perSampleBytes, firstPhase: forwardPhase[i]!, lastPhase: forwardPhase[i]! }, op.stage);
      }
      for (let j = 0; j < op.backwardTemporaries.length; j++) {
        const t = op.backwardTemporaries[j]!;
        keep({ name: t.name, category: "workspace", fixedBytes: t.size.fixedBytes, perSampleBytes: t.size.perSampleBytes, firstPhase: backwardPhase[i]!, lastPhase: backwardPhase[i]! }, op.stage);
      }
    }
    const gradients = this.gradients(backwardPhase);
    for (let j = 0; j < gradients.length; j++) keep(gradients[j]!.tensor, gradients[j]!.stage);

    const gradientStarts = new Map<string, number>();
    const parameterGradientStarts = new Map<string, { phase: number; parameters: number }[]>();
    for (let i = 0; i < ops.length; i++) {
      const op = ops[i]!;
      for (let j = 0; j < op.groups.length; j++) {
        const g = op.groups[j]!;
        gradientStarts.set(g, Math.min(gradientStarts.get(g) ?? Number.POSITIVE_INFINITY, backwardPhase[i]!));
        if (op.parameters === undefined) continue;
        let list = parameterGradientStarts.get(g);
        if (list === undefined) parameterGradientStarts.set(g, (list = []));
        list.push({ phase: backwardPhase[i]!, parameters: op.parameters });
      }
    }
    return { phases, tensors, gradientStarts, parameterGradientStarts, origins: Int32Array.from(origins) };
  }

  /**
   * Activation gradients. Backward runs the ops in reverse; the first consumer of a value to run
   * backward allocates its gradient (or, passing its output's gradient on, shares that one), later
   * consumers add theirs in place through a temporary of the value's size, and the value's
   * producer frees it after its own backward.
   */
  private gradients(backwardPhase: number[]): { tensor: PlannedTensor; stage: number }[] {
    interface Gradient {
      name: string;
      size: Size;
      first: number;
      last: number;
      /** The stage of the op whose backward made it. */
      stage: number;
    }
    // Indexed by value; plain loops: a deep model's tape has tens of thousands of ops.
    const gradientOf: (Gradient | undefined)[] = new Array(this.values.length);
    const all: Gradient[] = [];
    const temporaries: { tensor: PlannedTensor; stage: number }[] = [];
    for (let i = this.ops.length - 1; i >= 0; i--) {
      const op = this.ops[i]!;
      const phase = backwardPhase[i]!;
      // The gradient of this op's output(s) is consumed here.
      let incoming: Gradient | undefined;
      for (let j = 0; j < op.outputs.length; j++) {
        const g = gradientOf[op.outputs[j]!];
        if (g === undefined) continue;
        if (phase > g.last) g.last = phase;
        incoming ??= g;
      }
      for (let j = 0; j < op.inputs.length; j++) {
        const v = op.inputs[j]!;
        const value = this.values[v]!;
        if (!value.requiresGrad || value.producer === undefined) continue;
        const existing = gradientOf[v];
        if (op.passGradient && incoming !== undefined) {
          // Shared with the output's gradient; if the input has one already, added into it in place.
          if (existing === undefined) gradientOf[v] = incoming;
          continue;
        }
        const name = this.storages[value.storage]!.name;
        if (existing === undefined) {
          const g: Gradient = { name: `${name}.grad`, size: value.size, first: phase, last: phase, stage: op.stage };
          gradientOf[v] = g;
          all.push(g);
        } else {
          temporaries.push({
            tensor: { name: `${name}.grad_contribution`, category: "workspace", fixedBytes: value.size.fixedBytes, perSampleBytes: value.size.perSampleBytes, firstPhase: phase, lastPhase: phase },
            stage: op.stage,
          });
        }
      }
    }
    // A gradient lives until the backward of the value's producer.
    for (let v = 0; v < gradientOf.length; v++) {
      const g = gradientOf[v];
      const producer = this.values[v]!.producer;
      if (g !== undefined && producer !== undefined && backwardPhase[producer]! > g.last) g.last = backwardPhase[producer]!;
    }
    const tensors = all.map((g): { tensor: PlannedTensor; stage: number } => ({ tensor: { name: g.name, category: "workspace", fixedBytes: g.size.fixedBytes, perSampleBytes: g.size.perSampleBytes, firstPhase: g.first, lastPhase: g.last }, stage: g.stage }));
    for (let j = 0; j < temporaries.length; j++) tensors.push(temporaries[j]!);
    return tensors;
  }
}
