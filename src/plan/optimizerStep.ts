// The optimizer step's temporaries, by optimizer and implementation, as torch.optim allocates them.
import type { Optimizer } from "./bytesPerParameter.js";

/**
 * How `optimizer.step()` runs (`torch.optim`'s `foreach` and `fused` flags):
 * - `foreach`: one `torch._foreach_*` op over every parameter tensor at once (`_multi_tensor_*`),
 *   PyTorch 2's default on CUDA (`_default_to_fused_or_foreach` in torch/optim/optimizer.py).
 * - `single`: a Python loop over the parameter tensors (`_single_tensor_*`), the default on the CPU.
 * - `fused`: one CUDA kernel updating in place (`fused=True`, Adam/AdamW/SGD).
 */
export const OPTIMIZER_IMPLS = ["foreach", "single", "fused"] as const;
export type OptimizerImpl = (typeof OPTIMIZER_IMPLS)[number];

/** What the temporaries of a step are sized by: all parameters, or the largest parameter tensor. */
export interface OptimizerTemporary {
  /** `exp_avg_sq_sqrt` (foreach Adam) or `denom` (single-tensor Adam). */
  name: string;
  /** Bytes per parameter of the whole model (foreach) — or 0. */
  bytesPerParameter: number;
  /** Bytes per element of the largest parameter tensor (single-tensor), or 0. */
  bytesPerLargestElement: number;
}

/**
 * The temporaries `optimizer.step()` allocates beyond its states, with `stateBytes` the bytes of
 * one optimizer-state element (4 for fp32 states). From torch 2.x's torch/optim/adam.py and sgd.py
 * (AdamW runs the same code with decoupled weight decay, `_foreach_mul_`/`mul_` in place):
 * - foreach Adam: `exp_avg_sq_sqrt = torch._foreach_sqrt(device_exp_avg_sqs)`, a new tensor per
 *   parameter, divided and shifted by eps in place and used by `_foreach_addcdiv_`: one copy of
 *   every state-sized parameter at once. (torch 1.13 made a second, `denom =
 *   _foreach_add(exp_avg_sq_sqrt, eps)`; torch 2 adds in place.)
 * - single-tensor Adam: `denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)` per
 *   parameter: the square root and the quotient exist together, two copies of the largest tensor.
 * - SGD, with or without momentum (no weight decay, no Nesterov), either implementation: in place
 *   (`_foreach_add_(params, grads or bufs)`, `param.add_`), no temporary.
 * - fused: one in-place kernel, no temporary (its `step` counters live on the GPU: a few bytes per
 *   parameter tensor, left out).
 * - adam8bit (bitsandbytes): its 8-bit update kernel works in place.
 */
export function optimizerTemporaries(optimizer: Optimizer, implementation: OptimizerImpl, stateBytes: number): OptimizerTemporary[] {
  if (optimizer !== "adam" && optimizer !== "adamw") return [];
  switch (implementation) {
    case "foreach":
      return [{ name: "optimizer.exp_avg_sq_sqrt", bytesPerParameter: stateBytes, bytesPerLargestElement: 0 }];
    case "single":
      return [{ name: "optimizer.denom", bytesPerParameter: 0, bytesPerLargestElement: 2 * stateBytes }];
    case "fused":
      return [];
  }
}
