// The one reader of a CNN's layers, for a --spec file and for the library's checks alike.
import { CNN_LAYER_FIELDS, CNN_LAYER_TYPES, type CnnLayer } from "./cnn.js";
import type { FieldReader } from "./fields.js";
import { LIMITS } from "./limits.js";

/** The fields a layer type cannot do without in the library's typed CnnLayer (a --spec file has defaults for some). */
const REQUIRED_LAYER_FIELDS: Partial<Record<CnnLayer["type"], readonly string[]>> = {
  conv: ["out", "kernel"],
  maxpool: ["kernel"],
  avgpool: ["kernel"],
  adaptiveavgpool: ["size"],
  linear: ["out"],
  dropout: ["p"],
  residual: ["body"],
};

const isEmptyList = (value: unknown): boolean => Array.isArray(value) && value.length === 0;

/**
 * One layer, normalised (defaults filled in), nested bodies and shortcuts included. `strict`: the
 * library's typed CnnLayer, where every field without a natural default must be given (a dropout's `p`);
 * a --spec file may leave it to its default. An empty `shortcut` is the identity, as no shortcut.
 */
export function readCnnLayer(layer: FieldReader, strict = false): CnnLayer {
  const type = layer.oneOf("type", CNN_LAYER_TYPES);
  layer.rejectUnknown(["type", "name", ...CNN_LAYER_FIELDS[type]]);
  if (strict) for (const key of REQUIRED_LAYER_FIELDS[type] ?? []) if (!layer.has(key)) throw layer.fail(key, "a value (it has no default)", undefined);
  const name = layer.has("name") ? { name: layer.string("name") } : {};
  switch (type) {
    case "conv":
      return {
        type,
        ...name,
        out: layer.count("out"),
        kernel: layer.count("kernel"),
        stride: layer.count("stride", { fallback: 1 }),
        padding: layer.count("padding", { min: 0, fallback: 0 }),
        dilation: layer.count("dilation", { fallback: 1 }),
        groups: layer.count("groups", { fallback: 1 }),
        bias: layer.boolean("bias", true),
      };
    case "batchnorm":
    case "flatten":
      return { type, ...name };
    case "relu":
      return { type, ...name, inplace: layer.boolean("inplace", false) };
    case "maxpool":
    case "avgpool": {
      const kernel = layer.count("kernel");
      return { type, ...name, kernel, stride: layer.count("stride", { fallback: kernel }), padding: layer.count("padding", { min: 0, fallback: 0 }) };
    }
    case "adaptiveavgpool":
      return { type, ...name, size: layer.count("size") };
    case "linear":
      return { type, ...name, out: layer.count("out"), bias: layer.boolean("bias", true) };
    case "dropout":
      return { type, ...name, p: layer.probability("p", 0.5) };
    case "residual":
      return {
        type,
        ...name,
        body: layer.objects("body").map((l) => readCnnLayer(l, strict)),
        shortcut: isEmptyList(layer.object.shortcut) ? [] : layer.optionalObjects("shortcut").map((l) => readCnnLayer(l, strict)),
        relu: layer.boolean("relu", true),
      };
  }
}

/** Layers in a CNN's raw JSON, nested bodies and shortcuts included, counted up to just past the limit. */
export function cnnLayerCount(layers: unknown): number {
  let count = 0;
  const pending: unknown[] = [layers];
  while (pending.length > 0 && count <= LIMITS.cnnLayers) {
    const list = pending.pop();
    if (!Array.isArray(list)) continue;
    count += list.length;
    for (const layer of list) {
      if (layer !== null && typeof layer === "object") pending.push((layer as { body?: unknown }).body, (layer as { shortcut?: unknown }).shortcut);
    }
  }
  return count;
}
