// Convolutional networks as layer lists, and a trace that follows shapes and what autograd keeps.

/** One layer of a CNN, in the vocabulary of torch.nn (documented in docs/memory-model.md, `--spec`). */
export type CnnLayer =
  | { type: "conv"; name?: string; out: number; kernel: number; stride?: number; padding?: number; dilation?: number; groups?: number; bias?: boolean }
  | { type: "batchnorm"; name?: string }
  | { type: "relu"; name?: string; inplace?: boolean }
  | { type: "maxpool"; name?: string; kernel: number; stride?: number; padding?: number }
  | { type: "avgpool"; name?: string; kernel: number; stride?: number; padding?: number }
  | { type: "adaptiveavgpool"; name?: string; size: number }
  | { type: "flatten"; name?: string }
  | { type: "linear"; name?: string; out: number; bias?: boolean }
  | { type: "dropout"; name?: string; p: number }
  /** `relu(body(x) + shortcut(x))`, the sum computed in place as torchvision's ResNet blocks do. */
  | { type: "residual"; name?: string; body: CnnLayer[]; shortcut?: CnnLayer[]; relu?: boolean };

export const CNN_LAYER_TYPES = [
  "conv",
  "batchnorm",
  "relu",
  "maxpool",
  "avgpool",
  "adaptiveavgpool",
  "flatten",
  "linear",
  "dropout",
  "residual",
] as const;

/** The fields each layer type takes besides `type` and `name` (a spec file and the library check them alike). */
export const CNN_LAYER_FIELDS: Readonly<Record<CnnLayer["type"], readonly string[]>> = {
  conv: ["out", "kernel", "stride", "padding", "dilation", "groups", "bias"],
  batchnorm: [],
  relu: ["inplace"],
  maxpool: ["kernel", "stride", "padding"],
  avgpool: ["kernel", "stride", "padding"],
  adaptiveavgpool: ["size"],
  flatten: [],
  linear: ["out", "bias"],
  dropout: ["p"],
  residual: ["body", "shortcut", "relu"],
};

export interface CnnNetwork {
  /** Channels of the input image (3 for RGB). */
  channels: number;
  /** The image side the network is defined at (224 for the ImageNet models): the default `--image`. */
  imageSize: number;
  /** The classifier's outputs (the loss's width); 0 when the last layer is not a classifier. */
  classes: number;
  layers: CnnLayer[];
}

/**
 * What a saved storage holds, which fixes its element size: activations in the run's dtype,
 * int64 pooling indices, bool dropout masks, or fp32 whatever the run's dtype (the loss: autocast
 * runs log_softmax in fp32).
 */
export type SavedKind = "activation" | "index" | "mask" | "float32";

/** A storage autograd keeps for backward; `elements` per sample. */
export interface SavedStorage {
  /** The first op that saved it and what it is to that op: `layer1.0.conv1.input`, `maxpool.indices`. */
  name: string;
  elements: number;
  kind: SavedKind;
  /** The top-level layer (checkpoint segment) that saved it. */
  segment: number;
  /** Identifies the storage within the trace. */
  storage: number;
}

/**
 * One op of the forward pass as autograd records it (what the training step's timeline is made
 * of): the values it reads, the value it makes (a new storage, or in place in its input's), what
 * it saves for backward. Values are indices into `CnnTrace.values`.
 */
export interface CnnOp {
  /** The layer's name (`layer1.0.conv1`), or `<block>.add` for a residual block's sum. */
  name: string;
  type: CnnLayer["type"] | "add";
  /** The top-level layer it belongs to (the stage). */
  segment: number;
  inputs: number[];
  output: number;
  /** Whether it writes into its first input's storage (in-place ReLU, the residual `+=`). */
  inPlace: boolean;
  /** Values its backward needs. */
  saves: number[];
  /** A second output kept for backward: max pooling's int64 indices, dropout's bool mask (elements per sample). */
  extra?: { name: string; elements: number; kind: SavedKind };
  /** Its parameters (convolution, linear, batch norm): their gradients come from its backward. */
  parameters: number;
  /** Batch norm's per-channel fp32 mean and inverse std it saves (bytes, independent of the batch). */
  fixedSavedBytes: number;
}

export interface CnnTrace {
  parameterCount: number;
  /** Parameters per top-level layer (the parameter groups of the plan). */
  parameterGroups: { name: string; count: number; tensors: number[] }[];
  /** Storages saved for backward, each counted once (autograd saves views and in-place results of one storage once). */
  saved: SavedStorage[];
  /** Batch-norm's saved mean and inverse std: fp32, per channel, independent of the batch. */
  fixedSavedBytes: { name: string; bytes: number }[];
  /** Each top-level layer's input (elements per sample, storage id): what full checkpointing keeps. */
  segmentInputs: { name: string; elements: number; storage: number }[];
  /** Largest per-sample elements alive at once in a forward pass without autograd (inference). */
  inferencePeakElements: number;
  /** Per-sample shape of the output. */
  outputShape: number[];
  /** The forward pass op by op; `values[i]`: the storage and elements per sample of value i (value 0: the image). */
  ops: CnnOp[];
  values: { storage: number; elements: number }[];
  /** Elements of the largest weight tensor (a single-tensor optimizer's temporaries are sized by it). */
  largestTensorElements: number;
}

interface Storage {
  id: number;
  elements: number;
}

interface Value {
  shape: number[];
  storage: Storage;
  /** Its index in the trace's values. */
  id: number;
}

/** Whether one of the first `count` storages of `held` is storage `id`. */
function heldBefore(held: readonly Storage[], count: number, id: number): boolean {
  for (let i = 0; i < count; i++) if (held[i]!.id === id) return true;
  return false;
}

function product(shape: readonly number[]): number {
  let elements = 1;
  for (let i = 0; i < shape.length; i++) elements *= shape[i]!;
  return elements;
}

/** Raised for shapes a layer cannot take; the caller turns it into a one-line input error. */
export class CnnShapeError extends Error {
  constructor(
    readonly layer: string,
    message: string,
  ) {
    super(message);
  }
}

function outputSide(side: number, kernel: number, stride: number, padding: number, dilation: number): number {
  return Math.floor((side + 2 * padding - dilation * (kernel - 1) - 1) / stride) + 1;
}

/**
 * Runs the network symbolically on one `channels × image × image` sample and records what
 * PyTorch's autograd keeps for backward (derivatives.yaml): convolutions, linears, norms and
 * poolings save their input, in-place ReLU its output, max pooling its int64 indices, dropout
 * its mask, batch norm its per-channel mean and inverse std; flatten is a view and the residual
 * sum is in place. Saved storages are deduplicated as autograd holds them: once per storage.
 */
export function traceCnn(network: CnnNetwork, imageSize: number): CnnTrace {
  let nextId = 0;
  const newStorage = (elements: number): Storage => ({ id: nextId++, elements });
  const saved = new Map<number, SavedStorage>();
  const fixedSavedBytes: CnnTrace["fixedSavedBytes"] = [];
  const parameterGroups: CnnTrace["parameterGroups"] = [];
  const segmentInputs: CnnTrace["segmentInputs"] = [];
  let segment = 0;
  let parameters = 0;
  let inferencePeak = 0;
  let largestTensor = 0;
  /** Elements of each parameter tensor (weight, bias) in creation order, for the current top-level layer. */
  let tensors: number[] = [];
  const ops: CnnOp[] = [];
  const values: CnnTrace["values"] = [];
  const value = (shape: number[], storage: Storage): Value => {
    values.push({ storage: storage.id, elements: product(shape) });
    return { shape, storage, id: values.length - 1 };
  };
  // Each op made whole, in one shape (no spread of options into defaults): a deep CNN's trace runs
  // once per process, cold, and the spreads and per-layer closures were much of its time and garbage.
  const record = (name: string, type: CnnOp["type"], input: number, output: number, saves: number[], parameters = 0, fixedSaved = 0, inPlace = false, extra?: CnnOp["extra"]): void => {
    const op: CnnOp = { name, type, segment, inputs: [input], output, inPlace, saves, parameters, fixedSavedBytes: fixedSaved };
    if (extra !== undefined) op.extra = extra;
    ops.push(op);
  };

  const save = (storage: Storage, name: string, kind: SavedKind = "activation"): void => {
    if (!saved.has(storage.id)) saved.set(storage.id, { name, elements: storage.elements, kind, segment, storage: storage.id });
  };
  const saveExtra = (name: string, elements: number, kind: SavedKind): void => {
    const id = nextId++;
    saved.set(id, { name, elements, kind, segment, storage: id });
  };
  // Inference: the storages alive at an op are the ones held by enclosing residual blocks, the
  // op's input and its output, each counted once. Plain loops over the few there are: a map and
  // spread lists per op were a large part of a deep CNN's garbage, in a fresh process.
  const observe = (held: readonly Storage[], a: Storage, b?: Storage): void => {
    let total = 0;
    for (let i = 0; i < held.length; i++) if (!heldBefore(held, i, held[i]!.id)) total += held[i]!.elements;
    if (!heldBefore(held, held.length, a.id)) total += a.elements;
    if (b !== undefined && b.id !== a.id && !heldBefore(held, held.length, b.id)) total += b.elements;
    inferencePeak = Math.max(inferencePeak, total);
  };

  const spatial = (x: Value, layer: string): [number, number, number] => {
    if (x.shape.length !== 3) throw new CnnShapeError(layer, `needs a channels × height × width input, got ${x.shape.length === 1 ? "a flat vector" : x.shape.join("×")}`);
    return x.shape as [number, number, number];
  };

  const run = (layers: CnnLayer[], input: Value, prefix: string, held: Storage[]): Value => {
    let x = input;
    for (let index = 0; index < layers.length; index++) {
      const layer = layers[index]!;
      x = apply(layer, x, layer.name ?? `${prefix}${index}`, held);
    }
    return x;
  };

  /** A new value of `shape` made from `x`, in a storage of its own. */
  const fresh = (shape: number[], x: Value, held: readonly Storage[]): Value => {
    const out = value(shape, newStorage(product(shape)));
    observe(held, x.storage, out.storage);
    return out;
  };

  const apply = (layer: CnnLayer, x: Value, name: string, held: Storage[]): Value => {
    switch (layer.type) {
      case "conv": {
        const [c, hIn, wIn] = spatial(x, name);
        const stride = layer.stride ?? 1;
        const padding = layer.padding ?? 0;
        const dilation = layer.dilation ?? 1;
        const groups = layer.groups ?? 1;
        if (c % groups !== 0 || layer.out % groups !== 0) {
          throw new CnnShapeError(name, `groups ${groups} must divide its ${c} input and ${layer.out} output channels`);
        }
        const h = outputSide(hIn, layer.kernel, stride, padding, dilation);
        const w = outputSide(wIn, layer.kernel, stride, padding, dilation);
        if (h < 1 || w < 1) throw new CnnShapeError(name, `its ${layer.kernel}×${layer.kernel} kernel does not fit a ${hIn}×${wIn} input`);
        const weights = layer.out * (c / groups) * layer.kernel * layer.kernel;
        const count = weights + (layer.bias === false ? 0 : layer.out);
        tensors.push(weights);
        if (layer.bias !== false) tensors.push(layer.out);
        parameters += count;
        largestTensor = Math.max(largestTensor, weights);
        save(x.storage, `${name}.input`);
        const out = fresh([layer.out, h, w], x, held);
        record(name, "conv", x.id, out.id, [x.id], count);
        return out;
      }
      case "batchnorm": {
        const [c] = spatial(x, name);
        parameters += 2 * c; // weight and bias; running mean/var are buffers
        tensors.push(c, c);
        save(x.storage, `${name}.input`);
        fixedSavedBytes.push({ name: `${name}.saved_mean_invstd`, bytes: 2 * c * 4 });
        const out = fresh(x.shape, x, held);
        record(name, "batchnorm", x.id, out.id, [x.id], 2 * c, 2 * c * 4);
        return out;
      }
      case "relu": {
        if (layer.inplace) {
          save(x.storage, `${name}.output`);
          observe(held, x.storage);
          const out = value(x.shape, x.storage);
          record(name, "relu", x.id, out.id, [out.id], 0, 0, true);
          return out;
        }
        const out = fresh(x.shape, x, held);
        save(out.storage, `${name}.output`);
        record(name, "relu", x.id, out.id, [out.id]);
        return out;
      }
      case "maxpool":
      case "avgpool": {
        const [c, hIn, wIn] = spatial(x, name);
        const stride = layer.stride ?? layer.kernel;
        const padding = layer.padding ?? 0;
        const h = outputSide(hIn, layer.kernel, stride, padding, 1);
        const w = outputSide(wIn, layer.kernel, stride, padding, 1);
        if (h < 1 || w < 1) throw new CnnShapeError(name, `its ${layer.kernel}×${layer.kernel} window does not fit a ${hIn}×${wIn} input`);
        save(x.storage, `${name}.input`);
        const out = fresh([c, h, w], x, held);
        if (layer.type === "maxpool") saveExtra(`${name}.indices`, out.storage.elements, "index");
        record(name, layer.type, x.id, out.id, [x.id], 0, 0, false, layer.type === "maxpool" ? { name: `${name}.indices`, elements: out.storage.elements, kind: "index" } : undefined);
        return out;
      }
      case "adaptiveavgpool": {
        const [c] = spatial(x, name);
        save(x.storage, `${name}.input`);
        const out = fresh([c, layer.size, layer.size], x, held);
        record(name, "adaptiveavgpool", x.id, out.id, [x.id]);
        return out;
      }
      case "flatten":
        return { shape: [product(x.shape)], storage: x.storage, id: x.id }; // a view: the same value for autograd's purposes
      case "linear": {
        if (x.shape.length !== 1) throw new CnnShapeError(name, `needs a flat input (add a flatten layer before it), got ${x.shape.join("×")}`);
        const inFeatures = x.shape[0] ?? 0;
        const count = inFeatures * layer.out + (layer.bias === false ? 0 : layer.out);
        tensors.push(inFeatures * layer.out);
        if (layer.bias !== false) tensors.push(layer.out);
        parameters += count;
        largestTensor = Math.max(largestTensor, inFeatures * layer.out);
        save(x.storage, `${name}.input`);
        const out = fresh([layer.out], x, held);
        record(name, "linear", x.id, out.id, [x.id], count);
        return out;
      }
      case "dropout": {
        if (layer.p <= 0) return x;
        const out = fresh(x.shape, x, held);
        saveExtra(`${name}.mask`, out.storage.elements, "mask");
        record(name, "dropout", x.id, out.id, [], 0, 0, false, { name: `${name}.mask`, elements: out.storage.elements, kind: "mask" });
        return out;
      }
      case "residual": {
        const body = run(layer.body, x, `${name}.body.`, [...held, x.storage]);
        const shortcut = layer.shortcut && layer.shortcut.length > 0 ? run(layer.shortcut, x, `${name}.shortcut.`, [...held, body.storage]) : x;
        if (body.shape.join("×") !== shortcut.shape.join("×")) {
          throw new CnnShapeError(name, `its body gives ${body.shape.join("×")} but its shortcut ${shortcut.shape.join("×")}`);
        }
        // body += shortcut (in place, saves nothing), then an in-place ReLU saves the sum.
        observe(held, body.storage, shortcut.storage);
        const sum = value(body.shape, body.storage);
        record(`${name}.add`, "add", body.id, sum.id, [], 0, 0, true);
        ops.at(-1)!.inputs.push(shortcut.id);
        if (layer.relu === false) return sum;
        save(body.storage, `${name}.relu.output`);
        const out = value(body.shape, body.storage);
        record(`${name}.relu`, "relu", sum.id, out.id, [out.id], 0, 0, true);
        return out;
      }
    }
  };

  let x: Value = value([network.channels, imageSize, imageSize], newStorage(network.channels * imageSize * imageSize));
  for (let index = 0; index < network.layers.length; index++) {
    const layer = network.layers[index]!;
    const name = layer.name ?? String(index);
    segment = index;
    segmentInputs.push({ name: `${name}.checkpoint_input`, elements: x.storage.elements, storage: x.storage.id });
    const before = parameters;
    x = apply(layer, x, name, []);
    if (parameters > before) parameterGroups.push({ name, count: parameters - before, tensors });
    tensors = [];
  }
  if (network.classes > 0) {
    // cross-entropy: log_softmax saves its output (fp32 under autocast too).
    segment = network.layers.length;
    saveExtra("loss.log_softmax", network.classes, "float32");
  }

  return {
    parameterCount: parameters,
    parameterGroups,
    saved: [...saved.values()],
    fixedSavedBytes,
    segmentInputs,
    inferencePeakElements: inferencePeak,
    outputShape: x.shape,
    ops,
    values,
    largestTensorElements: largestTensor,
  };
}
