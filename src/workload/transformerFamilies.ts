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
  };
}

/** GPT-2 (Radford et al. 2019) and GPT-3 (Brown et al. 2020): pre-LN decoder, learned positions, tied LM head. */
export function gptArchitecture(shape: { hiddenSize: number; layers: number; heads: number; maxPositions: number }): TransformerArchitecture {
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
