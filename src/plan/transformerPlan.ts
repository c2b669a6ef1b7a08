// The memory plan of a transformer: model states, per-layer activations (Korthikanti et al. 2022), KV cache.
import { invalidArgument } from "../errors.js";
import { largestParameterTensor, visionTokens } from "../workload/transformer.js";
import type { TransformerWorkload } from "../workload/workload.js";
import { autocastLayout } from "./autocast.js";
import { weightBytes } from "./bytesPerParameter.js";
import type { MemoryPlan, PlannedTensor } from "./memoryPlan.js";
import { concatTensors, sharedPart } from "./tensorColumns.js";
import { adaptedLinears, savesInputOf, type LoraSetup } from "./lora.js";
import { moeInferenceWorkspace, moeLayerActivations, routedTokens } from "./moe.js";
import { hostStateTensors, modelStateTensors } from "./modelStates.js";
import { dequantizationBufferBytes, kvElementBytes } from "./quantization.js";
import { adaptersInFp32, transformerCounts, transformerStateGroups } from "./transformerGroups.js";
import { describeSetup, type ResolvedSetup } from "./setup.js";
import type { TapeOp } from "./trainingTape.js";
import { transformerTape, type Shape } from "./transformerStep.js";
import { chooseSdpaKernel, isFused, type AttentionKernel } from "./attentionKernel.js";
import { computeCapabilityOf } from "./computeCapability.js";
import { layeredTimeline } from "./layerReplication.js";
import { sharedTimeline } from "./timelineCache.js";

/**
 * The kernel a transformer's layers are planned with: the one named by `--attention`, or with
 * `sdpa` PyTorch's choice for this model and run. The activations' dtype is the precision's (amp:
 * autocast casts SDPA's inputs to 16 bits, bf16 where the GPU has it, sm 8.0 on); no padding mask
 * (transformers passes none for unpadded causal batches; an encoder's full attention needs none).
 */
export function plannedKernel(arch: TransformerWorkload["architecture"], setup: ResolvedSetup): AttentionKernel {
  if (setup.attention !== "sdpa") return setup.attention;
  const cc = computeCapabilityOf(setup);
  const elementBytes = weightBytes(setup.precision);
  const bf16 = setup.precision === "bf16" || (setup.precision === "amp" && cc.major >= 8);
  return chooseSdpaKernel({ elementBytes, bf16, gqa: arch.kvHeads !== arch.heads, headDim: arch.headDim, mask: false, cc, training: setup.mode === "train" });
}

/** The attention core that selective recomputation (Korthikanti et al. 2022, §5) does not keep: QKᵀ to the product with V. */
const ATTENTION_CORE = new Set(["attention.scores", "attention.scale", "attention.mask", "attention.softmax", "attention.dropout", "attention.context"]);

/**
 * Training: the step as a timeline (src/plan/transformerStep.ts for what each op keeps, and
 * TrainingTape for when it is freed), with the model states on it.
 */
function trainingPlan(shape: Shape, setup: ResolvedSetup, groups: ReturnType<typeof transformerStateGroups>): { phases: string[]; states: PlannedTensor[]; step: readonly PlannedTensor[] } {
  /** The timeline of the model with `layers` layers (its own, or fewer for src/plan/layerReplication.ts). */
  const timeline = (layers: number) => {
    const inLayer = (op: TapeOp) => op.stage >= 1 && op.stage <= layers;
    const recomputed =
      setup.checkpointing === "full" ? inLayer : setup.checkpointing === "selective" ? (op: TapeOp) => inLayer(op) && ATTENTION_CORE.has(op.name) : undefined;
    const arch = layers === shape.arch.layers ? shape.arch : { ...shape.arch, layers };
    return transformerTape({ ...shape, arch }, setup).timeline(recomputed ? { recomputed } : {});
  };
  // The tape reads the shape and these three options only (src/plan/transformerStep.ts): the
  // setups advice compares (ZeRO, GPUs, offload, optimizer) share one timeline.
  const { arch, ...rest } = shape;
  const key = JSON.stringify([rest, setup.checkpointing, setup.hfLoss, setup.precision]);
  // The same with the sizes left out (tokens, image side, the widths tensor parallelism divides):
  // what decides whether the layers are alike, for src/plan/layerReplication.ts's check.
  const { s: _s, imageSize: _imageSize, heads: _heads, kvHeads: _kvHeads, ffn: _ffn, tp, ...kind } = rest;
  const checked = { owner: arch, key: JSON.stringify([kind, tp > 1, setup.checkpointing, setup.hfLoss, setup.precision]) };
  const { phases, tensors, gradientStarts } = sharedTimeline(arch, key, () => layeredTimeline(arch.layers, timeline, checked));
  const states = modelStateTensors(groups, setup, { phases, gradientStarts, largestTensorElements: largestParameterTensor(shape.arch, setup.tp) });
  return { phases: phases.names, states, step: allocated(tensors) };
}

/** Tensors with bytes: what a plan keeps of its lists. */
const hasBytes = (t: PlannedTensor) => t.fixedBytes > 0 || t.perSampleBytes > 0;

/**
 * A shared timeline's tensors that have bytes, filtered once per timeline: every plan on it (advice
 * builds dozens) kept a copy of its thousands of tensors filtered again, callback by callback. A
 * shared part of those plans' lists: its typed columns are made once (src/plan/tensorColumns.ts).
 */
function allocated(tensors: readonly PlannedTensor[]): readonly PlannedTensor[] {
  let kept = allocatedOf.get(tensors);
  // The list itself where every tensor has bytes (a replicated timeline's columns are already made for it).
  if (kept === undefined) allocatedOf.set(tensors, (kept = sharedPart(tensors.every(hasBytes) ? tensors : tensors.filter(hasBytes))));
  return kept;
}
const allocatedOf = new WeakMap<readonly PlannedTensor[], readonly PlannedTensor[]>();

function perSample(name: string, category: PlannedTensor["category"], bytes: number): PlannedTensor {
  return { name, category, fixedBytes: 0, perSampleBytes: bytes };
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
  if (!isFused(shape.attention)) {
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

/**
 * Buffers the model registers besides its parameters (model state, counted with the weights):
 * older transformers' GPT-2 (the code `--hf-loss legacy` plans) keeps a causal mask per layer, a
 * bool n_positions² `bias` and a scalar `masked_bias` (GPT2Attention.__init__); transformers 5.18's
 * modeling_gpt2.py registers no buffer (measured: the GPT-2 traces were 12 MiB over, one layer's
 * 1 MiB each), nor does Phi-3's attention, fused QKV and all (its 4096² masks were 3.5% of
 * Phi-3-mini's traced step). BERT keeps its position and token-type ids (int64,
 * max_position_embeddings each).
 */
function bufferTensors(arch: TransformerWorkload["architecture"], setup: ResolvedSetup): PlannedTensor[] {
  const buffers: PlannedTensor[] = [];
  const fixed = (name: string, bytes: number): PlannedTensor => ({ name, category: "parameters", fixedBytes: bytes, perSampleBytes: 0 });
  if (arch.fusedQkv && arch.kind === "decoder" && arch.positions === "learned" && setup.hfLoss === "legacy") {
    for (let i = 0; i < arch.layers; i++) buffers.push(fixed(`layers.${i}.attention.causal_mask`, arch.maxPositions ** 2), fixed(`layers.${i}.attention.masked_bias`, 4));
  }
  if (arch.tokenTypes > 0 && arch.positions === "learned") buffers.push(fixed("embeddings.position_ids", 8 * arch.maxPositions), fixed("embeddings.token_type_ids", 8 * arch.maxPositions));
  return buffers;
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

/**
 * Whether `tp` splits the model's heads as tensorParallelWidths requires: of the plan's checks, the
 * only one the degree alone decides (sequence parallelism asks only for a degree above 1). So a
 * setup that applies applies with another degree exactly when this holds, and advice learns which
 * degrees it may offer without building a plan for each.
 */
export function tensorParallelApplies(workload: TransformerWorkload, tp: number): boolean {
  const arch = workload.architecture;
  return arch.heads % tp === 0 && (arch.kvHeads % tp === 0 || tp % arch.kvHeads === 0);
}

function tensorParallelWidths(workload: TransformerWorkload, tp: number): { heads: number; kvHeads: number; ffn: number } {
  const arch = workload.architecture;
  if (!tensorParallelApplies(workload, tp)) {
    throw invalidArgument("--tp", tp, arch.heads % tp !== 0 ? `a divisor of the ${arch.heads} attention heads of ${workload.name}` : `a divisor or multiple of the ${arch.kvHeads} KV heads of ${workload.name}`);
  }
  // KV heads are split when they divide evenly; with fewer KV heads than ranks each rank keeps a copy of one.
  return { heads: arch.heads / tp, kvHeads: arch.kvHeads % tp === 0 ? arch.kvHeads / tp : 1, ffn: Math.ceil(arch.ffnSize / tp) };
}

export function transformerPlan(workload: TransformerWorkload, setup: ResolvedSetup): MemoryPlan {
  const arch = workload.architecture;
  const { s, imageSize } = sequenceOf(workload, setup);
  const autocast = autocastLayout(setup);
  const shape: Shape = {
    arch,
    s,
    e: weightBytes(setup.precision),
    autocast,
    r: autocast ? 4 : weightBytes(setup.precision),
    weightBytes: autocast ? 4 : weightBytes(setup.precision),
    tp: setup.tp,
    sequenceParallel: setup.sequenceParallel,
    attention: plannedKernel(arch, setup),
    imageSize,
    ...tensorParallelWidths(workload, setup.tp),
    ...(setup.lora !== undefined && { lora: setup.lora }),
    loraDropout: setup.loraDropout ?? 0,
    loraFp32: adaptersInFp32(setup),
    quantizedSavesInput: setup.mode === "train" && (setup.weights === "nf4" || setup.weights === "int4"),
    capacityFactor: setup.capacityFactor ?? 1,
  };
  const groups = transformerStateGroups(arch, setup);
  const host = hostStateTensors(groups, setup);
  const training = setup.mode === "train" ? trainingPlan(shape, setup, groups) : undefined;
  // concat, not spreads: a spread steps through the iterator, slow in a fresh process's cold code.
  const own = bufferTensors(arch, setup).concat(training?.states ?? modelStateTensors(groups, setup).concat(inferenceTensors(shape, setup, imageSize)));
  // Quantized weights are dequantized to 16 bits a matrix at a time while their layer runs.
  const dequantized = setup.weights !== undefined ? dequantizationBufferBytes(arch, setup.weights, setup.mode === "train") : 0;
  const last: PlannedTensor[] = dequantized > 0 ? [{ name: "dequantize.largest_matrix", category: "workspace", fixedBytes: Math.ceil(dequantized / setup.tp), perSampleBytes: 0 }] : [];
  // Buffers and states, the training step's tensors, the dequantization buffer: those with bytes.
  const tensors = concatTensors(own.filter(hasBytes), training?.step ?? [], last);
  const { parameterCount, trainableParameterCount } = transformerCounts(arch, setup);
  const filled = arch.vision ? { ...setup, image: imageSize } : { ...setup, seq: s };
  const tokens = arch.vision ? ` (${s} tokens)` : "";
  return {
    description: `${workload.name}: ${parameterCount} parameters; ${describeSetup(filled).replace("attention sdpa", `attention sdpa → ${shape.attention}`)}${tokens}`,
    attentionKernel: shape.attention,
    parameterCount,
    trainableParameterCount,
    ...(training !== undefined && { phases: training.phases }),
    tensors,
    ...(host !== undefined && { host }),
  };
}
