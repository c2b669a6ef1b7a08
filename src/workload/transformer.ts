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
   * `pooler` is BERT's dense+tanh on the first token (BertModel); `classifier` a linear layer on
   * the first token (`classes` outputs, ViT); `none` the bare encoder.
   */
  head: "lm" | "pooler" | "classifier" | "none";
  classes: number;
  /** Dropout on the residual branches and embeddings (one-byte masks are saved when > 0). */
  dropout: number;
  /** Dropout on the attention probabilities. */
  attentionDropout: number;
  /** Vision transformers: the image is cut into `patch`² patches, plus one class token. */
  vision?: { imageSize: number; patchSize: number; channels: number };
}

/** Parameters of one part of the model, and how many of them tensor parallelism splits. */
export interface ParameterGroup {
  /** `embeddings`, `layers.3`, `head`, … */
  name: string;
  count: number;
  /** Of `count`, those Megatron-style tensor parallelism divides across ranks (the rest are replicated). */
  tensorParallelCount: number;
}

function normParameters(arch: TransformerArchitecture): number {
  return arch.norm === "layernorm" ? 2 * arch.hiddenSize : arch.hiddenSize;
}

/** Tokens per sample a vision transformer sees at `imageSize` pixels per side: patches plus the class token. */
export function visionTokens(vision: { patchSize: number }, imageSize: number): number {
  const side = Math.floor(imageSize / vision.patchSize);
  return side * side + 1;
}

/** The parameters of one transformer layer: attention, feed-forward network and two norms. */
function layerParameters(arch: TransformerArchitecture): { count: number; tensorParallelCount: number } {
  const h = arch.hiddenSize;
  const q = arch.heads * arch.headDim;
  const kv = arch.kvHeads * arch.headDim;
  const b = arch.bias ? 1 : 0;
  // Column-parallel (split): Q, K, V with their biases; row-parallel: the output projection's
  // weight is split, its bias replicated (Shoeybi et al. 2019, §3).
  const attentionSplit = h * (q + 2 * kv) + b * (q + 2 * kv) + q * h;
  const attentionReplicated = b * h;
  const f = arch.ffnSize;
  const ffnSplit = arch.ffn === "gated" ? 3 * h * f + b * 2 * f : 2 * h * f + b * f;
  const ffnReplicated = b * h;
  const norms = 2 * normParameters(arch);
  const split = attentionSplit + ffnSplit;
  return { count: split + attentionReplicated + ffnReplicated + norms, tensorParallelCount: split };
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
  groups.push(embeddings);

  const layer = layerParameters(arch);
  for (let i = 0; i < arch.layers; i++) groups.push({ name: `layers.${i}`, ...layer });

  const head: ParameterGroup = { name: "head", count: arch.finalNorm ? normParameters(arch) : 0, tensorParallelCount: 0 };
  switch (arch.head) {
    case "lm":
      if (!arch.tieEmbeddings) {
        head.count += arch.vocabSize * h;
        head.tensorParallelCount += arch.vocabSize * h;
      }
      break;
    case "pooler":
      head.count += h * h + h;
      break;
    case "classifier":
      head.count += h * arch.classes + arch.classes;
      break;
    case "none":
      break;
  }
  if (head.count > 0) groups.push(head);
  return groups;
}

export function transformerParameterCount(arch: TransformerArchitecture): number {
  return transformerParameterGroups(arch).reduce((sum, g) => sum + g.count, 0);
}
