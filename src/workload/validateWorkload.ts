// The library's checks of a Workload and of resolveWorkload's input, with the limits the readers apply.
import { object, shown, rejectUnknown, integer, bytes, oneOf, boolean, string, optionalFields } from "../checks.js";
import { formatLimit } from "../count.js";
import { invalidArgument } from "../errors.js";
import { cnnLayerCount, readCnnLayer } from "./cnnLayers.js";
import { FieldReader } from "./fields.js";
import { LIMITS, checkTransformerLimits, jsonValueDepth } from "./limits.js";
import type { Workload } from "./workload.js";

/** A transformer's architecture, field by field, with the limits the readers apply. */
function validateArchitecture(label: string, value: unknown): void {
  const arch = FieldReader.root(label, object(label, value));
  const required = ["kind", "hiddenSize", "layers", "heads", "kvHeads", "headDim", "ffnSize", "ffn", "vocabSize", "positions", "maxPositions", "tokenTypes", "norm", "bias", "tieEmbeddings", "embeddingNorm", "finalNorm", "head", "classes", "dropout", "attentionDropout"];
  for (const key of required) if (!arch.has(key)) throw arch.fail(key, "a value (every field of TransformerArchitecture but the optional ones)", undefined);
  arch.oneOf("kind", ["decoder", "encoder"]);
  arch.count("hiddenSize");
  const layers = arch.count("layers", { max: LIMITS.transformerLayers, what: "a transformer's layers" });
  const heads = arch.count("heads");
  const kvHeads = arch.count("kvHeads");
  if (heads % kvHeads !== 0) throw arch.fail("kvHeads", `a divisor of heads (${heads})`);
  arch.count("headDim");
  arch.count("ffnSize");
  arch.oneOf("ffn", ["mlp", "gated"]);
  arch.count("vocabSize", { min: 0 });
  arch.oneOf("positions", ["learned", "rotary"]);
  arch.count("maxPositions");
  arch.count("tokenTypes", { min: 0 });
  arch.oneOf("norm", ["layernorm", "rmsnorm"]);
  for (const flag of ["bias", "tieEmbeddings", "embeddingNorm", "finalNorm"]) arch.boolean(flag, false);
  arch.oneOf("head", ["lm", "pooler", "classifier", "none"]);
  arch.count("classes", { min: 0 });
  arch.probability("dropout", 0);
  arch.probability("attentionDropout", 0);
  for (const flag of ["qkvBias", "qkNorm", "sandwichNorms", "fusedQkv", "fusedGateUp", "finalLogitSoftcap"]) arch.boolean(flag, false);
  if (arch.has("vision")) {
    const vision = arch.child("vision");
    vision.count("imageSize");
    vision.count("patchSize");
    vision.count("channels");
  }
  if (arch.has("slidingWindow")) {
    const window = arch.child("slidingWindow");
    window.count("tokens");
    const indices = window.object.layers;
    if (!Array.isArray(indices) || indices.some((i) => !Number.isSafeInteger(i) || i < 0 || i >= layers)) {
      throw window.fail("layers", `an array of layer indices from 0 to ${layers - 1}`);
    }
  }
  if (arch.has("experts")) {
    const experts = arch.child("experts");
    const count = experts.count("count");
    experts.count("perToken", { max: count, expected: `a whole number from 1 to the ${count} experts` });
  }
  checkTransformerLimits((key) => arch.label(key), "layers", value as never);
}

/** A CNN network: its counts and every layer (nested ones included, within the layer limit), read as a --spec file's are. */
function validateNetwork(label: string, value: unknown): void {
  const network = FieldReader.root(label, object(label, value));
  network.rejectUnknown(["channels", "imageSize", "classes", "layers"]);
  network.count("channels");
  network.count("imageSize");
  network.count("classes", { min: 0 });
  if (cnnLayerCount(network.object.layers) > LIMITS.cnnLayers) throw network.fail("layers", `at most ${formatLimit(LIMITS.cnnLayers)} layers, nested ones included (vramfit's limit)`, `more than ${LIMITS.cnnLayers} layers`);
  for (const layer of network.objects("layers")) readCnnLayer(layer, true);
}

/**
 * A Workload as `planMemory`, `advise` and `gpusFit` take it: one of the three kinds, every field
 * of the right type and within the input limits (docs/reliability.md).
 */
export function validateWorkload(value: unknown, label = "workload"): asserts value is Workload {
  const workload = object(label, value);
  oneOf(`${label}.kind`, workload.kind, ["affine", "transformer", "cnn", "unet"]);
  if (jsonValueDepth(workload) > LIMITS.jsonDepth) throw invalidArgument(label, `nested more than ${LIMITS.jsonDepth} levels deep`, `at most ${LIMITS.jsonDepth} levels of nested arrays and objects (vramfit's input limit)`);
  switch (workload.kind) {
    case "affine":
      rejectUnknown(label, workload, ["kind", "parameterCount", "perSampleBytes", "fixedBytes"]);
      integer(`${label}.parameterCount`, workload.parameterCount, 0, LIMITS.parameters, "a model's parameters");
      bytes(`${label}.perSampleBytes`, workload.perSampleBytes);
      bytes(`${label}.fixedBytes`, workload.fixedBytes);
      return;
    case "transformer":
      rejectUnknown(label, workload, ["kind", "name", "architecture"]);
      string(`${label}.name`, workload.name);
      validateArchitecture(`${label}.architecture`, workload.architecture);
      return;
    case "cnn":
      rejectUnknown(label, workload, ["kind", "name", "network"]);
      string(`${label}.name`, workload.name);
      validateNetwork(`${label}.network`, workload.network);
      return;
    case "unet":
      rejectUnknown(label, workload, ["kind", "name", "network"]);
      string(`${label}.name`, workload.name);
      validateUNet(`${label}.network`, workload.network);
  }
}

/** A diffusion UNet's configuration (UNetConfig): its counts, and one entry per block in each list. */
function validateUNet(label: string, value: unknown): void {
  const unet = FieldReader.root(label, object(label, value));
  const fields = ["inChannels", "outChannels", "blockOutChannels", "layersPerBlock", "crossAttentionDim", "contextTokens", "heads", "downAttention", "upAttention", "normGroups", "upcastAttention", "sampleSize", "vaeScale"];
  unet.rejectUnknown(fields);
  for (const key of fields) if (!unet.has(key)) throw unet.fail(key, "a value (every field of UNetConfig)", undefined);
  const dimension = { max: LIMITS.dimension, what: "a dimension" };
  for (const key of ["inChannels", "outChannels", "crossAttentionDim", "contextTokens", "normGroups", "sampleSize", "vaeScale"]) unet.count(key, dimension);
  unet.count("layersPerBlock", { max: LIMITS.transformerLayers, what: "a UNet block's layers" });
  unet.boolean("upcastAttention", false);
  const blocks = unet.object.blockOutChannels;
  if (!Array.isArray(blocks) || blocks.length === 0 || blocks.length > 16) throw unet.fail("blockOutChannels", "an array of 1 to 16 channel counts");
  const groups = unet.object.normGroups as number;
  for (const [key, check] of [
    ["blockOutChannels", (v: unknown) => Number.isSafeInteger(v) && (v as number) >= 1 && (v as number) <= LIMITS.dimension && (v as number) % groups === 0],
    ["heads", (v: unknown) => Number.isSafeInteger(v) && (v as number) >= 1],
    ["downAttention", (v: unknown) => typeof v === "boolean"],
    ["upAttention", (v: unknown) => typeof v === "boolean"],
  ] as const) {
    const list = unet.object[key];
    if (!Array.isArray(list) || list.length !== blocks.length || !list.every(check)) {
      throw unet.fail(key, `an array of ${blocks.length} entries (one per block)${key === "blockOutChannels" ? `, each a multiple of normGroups (${groups})` : ""}`);
    }
  }
  (unet.object.blockOutChannels as number[]).forEach((c, i) => {
    if (c % (unet.object.heads as number[])[i]! !== 0) throw unet.fail("heads", `a divisor of each block's channels (${c})`);
  });
}

/** A file's path (the library reads it), or `{ path, json }` already read. */
function parsedFileOrPath(label: string, value: unknown): void {
  if (typeof value === "string") return void string(label, value);
  const file = object(label, value);
  rejectUnknown(label, file, ["path", "json"]);
  string(`${label}.path`, file.path);
}

/** `resolveWorkload(input)`: one object of the CLI's workload options. */
export function validateWorkloadInput(value: unknown): void {
  const input = object("input", value);
  rejectUnknown("input", input, ["model", "hfConfig", "spec", "params", "perSample", "fixed"]);
  optionalFields("input", input, {
    model: string,
    hfConfig: parsedFileOrPath,
    spec: parsedFileOrPath,
  });
  for (const key of ["params", "perSample", "fixed"]) {
    const v = input[key];
    if (v !== undefined && typeof v !== "string" && typeof v !== "number") throw invalidArgument(`input.${key}`, shown(v), "a string or a number");
  }
}
