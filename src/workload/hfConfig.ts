// Reads a Hugging Face config.json (BERT, GPT-2, Llama, Mistral, Qwen2/3, Gemma 2/3, Phi-3, Mixtral, ViT) into a transformer workload.
import { invalidArgument } from "../errors.js";
import { FieldReader } from "./fields.js";
import { LIMITS, checkTransformerLimits } from "./limits.js";
import type { TransformerArchitecture } from "./transformer.js";
import {
  bertArchitecture,
  gemma2Architecture,
  gemma3Architecture,
  gptArchitecture,
  llama3Architecture,
  mixtralArchitecture,
  phi3Architecture,
  qwen2Architecture,
  qwen3Architecture,
  vitArchitecture,
  type DecoderShape,
} from "./transformerFamilies.js";
import type { TransformerWorkload } from "./workload.js";

export const HF_MODEL_TYPES = ["bert", "gpt2", "llama", "mistral", "qwen2", "qwen3", "gemma2", "gemma3_text", "phi3", "mixtral", "vit"] as const;
type HfModelType = (typeof HF_MODEL_TYPES)[number];

/** Hidden size, layers and heads under the names each family uses. */
const HIDDEN = ["hidden_size", "n_embd"] as const;
const LAYERS = ["num_hidden_layers", "n_layer"] as const;
const HEADS = ["num_attention_heads", "n_head"] as const;

function headDim(config: FieldReader, hiddenSize: number, heads: number): number {
  if (config.has("head_dim")) return config.count("head_dim");
  if (hiddenSize % heads !== 0) {
    const key = config.firstKey(HEADS) ?? HEADS[0];
    throw config.fail(key, `a divisor of the hidden size ${hiddenSize} (or a head_dim field)`);
  }
  return hiddenSize / heads;
}

// Each reader fills its family's template (transformerFamilies.ts) with the config's fields.

function bert(config: FieldReader): TransformerArchitecture {
  const hiddenSize = config.countOf(HIDDEN);
  const heads = config.countOf(HEADS);
  const positionType = config.string("position_embedding_type", "absolute");
  if (positionType !== "absolute") throw config.fail("position_embedding_type", `"absolute" (the only kind vramfit models for BERT)`);
  return {
    // BertModel with its pooler: the model whose parameter count is published.
    ...bertArchitecture({ hiddenSize, layers: config.countOf(LAYERS), heads }),
    headDim: headDim(config, hiddenSize, heads),
    ffnSize: config.count("intermediate_size", { fallback: 4 * hiddenSize }),
    vocabSize: config.count("vocab_size"),
    maxPositions: config.count("max_position_embeddings", { fallback: 512 }),
    tokenTypes: config.count("type_vocab_size", { min: 0, fallback: 2 }),
    dropout: config.probability("hidden_dropout_prob", 0.1),
    attentionDropout: config.probability("attention_probs_dropout_prob", 0.1),
  };
}

function gpt2(config: FieldReader): TransformerArchitecture {
  const hiddenSize = config.countOf(HIDDEN);
  const heads = config.countOf(HEADS);
  const maxPositions = config.countOf(["n_positions", "max_position_embeddings", "n_ctx"]);
  return {
    // activation_function: transformers' GPT2Config default is gelu_new (NewGELUActivation, in Python ops).
    ...gptArchitecture({ hiddenSize, layers: config.countOf(LAYERS), heads, maxPositions, activation: gpt2Activation(config) }),
    headDim: headDim(config, hiddenSize, heads),
    // n_inner: null means 4 × n_embd.
    ffnSize: config.countOf(["n_inner", "intermediate_size"], { fallback: 4 * hiddenSize }),
    vocabSize: config.count("vocab_size"),
    tieEmbeddings: config.boolean("tie_word_embeddings", true),
    dropout: config.probability("resid_pdrop", 0.1),
    attentionDropout: config.probability("attn_pdrop", 0.1),
  };
}

function gpt2Activation(config: FieldReader): "gelu" | "gelu_new" {
  const act = config.string("activation_function", "gelu_new");
  if (act === "gelu_new") return "gelu_new";
  if (["gelu", "gelu_pytorch_tanh", "gelu_fast", "relu"].includes(act)) return "gelu"; // one op saving its input
  throw config.fail("activation_function", "gelu_new, gelu, gelu_pytorch_tanh, gelu_fast or relu");
}

/**
 * The fields every Llama-style decoder shares. `headDim` and `tie` are the family's defaults
 * (its configuration class's), used when the config leaves `head_dim` or `tie_word_embeddings` out.
 */
function decoderShape(config: FieldReader, defaults: { headDim?: number; tie: boolean; vocabSize?: number }): DecoderShape {
  const hiddenSize = config.countOf(HIDDEN);
  const heads = config.countOf(HEADS);
  const kvHeads = config.count("num_key_value_heads", { fallback: heads });
  if (heads % kvHeads !== 0) throw config.fail("num_key_value_heads", `a divisor of num_attention_heads (${heads})`);
  const headWidth = config.has("head_dim") || defaults.headDim === undefined ? headDim(config, hiddenSize, heads) : defaults.headDim;
  return {
    hiddenSize,
    layers: config.countOf(LAYERS),
    heads,
    kvHeads,
    headDim: headWidth,
    ffnSize: config.count("intermediate_size"),
    vocabSize: config.count("vocab_size", defaults.vocabSize !== undefined ? { fallback: defaults.vocabSize } : {}),
    maxPositions: config.count("max_position_embeddings"),
    tieEmbeddings: config.boolean("tie_word_embeddings", defaults.tie),
  };
}

/** A gated FFN's activation: SiLU (SwiGLU) or GeLU (GeGLU, Gemma); `hidden_activation` is Gemma's name for it. */
function checkGatedActivation(config: FieldReader): void {
  const key = config.firstKey(["hidden_activation", "hidden_act"]) ?? "hidden_act";
  const act = config.string(key, "silu");
  if (!["silu", "swish", "gelu", "gelu_pytorch_tanh"].includes(act)) throw config.fail(key, "silu (or gelu) for a gated feed-forward network");
}

function llama(config: FieldReader): TransformerArchitecture {
  checkGatedActivation(config);
  return {
    ...llama3Architecture(decoderShape(config, { tie: false })),
    // One flag for every linear: attention_bias/mlp_bias are rare and their biases < 0.01% of the weights.
    bias: config.boolean("attention_bias", false) || config.boolean("mlp_bias", false),
    attentionDropout: config.probability("attention_dropout", 0),
  };
}

function qwen2(config: FieldReader): TransformerArchitecture {
  checkGatedActivation(config);
  return { ...qwen2Architecture(decoderShape(config, { tie: false })), attentionDropout: config.probability("attention_dropout", 0) };
}

function qwen3(config: FieldReader): TransformerArchitecture {
  checkGatedActivation(config);
  // Qwen3Config's head_dim defaults to 128 whatever the hidden size.
  const architecture = qwen3Architecture(decoderShape(config, { headDim: 128, tie: false }));
  return { ...architecture, qkvBias: config.boolean("attention_bias", false), attentionDropout: config.probability("attention_dropout", 0) };
}

function gemma2(config: FieldReader): TransformerArchitecture {
  checkGatedActivation(config);
  const shape = decoderShape(config, { headDim: 256, tie: true, vocabSize: 256000 });
  const architecture = gemma2Architecture(shape, config.count("sliding_window", { fallback: 4096 }));
  // `final_logit_softcapping: null` turns the cap off (transformers 5.18 modeling_gemma2.py line 527).
  return { ...architecture, finalLogitSoftcap: config.has("final_logit_softcapping") ? config.object.final_logit_softcapping !== null : true };
}

/** Gemma 3's local layers: `layer_types` when the config lists them, otherwise every layer but each `sliding_window_pattern`-th. */
function gemma3SlidingLayers(config: FieldReader, layers: number): number[] {
  const types = config.object.layer_types;
  if (types !== undefined && types !== null) {
    if (!Array.isArray(types) || types.length !== layers || !types.every((t) => t === "sliding_attention" || t === "full_attention")) {
      throw config.fail("layer_types", `${layers} entries, each "sliding_attention" or "full_attention"`);
    }
    return types.flatMap((t, i) => (t === "sliding_attention" ? [i] : []));
  }
  const patternKey = config.firstKey(["sliding_window_pattern", "_sliding_window_pattern"]) ?? "sliding_window_pattern";
  const pattern = config.count(patternKey, { fallback: 6 });
  return Array.from({ length: layers }, (_, i) => i).filter((i) => (i + 1) % pattern !== 0);
}

function gemma3Text(config: FieldReader): TransformerArchitecture {
  checkGatedActivation(config);
  const shape = decoderShape(config, { headDim: 256, tie: true, vocabSize: 262208 });
  return gemma3Architecture(shape, config.count("sliding_window", { fallback: 4096 }), gemma3SlidingLayers(config, shape.layers));
}

function phi3(config: FieldReader): TransformerArchitecture {
  checkGatedActivation(config);
  return { ...phi3Architecture(decoderShape(config, { tie: false })), attentionDropout: config.probability("attention_dropout", 0) };
}

function mixtral(config: FieldReader): TransformerArchitecture {
  checkGatedActivation(config);
  const count = config.count("num_local_experts");
  const perToken = config.count("num_experts_per_tok");
  if (perToken > count) throw config.fail("num_experts_per_tok", `at most num_local_experts (${count})`);
  return { ...mixtralArchitecture(decoderShape(config, { tie: false }), { count, perToken }), attentionDropout: config.probability("attention_dropout", 0) };
}

function vit(config: FieldReader): TransformerArchitecture {
  const hiddenSize = config.countOf(HIDDEN);
  const heads = config.countOf(HEADS);
  const imageSize = config.count("image_size", { fallback: 224 });
  const patchSize = config.count("patch_size", { fallback: 16 });
  if (imageSize % patchSize !== 0) throw config.fail("patch_size", `a divisor of image_size (${imageSize})`);
  const architectures = config.has("architectures") && Array.isArray(config.object.architectures) ? (config.object.architectures as unknown[]) : [];
  const classifier = architectures.includes("ViTForImageClassification");
  let classes = 0;
  if (classifier) {
    const labels = config.object.id2label;
    classes = config.has("num_labels")
      ? config.count("num_labels")
      : labels !== null && typeof labels === "object"
        ? Object.keys(labels).length
        : 2; // PretrainedConfig's default num_labels
    if (classes < 1) throw config.fail("id2label", "at least one label for ViTForImageClassification");
  }
  const ffnSize = config.count("intermediate_size", { fallback: 4 * hiddenSize });
  return {
    ...vitArchitecture({ hiddenSize, layers: config.countOf(LAYERS), heads, ffnSize, patchSize, imageSize, classes }),
    headDim: headDim(config, hiddenSize, heads),
    bias: config.boolean("qkv_bias", true),
    // ViTForImageClassification: a linear classifier on the class token; ViTModel: its pooler.
    head: classifier ? "classifier" : "pooler",
    dropout: config.probability("hidden_dropout_prob", 0),
    attentionDropout: config.probability("attention_probs_dropout_prob", 0),
    vision: { imageSize, patchSize, channels: config.count("num_channels", { fallback: 3 }) },
  };
}

/**
 * Reads a parsed Hugging Face `config.json`. `path` names the file in error messages
 * (`config.json: num_key_value_heads: expected …`). The families and the fields read are listed
 * in docs/memory-model.md; other fields are ignored.
 */
export function readHfConfig(path: string, json: unknown): TransformerWorkload {
  const config = FieldReader.root(path, json);
  if (!config.has("model_type")) throw invalidArgument(config.label("model_type"), undefined, `one of ${HF_MODEL_TYPES.join(", ")}`);
  if (config.object.model_type === "gemma3") {
    throw config.fail("model_type", "gemma3_text: the multimodal gemma3's vision tower is not modelled; give its text_config (model_type gemma3_text) for the language model");
  }
  const modelType = config.oneOf<HfModelType>("model_type", HF_MODEL_TYPES);
  const readers = { bert, gpt2, llama, mistral: llama, qwen2, qwen3, gemma2, gemma3_text: gemma3Text, phi3, mixtral, vit };
  const architecture = readers[modelType](config);
  checkTransformerLimits((key) => config.label(key), config.firstKey(LAYERS) ?? LAYERS[0], architecture);
  const nameOrPath = config.object._name_or_path;
  // A name is for people: an absurdly long one is not shown (the file's path is).
  const named = typeof nameOrPath === "string" && nameOrPath !== "" && nameOrPath.length <= LIMITS.nameChars ? nameOrPath : path;
  return { kind: "transformer", name: named, architecture };
}
