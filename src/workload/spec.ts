// Reads a `--spec` JSON file: a custom transformer, a custom CNN (a list of layers) or a raw affine workload.
import { invalidArgument } from "../errors.js";
import { parseBytes } from "../units.js";
import { CnnShapeError, traceCnn, type CnnNetwork } from "./cnn.js";
import { cnnLayerCount, readCnnLayer } from "./cnnLayers.js";
import { FieldReader } from "./fields.js";
import { LIMITS, checkParameterCount, checkTransformerLimits, countExpected } from "./limits.js";
import type { TransformerArchitecture } from "./transformer.js";
import type { Workload } from "./workload.js";

export const SPEC_KINDS = ["transformer", "cnn", "affine"] as const;

const TRANSFORMER_FIELDS = [
  "kind",
  "name",
  "type",
  "hiddenSize",
  "layers",
  "heads",
  "kvHeads",
  "headDim",
  "ffnSize",
  "ffn",
  "vocabSize",
  "positions",
  "maxPositions",
  "tokenTypes",
  "norm",
  "bias",
  "tieEmbeddings",
  "embeddingNorm",
  "finalNorm",
  "head",
  "classes",
  "dropout",
  "attentionDropout",
  "image",
] as const;

function transformer(spec: FieldReader): Workload {
  spec.rejectUnknown(TRANSFORMER_FIELDS);
  const type = spec.oneOf("type", ["decoder", "encoder"] as const, "decoder");
  const hiddenSize = spec.count("hiddenSize");
  const heads = spec.count("heads");
  const kvHeads = spec.count("kvHeads", { fallback: heads });
  if (heads % kvHeads !== 0) throw spec.fail("kvHeads", `a divisor of heads (${heads})`);
  if (!spec.has("headDim") && hiddenSize % heads !== 0) throw spec.fail("heads", `a divisor of hiddenSize (${hiddenSize}), or give headDim`);
  const headDim = spec.count("headDim", { fallback: hiddenSize / heads });

  // A vision transformer: the image is cut into patch² patches plus a class token.
  let vision: TransformerArchitecture["vision"];
  if (spec.has("image")) {
    const image = spec.child("image");
    image.rejectUnknown(["size", "patch", "channels"]);
    const imageSize = image.count("size");
    const patchSize = image.count("patch");
    if (imageSize % patchSize !== 0) throw image.fail("patch", `a divisor of image.size (${imageSize})`);
    vision = { imageSize, patchSize, channels: image.count("channels", { fallback: 3 }) };
  }
  const vocabSize = vision ? spec.count("vocabSize", { min: 0, fallback: 0 }) : spec.count("vocabSize");
  const positions = vision ? "learned" : spec.oneOf("positions", ["learned", "rotary"] as const, "rotary");
  const maxPositions = vision ? (vision.imageSize / vision.patchSize) ** 2 + 1 : spec.count("maxPositions");

  const head = spec.oneOf("head", ["lm", "pooler", "classifier", "none"] as const, type === "decoder" ? "lm" : "none");
  if (head === "lm" && vocabSize === 0) throw spec.fail("head", `a head other than "lm" for a model without a vocabulary`, head);
  const classes = head === "classifier" ? spec.count("classes") : spec.count("classes", { min: 0, fallback: 0 });
  const architecture: TransformerArchitecture = {
    kind: type,
    hiddenSize,
    layers: spec.count("layers"),
    heads,
    kvHeads,
    headDim,
    ffnSize: spec.count("ffnSize", { fallback: 4 * hiddenSize }),
    ffn: spec.oneOf("ffn", ["mlp", "gated"] as const, "mlp"),
    vocabSize,
    positions,
    maxPositions,
    tokenTypes: spec.count("tokenTypes", { min: 0, fallback: 0 }),
    norm: spec.oneOf("norm", ["layernorm", "rmsnorm"] as const, "layernorm"),
    bias: spec.boolean("bias", true),
    tieEmbeddings: spec.boolean("tieEmbeddings", false),
    embeddingNorm: spec.boolean("embeddingNorm", false),
    finalNorm: spec.boolean("finalNorm", true),
    head,
    classes,
    dropout: spec.probability("dropout", 0),
    attentionDropout: spec.probability("attentionDropout", 0),
    ...(vision ? { vision } : {}),
  };
  checkTransformerLimits((key) => spec.label(key), "layers", architecture);
  return { kind: "transformer", name: spec.string("name", spec.file), architecture };
}

function cnn(spec: FieldReader): Workload {
  spec.rejectUnknown(["kind", "name", "channels", "imageSize", "classes", "layers"]);
  const layerCount = cnnLayerCount(spec.object.layers);
  if (layerCount > LIMITS.cnnLayers) throw spec.fail("layers", countExpected(1, LIMITS.cnnLayers, "a CNN's layers, nested ones included"), `more than ${LIMITS.cnnLayers} layers`);
  const network: CnnNetwork = {
    channels: spec.count("channels", { fallback: 3 }),
    imageSize: spec.count("imageSize", { fallback: 224 }),
    classes: spec.count("classes", { min: 0, fallback: 0 }),
    layers: spec.objects("layers").map((layer) => readCnnLayer(layer)),
  };
  try {
    checkParameterCount(spec.label("the model"), traceCnn(network, network.imageSize).parameterCount);
  } catch (error) {
    if (error instanceof CnnShapeError) throw invalidArgument(spec.label(`layer ${error.layer}`), network.imageSize, `a layer that accepts the ${network.imageSize}² input (it ${error.message})`);
    throw error;
  }
  return { kind: "cnn", name: spec.string("name", spec.file), network };
}

/** A size in bytes: a JSON number of bytes, or a string such as `"1.5GiB"`. */
function size(spec: FieldReader, key: string, fallback?: number): number {
  if (!spec.has(key)) {
    if (fallback !== undefined) return fallback;
    throw spec.fail(key, "a size such as \"512MiB\" or a number of bytes", undefined);
  }
  const value = spec.object[key];
  if (typeof value === "number") {
    if (!Number.isSafeInteger(value) || value < 0) throw spec.fail(key, "a whole number of bytes ≥ 0");
    return value;
  }
  if (typeof value === "string") return parseBytes(value, spec.label(key));
  throw spec.fail(key, "a size such as \"512MiB\" or a number of bytes");
}

function affine(spec: FieldReader): Workload {
  spec.rejectUnknown(["kind", "name", "parameters", "perSampleBytes", "fixedBytes"]);
  const perSampleBytes = size(spec, "perSampleBytes");
  if (perSampleBytes <= 0) throw spec.fail("perSampleBytes", "a size above 0 (bytes each sample adds)");
  return {
    kind: "affine",
    parameterCount: spec.count("parameters", { min: 0, max: LIMITS.parameters, what: "a model's parameters" }),
    perSampleBytes,
    fixedBytes: size(spec, "fixedBytes", 0),
  };
}

/**
 * Reads a parsed `--spec` file (schema in docs/memory-model.md, "The --spec file"). `path` names
 * the file in error messages. Unknown fields are errors, so a typo cannot pass silently.
 */
export function readSpec(path: string, json: unknown): Workload {
  const spec = FieldReader.root(path, json);
  const kind = spec.oneOf("kind", SPEC_KINDS);
  switch (kind) {
    case "transformer":
      return transformer(spec);
    case "cnn":
      return cnn(spec);
    case "affine":
      return affine(spec);
  }
}
