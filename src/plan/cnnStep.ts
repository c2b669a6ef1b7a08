// A CNN's training step as autograd records it: traceCnn's ops on a TrainingTape, and the cross-entropy loss.
import type { CnnNetwork, CnnTrace, SavedKind } from "../workload/cnn.js";
import { AUTOCAST_PREFIX } from "./autocast.js";
import { TrainingTape, type Size } from "./trainingTape.js";

/** `.`, between a stage's name and its ops' (`layer1.0.conv1`). */
const DOT = 46;

/** Bytes of one element: activations in the run's dtype, int64 indices, bool masks, fp32 loss. */
export function elementBytes(kind: SavedKind, activationBytes: number): number {
  switch (kind) {
    case "activation":
      return activationBytes;
    case "index":
      return 8;
    case "mask":
      return 1;
    case "float32":
      return 4;
  }
}

/** The stage names of a CNN: its top-level layers (`conv1`, `layer1.0`, …, `fc`). */
export function cnnStages(network: CnnNetwork): string[] {
  return network.layers.map((layer, index) => layer.name ?? String(index));
}

/**
 * The tape of one training step: each storage named after the first op that saves it (the
 * names of traceCnn's `saved`), outputs nothing saves as `<layer>.output` (workspace). The batch's
 * images and labels are inputs; batch norm's fp32 mean and inverse std are two small outputs of
 * each batch norm (`e` bytes per activation element). Under autocast the images are the
 * loader's fp32 ones and the first layer's 16-bit copy (TrainingTape.floatInput); with
 * `weightCopies` (torch.cuda.amp's layout) each weight's 16-bit copy too.
 */
export function cnnTape(network: CnnNetwork, trace: CnnTrace, e: number, autocast = false, weightCopies = false): TrainingTape {
  const stages = cnnStages(network);
  const tape = new TrainingTape(stages);
  // Plain loops and arrays indexed by value (a fresh process builds the tape cold: iterator
  // results and maps of pairs were much of its garbage).
  const savedName = new Map<number, string>();
  for (let i = 0; i < trace.saved.length; i++) savedName.set(trace.saved[i]!.storage, trace.saved[i]!.name);
  const perSample = (bytes: number): Size => ({ fixedBytes: 0, perSampleBytes: bytes });
  const image = trace.values[0]!;
  const saved = savedName.get(image.storage);
  // Named after the layer that saves them: the 16-bit copy under autocast, else the images themselves.
  const images = tape.floatInput(autocast || saved === undefined ? "inputs.images" : saved, saved ?? "inputs.images_16bit", image.elements, e, autocast);
  const values: number[] = [images];
  const at = (v: number): number => {
    const id = values[v];
    if (id === undefined) throw new Error(`traceCnn value ${v} used before it is made`);
    return id;
  };
  for (let o = 0; o < trace.ops.length; o++) {
    const op = trace.ops[o]!;
    const stage = stages[op.segment]!;
    // The op's name within its stage, for its phase: `forward layer1.0 conv1`, `forward fc linear`.
    // (`stage.` tested without making that string: one per op, cold.)
    const local = op.name === stage ? op.type : op.name.length > stage.length && op.name.charCodeAt(stage.length) === DOT && op.name.startsWith(stage) ? op.name.slice(stage.length + 1) : op.name;
    const inputs = op.inputs.map(at);
    // No list for an op without parameters: the tape shares one empty list for them.
    const groups = op.parameters > 0 ? [stage] : undefined;
    if (op.inPlace) {
      const out = tape.inPlace(op.segment, local, inputs[0]!, inputs.slice(1), { groups, passGradient: op.type === "add" });
      values[op.output] = out;
      const saves = tape.ops.at(-1)!.saves;
      for (let j = 0; j < op.saves.length; j++) saves.push(op.saves[j] === op.output ? out : at(op.saves[j]!));
      continue;
    }
    const storage = trace.values[op.output]!.storage;
    const name = savedName.get(storage);
    const outputs: Parameters<TrainingTape["op"]>[3] = [{ name: name ?? `${op.name}.output`, size: perSample(trace.values[op.output]!.elements * e), category: name ? "activations" : "workspace" }];
    if (op.extra) outputs.push({ name: op.extra.name, size: perSample(op.extra.elements * elementBytes(op.extra.kind, e)), requiresGrad: false });
    if (op.fixedSavedBytes > 0) {
      const size = { fixedBytes: op.fixedSavedBytes / 2, perSampleBytes: 0 };
      outputs.push({ name: `${op.name}.save_mean`, size, requiresGrad: false }, { name: `${op.name}.save_invstd`, size: { ...size }, requiresGrad: false });
    }
    // Under autocast a convolution's or linear layer's weight is cast to 16 bits once (autocast's
    // cache) and saved until its backward (src/plan/autocast.ts, which says why the copy also
    // stands for the 16-bit gradient there; batch norm runs on the 16-bit input with fp32 weights).
    const casts = weightCopies && op.parameters > 0 && (op.type === "conv" || op.type === "linear");
    if (casts) outputs.push({ name: `${AUTOCAST_PREFIX}${op.name}.weight`, size: { fixedBytes: 2 * op.parameters, perSampleBytes: 0 }, category: "activations", requiresGrad: false });
    // Under autocast each op's gradients are planned from its own backward (the copies end there;
    // checked against the torch 2.13 traces), elsewhere from the block's first backward as measured.
    const options: Parameters<TrainingTape["op"]>[4] = { groups };
    if (weightCopies && op.parameters > 0) options.parameters = op.parameters;
    const made = tape.op(op.segment, local, inputs, outputs, options);
    const out = made[0]!;
    values[op.output] = out;
    // The op's saved values, then its extra outputs (indices, masks, statistics, weight copies).
    const saves = tape.ops.at(-1)!.saves;
    for (let j = 0; j < op.saves.length; j++) saves.push(op.saves[j] === op.output ? out : at(op.saves[j]!));
    for (let j = 1; j < made.length; j++) saves.push(made[j]!);
  }
  if (network.classes > 0) {
    // cross_entropy: log_softmax saves its fp32 output (under amp after an upcast), nll_loss the labels.
    const loss = tape.lossStage;
    const labels = tape.input("inputs.labels", perSample(8));
    let logits = at(trace.ops.at(-1)!.output);
    if (e !== 4) logits = tape.op(loss, "upcast", [logits], [{ name: "loss.logits_fp32", size: perSample(4 * network.classes), category: "workspace" }])[0]!;
    const [logSoftmax] = tape.op(loss, "log_softmax", [logits], [{ name: "loss.log_softmax", size: perSample(4 * network.classes) }]);
    tape.ops.at(-1)!.saves.push(logSoftmax!);
    tape.op(loss, "nll_loss", [logSoftmax!, labels], [{ name: "loss.value", size: { fixedBytes: 4, perSampleBytes: 0 } }], { saves: [labels] });
  } else {
    tape.op(tape.lossStage, "sum", [at(trace.ops.at(-1)!.output)], [{ name: "loss.value", size: { fixedBytes: 4, perSampleBytes: 0 } }]);
  }
  return tape;
}
