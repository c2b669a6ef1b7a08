// Quantized weights and KV caches: bytes per weight with their quantization constants, and the dequantization buffer.
import { invalidArgument } from "../errors.js";
import { layerLinears, type LayerLinear, type ParameterGroup, type TransformerArchitecture } from "../workload/transformer.js";
import type { Precision } from "./bytesPerParameter.js";

/** `--weights`: the storage format of the layers' linear weights. */
export const WEIGHT_FORMATS = ["fp16", "bf16", "fp8", "int8", "nf4", "int4"] as const;
export type WeightFormat = (typeof WEIGHT_FORMATS)[number];

/** `--kv-cache`: the storage format of the KV cache. */
export const KV_CACHE_FORMATS = ["fp16", "fp8", "int8"] as const;
export type KvCacheFormat = (typeof KV_CACHE_FORMATS)[number];

/** The formats whose weights are frozen integers or floats of 8 bits or fewer: they cannot be trained, only adapted. */
export function isQuantized(format: WeightFormat | undefined): boolean {
  return format === "fp8" || format === "int8" || format === "nf4" || format === "int4";
}

/** NF4 blocks: 64 weights share one absmax (QLoRA, Dettmers et al. 2023, §3 "Double Quantization"). */
export const NF4_BLOCK = 64;
/** Double quantization: 256 first-level absmax constants share one fp32 second-level constant (same section). */
export const NF4_SECOND_LEVEL_BLOCK = 256;
/** GPTQ (Frantar et al. 2023) and AWQ (Lin et al. 2024): one scale and zero point per 128 input channels of an output row. */
export const INT4_GROUP = 128;

/**
 * Bytes of one `inFeatures × outFeatures` weight matrix stored as `format`, its quantization
 * constants included:
 * - `fp16`/`bf16`: 2 bytes a weight.
 * - `fp8` (E4M3, as vLLM, TensorRT-LLM and llm-compressor store it): 1 byte a weight and one fp32
 *   scale per matrix.
 * - `int8` (LLM.int8(), Dettmers et al. 2022, §3.2 vector-wise quantization; bitsandbytes'
 *   `Int8Params`): 1 byte a weight and an fp32 absmax per output row (`SCB`).
 * - `nf4` with double quantization (QLoRA, Dettmers et al. 2023, §3): 4 bits a weight, an 8-bit
 *   absmax per block of 64 and an fp32 constant per 256 blocks: 4 + 8/64 + 32/(64·256) = 4.127
 *   bits a weight, as the paper gives it.
 * - `int4` (GPTQ/AWQ, group 128, the packed layout of AutoGPTQ and AutoAWQ): 4 bits a weight and,
 *   per group of 128 input channels of each output row, an fp16 scale and a 4-bit zero point:
 *   4 + (16 + 4)/128 = 4.156 bits a weight. (GPTQ's act-order index, one int32 per input channel,
 *   adds 32/out bits, under 0.01, and is left out.)
 */
export function quantizedMatrixBytes(format: WeightFormat, inFeatures: number, outFeatures: number): number {
  const n = inFeatures * outFeatures;
  switch (format) {
    case "fp16":
    case "bf16":
      return 2 * n;
    case "fp8":
      return n + 4;
    case "int8":
      return n + 4 * outFeatures;
    case "nf4": {
      const blocks = Math.ceil(n / NF4_BLOCK);
      return Math.ceil(n / 2) + blocks + 4 * Math.ceil(blocks / NF4_SECOND_LEVEL_BLOCK);
    }
    case "int4": {
      const groups = Math.ceil(inFeatures / INT4_GROUP) * outFeatures;
      return Math.ceil(n / 2) + 2 * groups + Math.ceil(groups / 2);
    }
  }
}

/** Bits a weight takes in `format`, constants included, for a matrix of that shape. */
export function bitsPerWeight(format: WeightFormat, inFeatures: number, outFeatures: number): number {
  return (8 * quantizedMatrixBytes(format, inFeatures, outFeatures)) / (inFeatures * outFeatures);
}

/** The weight format a setup stores: `--weights`, or the precision's (fp32, or 16-bit for fp16/bf16/amp). */
export function weightFormatOf(precision: Precision, weights: WeightFormat | undefined): WeightFormat | "fp32" {
  if (weights !== undefined) return weights;
  return precision === "fp32" ? "fp32" : precision === "bf16" ? "bf16" : "fp16";
}

/**
 * The parameter groups with their weight bytes in `format`: each layer's linear matrices in the
 * format, and everything else — embeddings, norms, biases, a mixture of experts' router, the LM
 * head — in the precision's dtype (`otherBytes` a parameter). That is what the libraries keep in
 * 16 bits: bitsandbytes through transformers converts `nn.Linear` layers but skips `lm_head`
 * (`llm_int8_skip_modules`, `get_keys_to_not_convert`); AutoGPTQ/AutoAWQ quantize the decoder
 * layers' projections only; embeddings and norms are not linear layers. Groups without linear
 * layers keep their bytes.
 */
export function quantizedGroups(arch: TransformerArchitecture, groups: readonly ParameterGroup[], format: WeightFormat, otherBytes: number): ParameterGroup[] {
  const linears = layerLinears(arch);
  const bytesOf = (list: LayerLinear[]) =>
    list.reduce((sum, l) => sum + l.copies * (quantizedMatrixBytes(format, l.inFeatures, l.outFeatures) + (l.bias ? otherBytes * l.outFeatures : 0)), 0);
  const weightsOf = (list: LayerLinear[]) => list.reduce((sum, l) => sum + l.copies * (l.inFeatures * l.outFeatures + (l.bias ? l.outFeatures : 0)), 0);
  const shared = linears.filter((l) => !l.expert);
  const experts = linears.filter((l) => l.expert);
  return groups.map((group) => {
    if (!group.name.startsWith("layers.")) return group;
    const part = group.experts ? experts : shared;
    const linearParameters = weightsOf(part);
    return { ...group, weightBytes: bytesOf(part) + otherBytes * (group.count - linearParameters) };
  });
}

/**
 * The 16-bit copy of one quantized matrix that exists while its layer runs: bitsandbytes'
 * `dequantize_4bit` in `MatMul4Bit` (forward and backward), AutoAWQ's GEMM path from 1024 tokens
 * on and ExLlamaV2's `temp_dq` for GPTQ, bitsandbytes' int8 backward (`MatMul8bitLt` rebuilds
 * `CB × SCB / 127`). The largest matrix sets it. None for fp8 (native FP8 matrix multiplies on
 * Hopper and Ada), nor for int8 inference (int8 GEMM).
 */
export function dequantizationBufferBytes(arch: TransformerArchitecture, format: WeightFormat, training: boolean): number {
  if (!(format === "nf4" || format === "int4" || (format === "int8" && training))) return 0;
  return layerLinears(arch).reduce((largest, l) => Math.max(largest, 2 * l.inFeatures * l.outFeatures), 0);
}

/** Bytes of one KV-cache element: `--kv-cache`, or the activations' (`e`). fp8/int8 caches keep a per-tensor scale, negligible. */
export function kvElementBytes(format: KvCacheFormat | undefined, e: number): number {
  if (format === undefined) return e;
  return format === "fp16" ? 2 : 1;
}

/** Parses `--weights`. */
export function parseWeightFormat(text: string): WeightFormat {
  if ((WEIGHT_FORMATS as readonly string[]).includes(text)) return text as WeightFormat;
  throw invalidArgument("--weights", text, `one of ${WEIGHT_FORMATS.join(", ")}`);
}

/** Parses `--kv-cache`. */
export function parseKvCacheFormat(text: string): KvCacheFormat {
  if ((KV_CACHE_FORMATS as readonly string[]).includes(text)) return text as KvCacheFormat;
  throw invalidArgument("--kv-cache", text, `one of ${KV_CACHE_FORMATS.join(", ")}`);
}
