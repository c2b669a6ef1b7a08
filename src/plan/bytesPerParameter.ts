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

/** One optimizer state tensor per parameter tensor, as the optimizer allocates it. */
export interface OptimizerState {
  /** `master` (fp32 weights), `momentum_buffer`, `exp_avg`, `exp_avg_sq`, `state1`/`state2` (8-bit). */
  name: string;
  bytesPerParameter: number;
}

/**
 * The optimizer's states per parameter. `stateElementBytes` is the dtype the states are kept in.
 * adam8bit: bitsandbytes' two 8-bit states (its block-wise quantization constants, one fp32 per
 * 2048 values, are < 0.1% and left out).
 */
function optimizerStatesOf(optimizer: Optimizer, stateElementBytes: number): OptimizerState[] {
  switch (optimizer) {
    case "sgd":
      return [];
    case "momentum":
      return [{ name: "momentum_buffer", bytesPerParameter: stateElementBytes }];
    case "adam":
    case "adamw":
      return [
        { name: "exp_avg", bytesPerParameter: stateElementBytes },
        { name: "exp_avg_sq", bytesPerParameter: stateElementBytes },
      ];
    case "adam8bit":
      return [
        { name: "state1", bytesPerParameter: 1 },
        { name: "state2", bytesPerParameter: 1 },
      ];
  }
}

/**
 * The optimizer state tensors, by precision:
 * - `fp32`: states in fp32.
 * - `fp16`/`bf16`: pure 16-bit training; states in the weights' dtype, as `torch.optim` creates
 *   them (`zeros_like(param)`).
 * - `amp`: mixed precision as in ZeRO (Rajbhandari et al. 2020, §3.1): an fp32 master copy of the
 *   weights plus fp32 states. ZeRO's "K" is the sum: 12 for Adam.
 */
export function optimizerStates(precision: Precision, optimizer: Optimizer): OptimizerState[] {
  switch (precision) {
    case "fp32":
      return optimizerStatesOf(optimizer, 4);
    case "fp16":
    case "bf16":
      return optimizerStatesOf(optimizer, 2);
    case "amp":
      return [{ name: "master", bytesPerParameter: 4 }, ...optimizerStatesOf(optimizer, 4)];
  }
}

/** Bytes of one weight (and of one gradient) in the dtype the forward and backward passes use. */
export function weightBytes(precision: Precision): number {
  return precision === "fp32" ? 4 : 2;
}

/**
 * The schemes (the table in docs/memory-model.md):
 * - `fp32`: fp32 weights and gradients, optimizer states in fp32 (Adam: 4 + 4 + 8 = 16 B).
 * - `fp16`/`bf16`: pure 16-bit training, states in the weights' dtype (Adam: 2 + 2 + 4 = 8 B).
 * - `amp`: mixed precision as in ZeRO (Rajbhandari et al. 2020, §3.1): 16-bit weights and
 *   gradients, an fp32 master copy and fp32 states (Adam: 2 + 2 + 12 = 16 B, "K = 12").
 *   torch.cuda.amp's layout (fp32 weights and gradients, 16-bit copies made per op) has the same
 *   total for every optimizer here (Adam: 4 + 4 + 8); only the split between categories differs.
 *   Plans use it for `amp` without ZeRO, offloading, `--tp` or quantized weights, as fp32's model
 *   states plus the copies on the step's tape (src/plan/autocast.ts); this table is ZeRO's.
 *   Schemes that also keep fp32 gradients (18 B for Adam) are not one of these options.
 */
export function bytesPerParameter(precision: Precision, optimizer: Optimizer): BytesPerParameter {
  const weights = weightBytes(precision);
  const states = optimizerStates(precision, optimizer).reduce((sum, s) => sum + s.bytesPerParameter, 0);
  return { parameters: weights, gradients: weights, optimizerStates: states };
}

export const ZERO_STAGES = [0, 1, 2, 3] as const;
export type ZeroStage = (typeof ZERO_STAGES)[number];

/**
 * Which model states ZeRO partitions across `gpus` data-parallel ranks (Rajbhandari et al. 2020,
 * §5, Figure 1): stage 1 (P_os) the optimizer states, stage 2 (P_os+g) also the gradients,
 * stage 3 (P_os+g+p) also the parameters.
 */
export function zeroShards(stage: ZeroStage, gpus: number): { parameters: number; gradients: number; optimizerStates: number } {
  return {
    optimizerStates: stage >= 1 ? gpus : 1,
    gradients: stage >= 2 ? gpus : 1,
    parameters: stage >= 3 ? gpus : 1,
  };
}

/** Bytes per GPU of a share of `total` bytes split `ways` ways (the last rank's padding included). */
export function shardBytes(total: number, ways: number): number {
  return ways <= 1 ? total : Math.ceil(total / ways);
}
