// Offloading model states to host memory (ZeRO-Offload, ZeRO-Infinity): what leaves the GPU and what the host holds.
import { optimizerStates, weightBytes, type Optimizer, type Precision } from "./bytesPerParameter.js";

/**
 * `optimizer`: ZeRO-Offload (Ren et al. 2021): gradients stream to the host, where the fp32
 * master weights and optimizer states live and the optimizer steps on the CPU; the 16-bit
 * weights stay on the GPU. `params`: ZeRO-Infinity's parameter offload (Rajbhandari et al. 2021),
 * ZeRO stage 3 only when training; for inference the weights stream in layer by layer.
 * `both`: the two together.
 */
export const OFFLOAD_KINDS = ["none", "optimizer", "params", "both"] as const;
export type Offload = (typeof OFFLOAD_KINDS)[number];

export function offloads(offload: Offload): { optimizer: boolean; params: boolean } {
  return {
    optimizer: offload === "optimizer" || offload === "both",
    params: offload === "params" || offload === "both",
  };
}

/** One tensor the host keeps per parameter tensor when the optimizer is offloaded. */
export interface HostState {
  /** `grads`, `master`, `weights_copy`, `exp_avg`, … */
  name: string;
  category: "gradients" | "optimizerStates";
  bytesPerParameter: number;
}

/**
 * What the host holds per parameter under optimizer offload, as DeepSpeed's CPU optimizer keeps it
 * (docs/memory-model.md, "Offloading"):
 * - gradients in fp32 under `amp` (DeepSpeed converts the 16-bit gradients to fp32 for the CPU
 *   Adam step: "16b for fp32: 4b params, 4b grads, 4b momentum and 4b variance", DeepSpeed's
 *   memory documentation), otherwise in the weights' dtype;
 * - the optimizer states of `optimizerStates()`: under `amp` the fp32 master copy and fp32 states;
 * - for `fp32`/`fp16`/`bf16`, which have no master copy, a copy of the weights for the CPU
 *   optimizer to update (`weights_copy`).
 * amp + Adam: 4 + 4 + 4 + 4 = 16 bytes, DeepSpeed's multiplier (Ren et al. 2021 count the
 * gradients in fp16: 14).
 */
export function hostOptimizerStates(precision: Precision, optimizer: Optimizer): HostState[] {
  const gradientBytes = precision === "amp" ? 4 : weightBytes(precision);
  const states: HostState[] = [{ name: "grads", category: "gradients", bytesPerParameter: gradientBytes }];
  if (precision !== "amp") states.push({ name: "weights_copy", category: "optimizerStates", bytesPerParameter: weightBytes(precision) });
  for (const s of optimizerStates(precision, optimizer)) states.push({ name: s.name, category: "optimizerStates", bytesPerParameter: s.bytesPerParameter });
  return states;
}

/** Bytes per parameter the host holds (before ZeRO partitioning): optimizer offload, plus the weights under parameter offload. */
export function hostBytesPerParameter(precision: Precision, optimizer: Optimizer, offload: Offload): number {
  const what = offloads(offload);
  const optimizerBytes = what.optimizer ? hostOptimizerStates(precision, optimizer).reduce((sum, s) => sum + s.bytesPerParameter, 0) : 0;
  return optimizerBytes + (what.params ? weightBytes(precision) : 0);
}
