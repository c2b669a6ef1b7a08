// LoRA adapters (Hu et al. 2022) as PEFT adds them: which projections, how many trainable parameters, what they save.
import { invalidArgument } from "../errors.js";
import { layerLinears, PROJECTIONS, type LayerLinear, type Projection, type TransformerArchitecture } from "../workload/transformer.js";

/** `--lora-targets`: projections by PEFT's short names, or `all-linear`. */
export const LORA_TARGET_NAMES = [...PROJECTIONS, "all-linear"] as const;

/** Adapters on a transformer's projections: `rank` r, on the layers' linear matrices that compute one of `targets`. */
export interface LoraSetup {
  rank: number;
  targets: Projection[];
}

/** PEFT's default targets for Llama-style models (`q_proj`, `v_proj`: its TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING). */
export const DEFAULT_LORA_TARGETS: Projection[] = ["q", "v"];

/**
 * Parses `--lora-targets q,k,v,o,gate,up,down` or `all-linear`. PEFT's `all-linear` adapts every
 * linear layer but the output layer; here, the seven projections (a mixture of experts' router,
 * which PEFT would adapt too, stays frozen: 4,096 × 8 weights a layer in Mixtral).
 */
export function parseLoraTargets(text: string): Projection[] {
  const names = text.split(",").map((t) => t.trim());
  if (names.includes("all-linear")) {
    if (names.length > 1) throw invalidArgument("--lora-targets", text, "all-linear alone, or a list of q, k, v, o, gate, up, down");
    return [...PROJECTIONS];
  }
  const targets: Projection[] = [];
  for (const name of names) {
    if (!(PROJECTIONS as readonly string[]).includes(name)) throw invalidArgument("--lora-targets", text, `a comma-separated list of ${PROJECTIONS.join(", ")}, or all-linear`);
    if (!targets.includes(name as Projection)) targets.push(name as Projection);
  }
  return targets;
}

/**
 * The matrices of a layer that get an adapter: those computing a targeted projection. A fused
 * matrix (Phi-3's `qkv_proj`, `gate_up_proj`; GPT-2's `c_attn`) is one module to PEFT, so
 * targeting any of its projections adapts the whole matrix.
 */
export function adaptedLinears(arch: TransformerArchitecture, lora: LoraSetup): LayerLinear[] {
  return layerLinears(arch).filter((l) => l.projections.some((p) => lora.targets.includes(p)));
}

/** Adapter parameters of one layer: `r × (in + out)` per adapted matrix (A is in × r, B is r × out; no biases), per expert. */
export function loraLayerParameters(arch: TransformerArchitecture, lora: LoraSetup): number {
  return adaptedLinears(arch, lora).reduce((sum, l) => sum + l.copies * lora.rank * (l.inFeatures + l.outFeatures), 0);
}

/** The trainable parameters PEFT's `print_trainable_parameters()` reports for these adapters. */
export function loraParameterCount(arch: TransformerArchitecture, lora: LoraSetup): number {
  return arch.layers * loraLayerParameters(arch, lora);
}

/** Whether a projection's input is saved for backward: only when a matrix computing it is adapted (a frozen linear saves nothing). */
export function savesInputOf(arch: TransformerArchitecture, lora: LoraSetup | undefined, projection: Projection): boolean {
  if (lora === undefined) return true;
  return adaptedLinears(arch, lora).some((l) => l.projections.includes(projection));
}
