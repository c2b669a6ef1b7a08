// Bytes per parameter for weights, gradients and optimizer states, by precision and optimizer.

export const PRECISIONS = ["fp32", "fp16", "bf16", "amp"] as const;
export type Precision = (typeof PRECISIONS)[number];

export const OPTIMIZERS = ["sgd", "momentum", "adam", "adamw", "adam8bit"] as const;
export type Optimizer = (typeof OPTIMIZERS)[number];

export interface BytesPerParameter {
  /** The weights the forward pass reads. */
  parameters: number;
  gradients: number;
  /** Optimizer states, including an fp32 master copy of the weights under `amp`. */
  optimizerStates: number;
}

/** Bytes of one optimizer state element, by the precision states are kept in. */
function optimizerStateBytes(optimizer: Optimizer, stateElementBytes: number): number {
  switch (optimizer) {
    case "sgd":
      return 0;
    case "momentum":
      return stateElementBytes; // one momentum buffer
    case "adam":
    case "adamw":
      return 2 * stateElementBytes; // exp_avg and exp_avg_sq
    case "adam8bit":
      return 2; // two 8-bit states (bitsandbytes; block-wise quantization constants are < 0.1%)
  }
}

/**
 * The schemes (see docs/memory-model.md):
 * - `fp32`: fp32 weights and gradients, optimizer states in fp32 (Adam: 4 + 4 + 8 = 16 B).
 * - `fp16`/`bf16`: pure 16-bit training, states in the weights' dtype as `torch.optim` creates
 *   them with `zeros_like(param)` (Adam: 2 + 2 + 4 = 8 B).
 * - `amp`: mixed precision as in ZeRO (Rajbhandari et al. 2020, §3.1): 16-bit weights and
 *   gradients, an fp32 master copy and fp32 states (Adam: 2 + 2 + 12 = 16 B, "K = 12").
 */
export function bytesPerParameter(precision: Precision, optimizer: Optimizer): BytesPerParameter {
  switch (precision) {
    case "fp32":
      return { parameters: 4, gradients: 4, optimizerStates: optimizerStateBytes(optimizer, 4) };
    case "fp16":
    case "bf16":
      return { parameters: 2, gradients: 2, optimizerStates: optimizerStateBytes(optimizer, 2) };
    case "amp":
      return { parameters: 2, gradients: 2, optimizerStates: 4 + optimizerStateBytes(optimizer, 4) };
  }
}
