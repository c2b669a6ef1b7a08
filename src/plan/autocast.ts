// torch.cuda.amp's layout: when `--precision amp` runs as torch.autocast over fp32 weights, and the 16-bit copies it makes.
import type { ResolvedSetup } from "./setup.js";

/**
 * Whether `--precision amp` is planned as torch.cuda.amp runs it (`with torch.autocast("cuda")`
 * over an fp32 model): fp32 weights, fp32 gradients, fp32 optimizer states and no master copy, so
 * the model states are fp32's; in forward each matmul's weight is cast to 16 bits once and kept
 * (autocast's weight cache holds the casts of leaf tensors that require grad; torch 2.13
 * torch/amp/autocast_mode.py lines 347-349, `autocast.__exit__`, clears it when the outermost
 * autocast region exits; autograd saves the copy until that layer's backward), activations feeding a matmul are cast per op, and the ops autocast runs in fp32
 * (softmax, log_softmax, layer_norm, pow, …) and the residual stream stay fp32.
 *
 * Where ZeRO partitions or offloads the states (DeepSpeed's fp16/bf16 modes), where Megatron splits
 * the weights (`--tp`), with quantized weights, and for inference, `amp` keeps ZeRO's layout
 * (Rajbhandari et al. 2020, §3.1: 16-bit weights and gradients, fp32 master weights and states).
 */
export function autocastLayout(setup: Pick<ResolvedSetup, "precision" | "mode" | "zeroStage" | "offload" | "tp" | "weights">): boolean {
  return setup.precision === "amp" && setup.mode === "train" && setup.zeroStage === 0 && setup.offload === "none" && setup.tp === 1 && setup.weights === undefined;
}

/*
 * The 16-bit gradient. In backward a matmul makes its weight's gradient in 16 bits while the copy is
 * still saved, autograd then releases the copy, and the cast's backward makes the fp32 `.grad` while
 * the 16-bit gradient is alive (the torch 2.13 trace of GPT-2 under amp: mm, free of the copy, _to_copy, free of the mm's
 * output). The most alive at once is one 16-bit weight-sized tensor and the fp32 gradient: a plan
 * keeps the copy through its op's backward and plans no separate 16-bit gradient.
 */

/** The prefix of the autocast cache's 16-bit weight copies in a plan (src/plan/highlights.ts shows them as one line). */
export const AUTOCAST_PREFIX = "autocast.";
