// The memory plan of a transformer: model states, per-layer activations (Korthikanti et al. 2022), KV cache.
import { invalidArgument } from "../errors.js";
import { visionTokens, type TransformerArchitecture } from "../workload/transformer.js";
import type { TransformerWorkload } from "../workload/workload.js";
import { weightBytes } from "./bytesPerParameter.js";
import type { MemoryPlan, PlannedTensor } from "./memoryPlan.js";
import { adaptedLinears, savesInputOf, type LoraSetup } from "./lora.js";
import { moeInferenceWorkspace, moeLayerActivations, routedTokens } from "./moe.js";
import { hostStateTensors, modelStateTensors } from "./modelStates.js";
import { dequantizationBufferBytes, kvElementBytes } from "./quantization.js";
import { transformerCounts, transformerStateGroups } from "./transformerGroups.js";
import { describeSetup, type ResolvedSetup } from "./setup.js";

/** The sizes that fix every activation: tokens, element bytes and the per-rank widths under tensor parallelism. */
interface Shape {
  arch: TransformerArchitecture;
  /** Tokens per sample. */
  s: number;
  /** Bytes of one activation element: 4 in fp32, 2 in fp16/bf16/amp. */
  e: number;
  tp: number;
  sequenceParallel: boolean;
  attention: ResolvedSetup["attention"];
  /** Query heads, KV heads and FFN width on one tensor-parallel rank. */
  heads: number;
  kvHeads: number;
  ffn: number;
  /** LoRA adapters on a frozen model: a frozen linear layer saves nothing for backward. */
  lora?: LoraSetup;
  /** A mixture of experts' capacity factor (src/plan/moe.ts). */
  capacityFactor: number;
}

/** A per-sample activation tensor and whether tensor parallelism splits it. */
interface Activation {
  name: string;
  bytes: number;
  /** `split`: inside the tensor-parallel region (per-rank widths already applied); `replicated`: full on every rank unless sequence parallelism splits it. */
  parallel: "split" | "replicated";
}

function perRank(shape: Shape, a: Activation): number {
  return a.parallel === "replicated" && shape.sequenceParallel ? Math.ceil(a.bytes / shape.tp) : a.bytes;
}

/**
 * What one layer saves for backward, per sample (Korthikanti et al. 2022, §4.1): with 16-bit
 * activations, dropout and eager attention it sums to sbh(34 + 5as/h) bytes for s tokens.
 * `selective` drops the attention core (softmax, its dropout) that §5 recomputes; flash attention
 * never stores it, keeping only its logsumexp.
 */
function layerActivations(shape: Shape, prefix: string, selective: boolean): Activation[] {
  const { arch, s, e } = shape;
  const h = arch.hiddenSize;
  const d = arch.headDim;
  const out: Activation[] = [];
  const replicated = (name: string, bytes: number) => out.push({ name: `${prefix}.${name}`, bytes, parallel: "replicated" });
  const split = (name: string, bytes: number) => out.push({ name: `${prefix}.${name}`, bytes, parallel: "split" });

  const saves = (projection: Parameters<typeof savesInputOf>[2]) => savesInputOf(arch, shape.lora, projection);
  replicated("norm1.input", e * s * h);
  // The shared input of the Q, K, V projections, kept only when one of them trains (with adapters: is adapted).
  if (saves("q") || saves("k") || saves("v")) replicated("attention.input", e * s * h);
  if (arch.qkNorm) {
    // Qwen3/Gemma 3 normalize each head's queries and keys: the norms save their inputs.
    split("attention.query_norm_input", e * s * shape.heads * d);
    split("attention.key_norm_input", e * s * shape.kvHeads * d);
  }
  split("attention.query", e * s * shape.heads * d);
  split("attention.key", e * s * shape.kvHeads * d);
  split("attention.value", e * s * shape.kvHeads * d);
  if (shape.attention === "flash") {
    split("attention.logsumexp", 4 * shape.heads * s);
  } else if (!selective) {
    split("attention.softmax", e * shape.heads * s * s);
    if (arch.attentionDropout > 0) {
      split("attention.dropout_mask", shape.heads * s * s);
      split("attention.dropout_output", e * shape.heads * s * s);
    }
  }
  // The output projection's input; flash attention keeps the same tensor as its output for its own backward.
  if (saves("o") || shape.attention === "flash") split("attention.output", e * s * shape.heads * d);
  if (arch.sandwichNorms) replicated("norm_post_attention.input", e * s * h); // Gemma 2/3 normalize attention's output too
  if (arch.dropout > 0) replicated("attention.residual_dropout_mask", s * h);
  replicated("norm2.input", e * s * h);
  if (arch.experts) {
    const trains = { router: shape.lora === undefined, gateUp: saves("gate") || saves("up"), down: saves("down") };
    out.push(...moeLayerActivations(arch, prefix, { s, e, ffn: shape.ffn, capacityFactor: shape.capacityFactor }, trains));
  } else {
    if (saves("gate") || saves("up")) replicated("mlp.input", e * s * h);
    if (arch.ffn === "gated") {
      // down(act(gate(x)) * up(x)): act saves its input, the product both factors, down its input.
      split("mlp.gate", e * s * shape.ffn);
      split("mlp.act_output", e * s * shape.ffn);
      split("mlp.up", e * s * shape.ffn);
      if (saves("down")) split("mlp.down_input", e * s * shape.ffn);
    } else {
      split("mlp.act_input", e * s * shape.ffn);
      if (saves("down")) split("mlp.down_input", e * s * shape.ffn);
    }
  }
  if (arch.sandwichNorms) replicated("norm_post_mlp.input", e * s * h);
  // Each adapter's B saves A's output, r values a token slot (PEFT's lora_dropout defaults to 0: no dropout copy).
  if (shape.lora) {
    const routed = routedTokens(arch, s, shape.capacityFactor);
    for (const linear of adaptedLinears(arch, shape.lora)) split(`lora.${linear.name}.a_output`, e * (linear.expert ? routed : s) * shape.lora.rank);
  }
  if (arch.dropout > 0) replicated("mlp.residual_dropout_mask", s * h);
  return out;
}

/** Activations outside the layers: embeddings, final norm, head and loss (Korthikanti et al. 2022, §4.3). */
function edgeActivations(shape: Shape, imageSize: number): { before: Activation[]; after: Activation[] } {
  const { arch, s, e } = shape;
  const h = arch.hiddenSize;
  const before: Activation[] = [];
  const after: Activation[] = [];
  if (arch.vision) before.push({ name: "embeddings.patch_input", bytes: e * arch.vision.channels * imageSize * imageSize, parallel: "replicated" });
  if (arch.embeddingNorm) before.push({ name: "embeddings.norm.input", bytes: e * s * h, parallel: "replicated" });
  if (arch.dropout > 0) before.push({ name: "embeddings.dropout_mask", bytes: s * h, parallel: "replicated" });
  if (arch.finalNorm) after.push({ name: "head.norm.input", bytes: e * s * h, parallel: "replicated" });
  // The head's input: for a pooler or classifier a view of the first token, which keeps the whole sequence's storage.
  // A frozen LM head (with adapters) keeps none.
  if (arch.head !== "none" && !(arch.head === "lm" && shape.lora)) after.push({ name: "head.input", bytes: e * s * h, parallel: "replicated" });
  if (arch.head === "lm") {
    // Cross-entropy keeps fp32 logits for every position, vocabulary-parallel under TP.
    after.push({ name: "loss.logits_fp32", bytes: Math.ceil((4 * s * arch.vocabSize) / shape.tp), parallel: "split" });
  } else if (arch.head === "classifier") {
    after.push({ name: "loss.log_softmax", bytes: 4 * arch.classes, parallel: "split" });
  }
  return { before, after };
}

function perSample(name: string, category: PlannedTensor["category"], bytes: number): PlannedTensor {
  return { name, category, fixedBytes: 0, perSampleBytes: bytes };
}

function trainingActivations(shape: Shape, setup: ResolvedSetup, imageSize: number): PlannedTensor[] {
  const tensors: PlannedTensor[] = [];
  const push = (list: Activation[], category: PlannedTensor["category"] = "activations") => {
    for (const a of list) tensors.push(perSample(a.name, category, perRank(shape, a)));
  };
  const edges = edgeActivations(shape, imageSize);
  push(edges.before);
  const selective = setup.checkpointing === "selective";
  let largest = 0;
  for (let i = 0; i < shape.arch.layers; i++) {
    const prefix = `layers.${i}`;
    if (setup.checkpointing === "full") {
      // Only the layer's input is kept: sbh·2 bytes in 16-bit (Korthikanti et al. 2022, Table 2).
      push([{ name: `${prefix}.input`, bytes: shape.e * shape.s * shape.arch.hiddenSize, parallel: "replicated" }]);
    } else {
      const layer = layerActivations(shape, prefix, selective);
      push(layer);
    }
  }
  // Backward of a fully checkpointed layer first recomputes that one layer's activations.
  const oneLayer = layerActivations(shape, "recompute", false);
  if (setup.checkpointing === "full") push(oneLayer);
  push(edges.after);
  for (const a of oneLayer) largest = Math.max(largest, perRank(shape, a));
  // Backward holds the gradient of an op's output and of its input at once: two of the largest.
  tensors.push(perSample("backward.grad_output", "workspace", largest), perSample("backward.grad_input", "workspace", largest));
  if (shape.arch.head === "lm") {
    tensors.push(perSample("loss.logits_grad", "workspace", Math.ceil((4 * shape.s * shape.arch.vocabSize) / shape.tp)));
  }
  return tensors;
}

/**
 * Inference: the KV cache of a decoder (2 × layers × kvHeads × headDim × tokens × bytes per
 * sample) and the transient workspace of the prefill, the largest step of a forward pass: the
 * attention phase or the MLP phase of one layer, whichever is larger, plus the last position's
 * fp32 logits.
 */
function inferenceTensors(shape: Shape, setup: ResolvedSetup, imageSize: number): PlannedTensor[] {
  const { arch, s, e } = shape;
  const h = arch.hiddenSize;
  const d = arch.headDim;
  const tensors: PlannedTensor[] = [];
  if (arch.kind === "decoder") {
    const tokens = s + setup.generatedTokens;
    const kv = kvElementBytes(setup.kvCache, e);
    // A sliding-window layer keeps only its window (Hugging Face's HybridCache for Gemma 2/3).
    const sliding = new Set(arch.slidingWindow?.layers ?? []);
    for (let i = 0; i < arch.layers; i++) {
      const cached = sliding.has(i) ? Math.min(tokens, arch.slidingWindow!.tokens) : tokens;
      tensors.push(perSample(`layers.${i}.kv_cache.key`, "kvCache", kv * cached * shape.kvHeads * d));
      tensors.push(perSample(`layers.${i}.kv_cache.value`, "kvCache", kv * cached * shape.kvHeads * d));
    }
  }
  const residual = [perSample("workspace.hidden", "workspace", e * s * h), perSample("workspace.norm_output", "workspace", e * s * h)];
  const attention = [perSample("workspace.attention.qkv", "workspace", e * s * (shape.heads + 2 * shape.kvHeads) * d)];
  if (shape.attention === "eager") {
    attention.push(perSample("workspace.attention.scores", "workspace", e * shape.heads * s * s));
    attention.push(perSample("workspace.attention.probs", "workspace", e * shape.heads * s * s));
  }
  attention.push(perSample("workspace.attention.output", "workspace", e * s * shape.heads * d));
  const mlpWidths = arch.ffn === "gated" ? ["gate_act", "up", "product"] : ["up", "act_output"];
  const mlp = arch.experts
    ? moeInferenceWorkspace(arch, { s, e, ffn: shape.ffn, capacityFactor: shape.capacityFactor }).map((t) => perSample(t.name, "workspace", t.bytes))
    : mlpWidths.map((name) => perSample(`workspace.mlp.${name}`, "workspace", e * s * shape.ffn));
  const sum = (list: PlannedTensor[]) => list.reduce((total, t) => total + t.perSampleBytes, 0);
  tensors.push(...residual, ...(sum(attention) >= sum(mlp) ? attention : mlp));
  if (arch.vision) tensors.push(perSample("workspace.image", "workspace", e * arch.vision.channels * imageSize * imageSize));
  if (arch.head === "lm") tensors.push(perSample("workspace.logits", "workspace", Math.ceil((4 * arch.vocabSize) / shape.tp)));
  return tensors;
}

/** Tokens per sample and image side after checking the options against the model. */
function sequenceOf(workload: TransformerWorkload, setup: ResolvedSetup): { s: number; imageSize: number } {
  const arch = workload.architecture;
  if (arch.vision) {
    if (setup.seq !== undefined) throw invalidArgument("--seq", setup.seq, `no --seq for ${workload.name}, a vision transformer (use --image)`);
    const imageSize = setup.image ?? arch.vision.imageSize;
    if (imageSize < arch.vision.patchSize) throw invalidArgument("--image", imageSize, `at least the ${arch.vision.patchSize}-pixel patch of ${workload.name}`);
    return { s: visionTokens(arch.vision, imageSize), imageSize };
  }
  if (setup.image !== undefined) throw invalidArgument("--image", setup.image, `no --image for ${workload.name}, a text model (use --seq)`);
  const s = setup.seq ?? arch.maxPositions;
  if (arch.positions === "learned" && s > arch.maxPositions) {
    throw invalidArgument("--seq", s, `at most ${arch.maxPositions} for ${workload.name} (its learned position table)`);
  }
  return { s, imageSize: 0 };
}

function tensorParallelWidths(workload: TransformerWorkload, tp: number): { heads: number; kvHeads: number; ffn: number } {
  const arch = workload.architecture;
  if (arch.heads % tp !== 0) throw invalidArgument("--tp", tp, `a divisor of the ${arch.heads} attention heads of ${workload.name}`);
  // KV heads are split when they divide evenly; with fewer KV heads than ranks each rank keeps a copy of one.
  let kvHeads: number;
  if (arch.kvHeads % tp === 0) kvHeads = arch.kvHeads / tp;
  else if (tp % arch.kvHeads === 0) kvHeads = 1;
  else throw invalidArgument("--tp", tp, `a divisor or multiple of the ${arch.kvHeads} KV heads of ${workload.name}`);
  return { heads: arch.heads / tp, kvHeads, ffn: Math.ceil(arch.ffnSize / tp) };
}

export function transformerPlan(workload: TransformerWorkload, setup: ResolvedSetup): MemoryPlan {
  const arch = workload.architecture;
  const { s, imageSize } = sequenceOf(workload, setup);
  const shape: Shape = {
    arch,
    s,
    e: weightBytes(setup.precision),
    tp: setup.tp,
    sequenceParallel: setup.sequenceParallel,
    attention: setup.attention,
    ...tensorParallelWidths(workload, setup.tp),
    ...(setup.lora !== undefined && { lora: setup.lora }),
    capacityFactor: setup.capacityFactor ?? 1,
  };
  const groups = transformerStateGroups(arch, setup);
  const host = hostStateTensors(groups, setup);
  const tensors = [
    ...modelStateTensors(groups, setup),
    ...(setup.mode === "train" ? trainingActivations(shape, setup, imageSize) : inferenceTensors(shape, setup, imageSize)),
  ];
  // Quantized weights are dequantized to 16 bits a matrix at a time while their layer runs.
  const dequantized = setup.weights !== undefined ? dequantizationBufferBytes(arch, setup.weights, setup.mode === "train") : 0;
  if (dequantized > 0) tensors.push({ name: "dequantize.largest_matrix", category: "workspace", fixedBytes: Math.ceil(dequantized / setup.tp), perSampleBytes: 0 });
  const { parameterCount, trainableParameterCount } = transformerCounts(arch, setup);
  const filled = arch.vision ? { ...setup, image: imageSize } : { ...setup, seq: s };
  const tokens = arch.vision ? ` (${s} tokens)` : "";
  return {
    description: `${workload.name}: ${parameterCount} parameters; ${describeSetup(filled)}${tokens}`,
    parameterCount,
    trainableParameterCount,
    tensors: tensors.filter((t) => t.fixedBytes > 0 || t.perSampleBytes > 0),
    ...(host !== undefined && { host }),
  };
}
