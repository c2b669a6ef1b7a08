// Transformer architectures: their configuration and the parameter count it implies.

/**
 * A transformer's shape, as the memory model needs it. Every preset, Hugging Face config and
 * `--spec` transformer becomes one of these; see docs/memory-model.md for what each field changes.
 */
export interface TransformerArchitecture {
  /** `decoder`: causal LM with a KV cache when generating (GPT-2, Llama); `encoder`: BERT, ViT. */
  kind: "decoder" | "encoder";
  hiddenSize: number;
  layers: number;
  /** Query heads. */
  heads: number;
  /** Key/value heads: `heads` for multi-head attention, fewer for grouped-query attention. */
  kvHeads: number;
  /** Width of one head (`hiddenSize / heads` unless the config says otherwise). */
  headDim: number;
  /** Width of the feed-forward network's inner layer. */
  ffnSize: number;
  /** `mlp`: two linears around GeLU/ReLU; `gated`: SwiGLU-style gate × up, then down (Llama). */
  ffn: "mlp" | "gated";
  /** Token vocabulary (0 for vision transformers, whose input is image patches). */
  vocabSize: number;
  /** `learned`: a position table of `maxPositions` rows (GPT-2, BERT, ViT); `rotary`: none (Llama). */
  positions: "learned" | "rotary";
  /** The context length the model was trained for: the learned table's size and the default `--seq`. */
  maxPositions: number;
  /** BERT's token-type (segment) embeddings; 0 when there are none. */
  tokenTypes: number;
  norm: "layernorm" | "rmsnorm";
  /** Whether the linear layers have biases (GPT-2, BERT, ViT: yes; Llama: no). */
  bias: boolean;
  /** Whether the LM head reuses the token embedding matrix (GPT-2: yes; Llama-2: no). */
  tieEmbeddings: boolean;
  /** A LayerNorm right after the embeddings (BERT, post-LN). */
  embeddingNorm: boolean;
  /** A norm after the last layer (pre-LN models: GPT-2, Llama, ViT). */
  finalNorm: boolean;
  /**
   * What sits on top: `lm` projects every position to the vocabulary (a causal LM's loss);
   * `pooler` is BERT's dense+tanh on the first token (BertModel; with `classes` > 0 a classifier
   * on top, BertForSequenceClassification); `classifier` a linear layer on the first token
   * (`classes` outputs, ViT); `none` the bare encoder.
   */
  head: "lm" | "pooler" | "classifier" | "none";
  classes: number;
  /** Dropout on the residual branches and embeddings (one-byte masks are saved when > 0). */
  dropout: number;
  /** Dropout on the attention probabilities. */
  attentionDropout: number;
  /**
   * How the non-gated FFN's activation runs: `gelu` one fused op saving its input (PyTorch's
   * GeLU, Megatron); `gelu_new` Hugging Face's NewGELUActivation (GPT-2's `activation_function`),
   * the tanh approximation in Python ops, which saves four f-wide tensors. Unset: `gelu`.
   */
  activation?: "gelu" | "gelu_new";
  /** Post-LN (BERT: the norms after each residual sum) rather than pre-LN. Unset: pre-LN. */
  postNorm?: boolean;
  /** Vision transformers: the image is cut into `patch`² patches, plus one class token. */
  vision?: { imageSize: number; patchSize: number; channels: number };
  /** Biases on the query, key and value projections only (Qwen2/2.5); `bias` puts them on every linear. */
  qkvBias?: boolean;
  /** An RMSNorm over each head's queries and keys (Qwen3, Gemma 3): `2 × headDim` weights per layer. */
  qkNorm?: boolean;
  /** Four norms per layer instead of two: also after attention and after the FFN (Gemma 2/3). */
  sandwichNorms?: boolean;
  /** Q, K and V as one matrix (GPT-2's `c_attn`, Phi-3's `qkv_proj`): one tensor to adapt or quantize. */
  fusedQkv?: boolean;
  /** Gate and up as one matrix (Phi-3's `gate_up_proj`). */
  fusedGateUp?: boolean;
  /**
   * The LM head's logits soft-capped, `cap · tanh(logits / cap)` (Gemma 2's `final_logit_softcapping`): two more
   * logits-sized tensors in the step, tanh's output saved for its backward.
   */
  finalLogitSoftcap?: boolean;
  /**
   * Sliding-window attention (Gemma 2/3): the `layers` (indices) attend to the last `tokens`
   * tokens only, so their KV cache holds at most `tokens`.
   */
  slidingWindow?: { tokens: number; layers: number[] };
  /**
   * A mixture of experts in place of each layer's FFN (Mixtral): `count` FFNs of `ffnSize`, a
   * router (a `hiddenSize × count` linear), and every token through `perToken` of them.
   */
  experts?: { count: number; perToken: number };
}

/** The names `--lora-targets` uses for a layer's projections (PEFT's q_proj … down_proj). */
export const PROJECTIONS = ["q", "k", "v", "o", "gate", "up", "down"] as const;
export type Projection = (typeof PROJECTIONS)[number];

/** One weight matrix of a layer (an `nn.Linear`), as adapters and quantization see it. */
export interface LayerLinear {
  /** `q`, `k`, `v`, `qkv` (fused), `o`, `gate`, `up`, `gate_up` (fused), `down`. */
  name: string;
  /** The projections it computes (a fused matrix computes several). */
  projections: Projection[];
  inFeatures: number;
  outFeatures: number;
  bias: boolean;
  /** Copies per layer: the experts of a mixture-of-experts FFN (1 otherwise). */
  copies: number;
  /** Part of an expert (sharded by expert parallelism). */
  expert: boolean;
  /** Megatron's split under tensor parallelism: `column` (output features) or `row` (input features). */
  parallel: "column" | "row";
}

/** Parameters of one part of the model, and how many of them tensor parallelism splits. */
export interface ParameterGroup {
  /** `embeddings`, `layers.3`, `head`, … */
  name: string;
  count: number;
  /** Of `count`, those Megatron-style tensor parallelism divides across ranks (the rest are replicated). */
  tensorParallelCount: number;
  /** The stage of the step that runs it, when not `name` itself (`layers.3.experts` runs in `layers.3`). */
  stage?: string;
  /** A mixture of experts' FFNs: expert parallelism (`--ep`) shards them. */
  experts?: boolean;
  /** Elements of each of its parameter tensors (weight, bias, norm), summing to `count`. */
  tensors?: number[];
}

/** A norm's tensors: LayerNorm's weight and bias, RMSNorm's weight. */
function normTensors(arch: TransformerArchitecture, width = arch.hiddenSize): number[] {
  return arch.norm === "layernorm" ? [width, width] : [width];
}

/** A layer's parameter tensors outside its experts, in module order (norms, projections, router). */
function layerTensors(arch: TransformerArchitecture, experts: boolean): number[] {
  const tensors: number[] = [];
  if (!experts) {
    for (let i = 0; i < (arch.sandwichNorms ? 4 : 2); i++) tensors.push(...normTensors(arch));
    if (arch.qkNorm) tensors.push(arch.headDim, arch.headDim);
    if (arch.experts) tensors.push(arch.hiddenSize * arch.experts.count);
  }
  for (const linear of layerLinears(arch).filter((l) => l.expert === experts)) {
    for (let c = 0; c < linear.copies; c++) tensors.push(linear.inFeatures * linear.outFeatures, ...(linear.bias ? [linear.outFeatures] : []));
  }
  return tensors;
}

/** `tensors` when they account for the group's count exactly (else the group stays one allocation). */
function withTensors<T extends { count: number }>(group: T, tensors: number[]): T & { tensors?: number[] } {
  return tensors.reduce((a, b) => a + b, 0) === group.count ? { ...group, tensors } : group;
}

function normParameters(arch: TransformerArchitecture): number {
  return arch.norm === "layernorm" ? 2 * arch.hiddenSize : arch.hiddenSize;
}

/** Tokens per sample a vision transformer sees at `imageSize` pixels per side: patches plus the class token. */
export function visionTokens(vision: { patchSize: number }, imageSize: number): number {
  const side = Math.floor(imageSize / vision.patchSize);
  return side * side + 1;
}

/**
 * The weight matrices of one layer in the order they run: attention's Q, K, V (or fused QKV) and
 * output projection, then the FFN's gate and up (or fused) and down, or an MLP's up and down;
 * under a mixture of experts the FFN matrices once per expert.
 */
export function layerLinears(arch: TransformerArchitecture): LayerLinear[] {
  const h = arch.hiddenSize;
  const q = arch.heads * arch.headDim;
  const kv = arch.kvHeads * arch.headDim;
  const f = arch.ffnSize;
  const qkvBias = arch.bias || arch.qkvBias === true;
  const attention = { copies: 1, expert: false };
  const ffn = { copies: arch.experts?.count ?? 1, expert: arch.experts !== undefined, bias: arch.bias };
  const linears: LayerLinear[] = [];
  if (arch.fusedQkv) {
    linears.push({ name: "qkv", projections: ["q", "k", "v"], inFeatures: h, outFeatures: q + 2 * kv, bias: qkvBias, parallel: "column", ...attention });
  } else {
    linears.push({ name: "q", projections: ["q"], inFeatures: h, outFeatures: q, bias: qkvBias, parallel: "column", ...attention });
    linears.push({ name: "k", projections: ["k"], inFeatures: h, outFeatures: kv, bias: qkvBias, parallel: "column", ...attention });
    linears.push({ name: "v", projections: ["v"], inFeatures: h, outFeatures: kv, bias: qkvBias, parallel: "column", ...attention });
  }
  linears.push({ name: "o", projections: ["o"], inFeatures: q, outFeatures: h, bias: arch.bias, parallel: "row", ...attention });
  if (arch.ffn === "gated" && arch.fusedGateUp) {
    linears.push({ name: "gate_up", projections: ["gate", "up"], inFeatures: h, outFeatures: 2 * f, parallel: "column", ...ffn });
  } else if (arch.ffn === "gated") {
    linears.push({ name: "gate", projections: ["gate"], inFeatures: h, outFeatures: f, parallel: "column", ...ffn });
    linears.push({ name: "up", projections: ["up"], inFeatures: h, outFeatures: f, parallel: "column", ...ffn });
  } else {
    linears.push({ name: "up", projections: ["up"], inFeatures: h, outFeatures: f, parallel: "column", ...ffn });
  }
  linears.push({ name: "down", projections: ["down"], inFeatures: f, outFeatures: h, parallel: "row", ...ffn });
  return linears;
}

/** Parameters of one copy of a linear layer: its weight and bias. */
export function linearParameters(linear: LayerLinear): number {
  return linear.inFeatures * linear.outFeatures + (linear.bias ? linear.outFeatures : 0);
}

/** A layer's parameters outside its linear layers: its norms, the Q/K norms and the router. */
function layerOtherParameters(arch: TransformerArchitecture): number {
  const norms = (arch.sandwichNorms ? 4 : 2) * normParameters(arch);
  const qkNorms = arch.qkNorm ? 2 * arch.headDim : 0;
  const router = arch.experts ? arch.hiddenSize * arch.experts.count : 0;
  return norms + qkNorms + router;
}

/**
 * The parameters of one transformer layer, split in two where a mixture of experts has them:
 * `shared` (attention, norms, router) and `experts` (every expert's FFN; 0 without experts).
 * Tensor parallelism (Shoeybi et al. 2019, §3) splits the column-parallel matrices with their
 * biases and the row-parallel matrices' weights; row-parallel biases are replicated.
 */
function layerParameters(arch: TransformerArchitecture): { shared: ParameterSplit; experts: ParameterSplit } {
  const shared = { count: layerOtherParameters(arch), tensorParallelCount: 0 };
  const experts = { count: 0, tensorParallelCount: 0 };
  for (const linear of layerLinears(arch)) {
    const part = linear.expert ? experts : shared;
    const weights = linear.inFeatures * linear.outFeatures;
    const bias = linear.bias ? linear.outFeatures : 0;
    part.count += linear.copies * (weights + bias);
    part.tensorParallelCount += linear.copies * (linear.parallel === "column" ? weights + bias : weights);
  }
  return { shared, experts };
}

interface ParameterSplit {
  count: number;
  tensorParallelCount: number;
}

/** The model's parameters in groups: embeddings, each layer, and the final norm with the head. */
export function transformerParameterGroups(arch: TransformerArchitecture): ParameterGroup[] {
  const h = arch.hiddenSize;
  const groups: ParameterGroup[] = [];

  let embeddings: ParameterGroup;
  if (arch.vision) {
    const { imageSize, patchSize, channels } = arch.vision;
    const patchEmbedding = channels * patchSize * patchSize * h + h; // a conv with a bias
    const positionTable = visionTokens(arch.vision, imageSize) * h;
    embeddings = { name: "embeddings", count: patchEmbedding + h /* class token */ + positionTable, tensorParallelCount: 0 };
  } else {
    const words = arch.vocabSize * h; // vocabulary-parallel under tensor parallelism
    const positions = arch.positions === "learned" ? arch.maxPositions * h : 0;
    embeddings = { name: "embeddings", count: words + positions + arch.tokenTypes * h, tensorParallelCount: words };
  }
  if (arch.embeddingNorm) embeddings.count += normParameters(arch);
  const embeddingTensors = arch.vision
    ? [arch.vision.channels * arch.vision.patchSize ** 2 * h, h, h, visionTokens(arch.vision, arch.vision.imageSize) * h]
    : [arch.vocabSize * h, ...(arch.positions === "learned" ? [arch.maxPositions * h] : []), ...(arch.tokenTypes > 0 ? [arch.tokenTypes * h] : [])];
  groups.push(withTensors(embeddings, [...embeddingTensors, ...(arch.embeddingNorm ? normTensors(arch) : [])]));

  const layer = layerParameters(arch);
  const shared = layerTensors(arch, false);
  const expertTensors = layerTensors(arch, true);
  for (let i = 0; i < arch.layers; i++) {
    groups.push(withTensors({ name: `layers.${i}`, ...layer.shared }, shared));
    if (layer.experts.count > 0) groups.push(withTensors({ name: `layers.${i}.experts`, ...layer.experts, stage: `layers.${i}`, experts: true }, expertTensors));
  }

  const head: ParameterGroup = { name: "head", count: arch.finalNorm ? normParameters(arch) : 0, tensorParallelCount: 0 };
  switch (arch.head) {
    case "lm":
      if (!arch.tieEmbeddings) {
        head.count += arch.vocabSize * h;
        head.tensorParallelCount += arch.vocabSize * h;
      }
      break;
    case "pooler":
      head.count += h * h + h + h * arch.classes + arch.classes;
      break;
    case "classifier":
      head.count += h * arch.classes + arch.classes;
      break;
    case "none":
      break;
  }
  const headTensors = [
    ...(arch.finalNorm ? normTensors(arch) : []),
    ...(arch.head === "lm" && !arch.tieEmbeddings ? [arch.vocabSize * h] : []),
    ...(arch.head === "pooler" ? [h * h, h] : []),
    ...((arch.head === "pooler" || arch.head === "classifier") && arch.classes > 0 ? [h * arch.classes, arch.classes] : []),
  ];
  if (head.count > 0) groups.push(withTensors(head, headTensors));
  return groups;
}

export function transformerParameterCount(arch: TransformerArchitecture): number {
  return transformerParameterGroups(arch).reduce((sum, g) => sum + g.count, 0);
}

/**
 * The parameters one token runs through: all but the experts it is not routed to (Mixtral:
 * 2 of 8 experts per layer). The total for a dense model.
 */
export function transformerActiveParameterCount(arch: TransformerArchitecture): number {
  const total = transformerParameterCount(arch);
  if (!arch.experts) return total;
  const experts = layerParameters(arch).experts.count * arch.layers;
  return total - (experts / arch.experts.count) * (arch.experts.count - arch.experts.perToken);
}

/**
 * Elements of the largest single parameter tensor on one tensor-parallel rank: the token
 * embedding (or an untied LM head), the fused QKV projection, or an FFN matrix, whichever is
 * largest. A single-tensor optimizer's temporaries are sized by it.
 */
export function largestParameterTensor(arch: TransformerArchitecture, tp: number): number {
  const h = arch.hiddenSize;
  const q = arch.heads * arch.headDim;
  const kv = arch.kvHeads * arch.headDim;
  const candidates = [
    Math.ceil(arch.vocabSize / tp) * h,
    arch.positions === "learned" ? arch.maxPositions * h : 0,
    Math.ceil((arch.fusedQkv ? h * (q + 2 * kv) : h * q) / tp),
    Math.ceil((h * arch.ffnSize) / tp),
  ];
  if (arch.vision) candidates.push(arch.vision.channels * arch.vision.patchSize ** 2 * h);
  if (arch.head === "classifier" || (arch.head === "pooler" && arch.classes > 0)) candidates.push(h * arch.classes);
  return Math.max(...candidates);
}
