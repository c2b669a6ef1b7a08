// The workload kinds a MemoryPlan can be built from.
import type { TransformerArchitecture } from "./transformer.js";
import type { CnnNetwork } from "./cnn.js";
import type { UNetConfig } from "./unet.js";

export type { TransformerArchitecture } from "./transformer.js";
export type { CnnLayer, CnnNetwork } from "./cnn.js";
export type { UNetConfig } from "./unet.js";

/**
 * A raw affine workload: a model of `parameterCount` parameters (weights, gradients and optimizer
 * states follow from the precision and optimizer) plus `perSampleBytes` of activations for each
 * sample and `fixedBytes` of anything else.
 */
export interface AffineWorkload {
  kind: "affine";
  parameterCount: number;
  perSampleBytes: number;
  fixedBytes: number;
}

/** A transformer (BERT, GPT-2, Llama, ViT, …) described by its configuration. */
export interface TransformerWorkload {
  kind: "transformer";
  /** A preset name, or where the description came from (`config.json`). */
  name: string;
  architecture: TransformerArchitecture;
}

/** A convolutional network described by its layers. */
export interface CnnWorkload {
  kind: "cnn";
  name: string;
  network: CnnNetwork;
}

/** A diffusion UNet (diffusers' UNet2DConditionModel: Stable Diffusion) described by its configuration. */
export interface UNetWorkload {
  kind: "unet";
  name: string;
  network: UNetConfig;
}

export type Workload = AffineWorkload | TransformerWorkload | CnnWorkload | UNetWorkload;

/** Whether the workload has attention layers (`--attention` applies). */
export function hasAttention(workload: Workload): boolean {
  return workload.kind === "transformer" || workload.kind === "unet";
}
