// The transformer families: each family's fixed choices, filled in with one model's shape.
import type { TransformerArchitecture } from "./transformer.js";

/** BERT (Devlin et al. 2019) as BertModel: post-LN encoder with the pooler, GeLU FFN of 4h. */
export function bertArchitecture(shape: { hiddenSize: number; layers: number; heads: number }): TransformerArchitecture {
  return {
    kind: "encoder",
    hiddenSize: shape.hiddenSize,
    layers: shape.layers,
    heads: shape.heads,
    kvHeads: shape.heads,
    headDim: shape.hiddenSize / shape.heads,
    ffnSize: 4 * shape.hiddenSize,
    ffn: "mlp",
    vocabSize: 30522,
    positions: "learned",
    maxPositions: 512,
    tokenTypes: 2,
    norm: "layernorm",
    bias: true,
    tieEmbeddings: true,
    embeddingNorm: true,
    finalNorm: false,
    head: "pooler",
    classes: 0,
    dropout: 0.1,
    attentionDropout: 0.1,
    postNorm: true,
  };
}

/**
 * GPT-2 (Radford et al. 2019) and GPT-3 (Brown et al. 2020): pre-LN decoder, learned positions,
 * tied LM head, one fused QKV projection. `activation`: Hugging Face's GPT-2 runs `gelu_new`;
 * Megatron's GPT a fused GeLU (the default here).
 */
export function gptArchitecture(shape: { hiddenSize: number; layers: number; heads: number; maxPositions: number; activation?: "gelu" | "gelu_new" }): TransformerArchitecture {
  return {
    kind: "decoder",
    hiddenSize: shape.hiddenSize,
    layers: shape.layers,
    heads: shape.heads,
    kvHeads: shape.heads,
    headDim: shape.hiddenSize / shape.heads,
    ffnSize: 4 * shape.hiddenSize,
    ffn: "mlp",
    vocabSize: 50257,
    positions: "learned",
    maxPositions: shape.maxPositions,
    tokenTypes: 0,
    norm: "layernorm",
    bias: true,
    tieEmbeddings: true,
    embeddingNorm: false,
    finalNorm: true,
    head: "lm",
    classes: 0,
    dropout: 0.1,
    attentionDropout: 0.1,
    fusedQkv: true, // `c_attn`: one matrix for Q, K and V
    activation: shape.activation ?? "gelu",
  };
}

/** Llama (Touvron et al. 2023) and Mistral: RMSNorm, rotary positions, SwiGLU FFN, no biases, untied LM head. */
export function llamaArchitecture(shape: {
  hiddenSize: number;
  layers: number;
  heads: number;
  kvHeads: number;
  ffnSize: number;
  vocabSize: number;
  maxPositions: number;
}): TransformerArchitecture {
  return {
    kind: "decoder",
    hiddenSize: shape.hiddenSize,
    layers: shape.layers,
    heads: shape.heads,
    kvHeads: shape.kvHeads,
    headDim: shape.hiddenSize / shape.heads,
    ffnSize: shape.ffnSize,
    ffn: "gated",
    vocabSize: shape.vocabSize,
    positions: "rotary",
    maxPositions: shape.maxPositions,
    tokenTypes: 0,
    norm: "rmsnorm",
    bias: false,
    tieEmbeddings: false,
    embeddingNorm: false,
    finalNorm: true,
    head: "lm",
    classes: 0,
    dropout: 0,
    attentionDropout: 0,
  };
}

/** ViT (Dosovitskiy et al. 2021) as torchvision's vit_b_16: pre-LN encoder, class token, linear classifier, no dropout. */
export function vitArchitecture(shape: { hiddenSize: number; layers: number; heads: number; ffnSize: number; patchSize: number; imageSize: number; classes: number }): TransformerArchitecture {
  return {
    kind: "encoder",
    hiddenSize: shape.hiddenSize,
    layers: shape.layers,
    heads: shape.heads,
    kvHeads: shape.heads,
    headDim: shape.hiddenSize / shape.heads,
    ffnSize: shape.ffnSize,
    ffn: "mlp",
    vocabSize: 0,
    positions: "learned",
    maxPositions: (shape.imageSize / shape.patchSize) ** 2 + 1,
    tokenTypes: 0,
    norm: "layernorm",
    bias: true,
    tieEmbeddings: false,
    embeddingNorm: false,
    finalNorm: true,
    head: shape.classes > 0 ? "classifier" : "none",
    classes: shape.classes,
    dropout: 0,
    attentionDropout: 0,
    vision: { imageSize: shape.imageSize, patchSize: shape.patchSize, channels: 3 },
  };
}

/** The shape of a Llama-style decoder (Llama 3, Qwen2/3, Gemma 2/3, Phi-3, Mixtral), as config.json gives it. */
export interface DecoderShape {
  hiddenSize: number;
  layers: number;
  heads: number;
  kvHeads: number;
  /** Width of a head when the config gives it (`head_dim`); otherwise hiddenSize / heads. */
  headDim?: number;
  ffnSize: number;
  vocabSize: number;
  maxPositions: number;
  tieEmbeddings: boolean;
}

function llamaLike(shape: DecoderShape): TransformerArchitecture {
  return { ...llamaArchitecture(shape), headDim: shape.headDim ?? shape.hiddenSize / shape.heads, tieEmbeddings: shape.tieEmbeddings };
}

/** Llama 3.1/3.2 (Meta's model cards): Llama with grouped-query attention; the 3.2 1B/3B tie their embeddings. */
export function llama3Architecture(shape: DecoderShape): TransformerArchitecture {
  return llamaLike(shape);
}

/** Qwen2/2.5 (Qwen2 technical report, §2.1): Llama with biases on Q, K and V ("QKV bias"). */
export function qwen2Architecture(shape: DecoderShape): TransformerArchitecture {
  return { ...llamaLike(shape), qkvBias: true };
}

/** Qwen3 (Qwen3 technical report, §2): Qwen2 without the QKV bias, with an RMSNorm on each head's queries and keys. */
export function qwen3Architecture(shape: DecoderShape): TransformerArchitecture {
  return { ...llamaLike(shape), qkNorm: true };
}

/**
 * Gemma 2 (Gemma Team 2024, §2): GeGLU FFN, explicit head width, a norm before and after both
 * attention and the FFN, tied 256k embeddings, and local (sliding-window) attention on every
 * other layer — layers 0, 2, 4, … as Hugging Face's Gemma2 (`not layer_idx % 2`).
 */
export function gemma2Architecture(shape: DecoderShape, window: number): TransformerArchitecture {
  const layers = Array.from({ length: shape.layers }, (_, i) => i).filter((i) => i % 2 === 0);
  return { ...llamaLike(shape), sandwichNorms: true, finalLogitSoftcap: true, slidingWindow: { tokens: window, layers } };
}

/**
 * Gemma 3 (Gemma Team 2025, §2.1): Gemma 2's layout with Q/K norms and five local layers for
 * every global one (`sliding_window_pattern` 6: layer i is local unless (i + 1) % 6 == 0).
 */
export function gemma3Architecture(shape: DecoderShape, window: number, slidingLayers: number[]): TransformerArchitecture {
  return { ...llamaLike(shape), sandwichNorms: true, qkNorm: true, slidingWindow: { tokens: window, layers: slidingLayers } };
}

/** Phi-3 (Abdin et al. 2024, §2): Llama's layout with fused `qkv_proj` and `gate_up_proj` matrices. */
export function phi3Architecture(shape: DecoderShape): TransformerArchitecture {
  return { ...llamaLike(shape), fusedQkv: true, fusedGateUp: true };
}

/**
 * Mixtral (Jiang et al. 2024, §2): Mistral with each FFN replaced by `count` SwiGLU experts and a
 * router sending every token to `perToken` of them.
 */
export function mixtralArchitecture(shape: DecoderShape, experts: { count: number; perToken: number }): TransformerArchitecture {
  return { ...llamaLike(shape), experts };
}
