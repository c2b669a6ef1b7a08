// Reads a Hugging Face config.json (BERT, GPT-2, Llama, Mistral, ViT) into a transformer workload.
import { invalidArgument } from "../errors.js";
import { FieldReader } from "./fields.js";
import type { TransformerArchitecture } from "./transformer.js";
import { bertArchitecture, gptArchitecture, llamaArchitecture, vitArchitecture } from "./transformerFamilies.js";
import type { TransformerWorkload } from "./workload.js";

export const HF_MODEL_TYPES = ["bert", "gpt2", "llama", "mistral", "vit"] as const;
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
    ...gptArchitecture({ hiddenSize, layers: config.countOf(LAYERS), heads, maxPositions }),
    headDim: headDim(config, hiddenSize, heads),
    // n_inner: null means 4 × n_embd.
    ffnSize: config.countOf(["n_inner", "intermediate_size"], { fallback: 4 * hiddenSize }),
    vocabSize: config.count("vocab_size"),
    tieEmbeddings: config.boolean("tie_word_embeddings", true),
    dropout: config.probability("resid_pdrop", 0.1),
    attentionDropout: config.probability("attn_pdrop", 0.1),
  };
}

function llama(config: FieldReader): TransformerArchitecture {
  const hiddenSize = config.countOf(HIDDEN);
  const heads = config.countOf(HEADS);
  const kvHeads = config.count("num_key_value_heads", { fallback: heads });
  if (heads % kvHeads !== 0) throw config.fail("num_key_value_heads", `a divisor of num_attention_heads (${heads})`);
  const act = config.string("hidden_act", "silu");
  if (!["silu", "swish", "gelu", "gelu_pytorch_tanh"].includes(act)) throw config.fail("hidden_act", "silu (or gelu) for a gated feed-forward network");
  const shape = {
    hiddenSize,
    layers: config.countOf(LAYERS),
    heads,
    kvHeads,
    ffnSize: config.count("intermediate_size"),
    vocabSize: config.count("vocab_size"),
    maxPositions: config.count("max_position_embeddings"),
  };
  return {
    ...llamaArchitecture(shape),
    headDim: headDim(config, hiddenSize, heads),
    // One flag for every linear: attention_bias/mlp_bias are rare and their biases < 0.01% of the weights.
    bias: config.boolean("attention_bias", false) || config.boolean("mlp_bias", false),
    tieEmbeddings: config.boolean("tie_word_embeddings", false),
    attentionDropout: config.probability("attention_dropout", 0),
  };
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
  const modelType = config.oneOf<HfModelType>("model_type", HF_MODEL_TYPES);
  const architecture = { bert, gpt2, llama, mistral: llama, vit }[modelType](config);
  const named = config.has("_name_or_path") && typeof config.object._name_or_path === "string" && config.object._name_or_path !== "" ? String(config.object._name_or_path) : path;
  return { kind: "transformer", name: named, architecture };
}
