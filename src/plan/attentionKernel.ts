// Which attention kernel a transformer layer runs: PyTorch SDPA's own choice rule, or the one the user names.
import type { ComputeCapability } from "./computeCapability.js";

/** The kernels behind `torch.nn.functional.scaled_dot_product_attention` on CUDA. */
export const SDPA_KERNELS = ["cudnn", "flash", "efficient", "math"] as const;
export type SdpaKernel = (typeof SDPA_KERNELS)[number];

/** What a layer runs: `eager` is Hugging Face's eager attention (Python ops), the others SDPA's kernels. */
export type AttentionKernel = "eager" | SdpaKernel;

/** What the choice depends on, for one attention call. */
export interface AttentionCall {
  /** Bytes of Q, K and V's elements (2 under fp16, bf16 and autocast: autocast casts SDPA's inputs to 16 bits). */
  elementBytes: number;
  /** bf16 rather than fp16 (`--precision bf16`, or amp on a GPU that has bf16). */
  bf16: boolean;
  /** Fewer KV heads than query heads. */
  gqa: boolean;
  headDim: number;
  /** An explicit attention mask (padding): transformers passes none for unpadded causal batches. */
  mask: boolean;
  cc: ComputeCapability;
  /** Whether gradients are needed (flash on sm 8.6/8.9/12.x refuses head dims over 192 then). */
  training: boolean;
}

const atLeast = (cc: ComputeCapability, major: number, minor = 0) => cc.major > major || (cc.major === major && cc.minor >= minor);

/**
 * PyTorch 2.14's `select_sdp_backend` (aten/src/ATen/native/transformers/cuda/sdp_utils.cpp, as read
 * in 2026): the first backend of the priority order whose checks pass. The order is flash,
 * efficient, math, cuDNN, except that cuDNN comes first on compute capability 9.0, 10.0 and 10.3
 * with cuDNN newer than 9.15 (`check_prefer_cudnn_attention`; the CUDA 13 wheels ship cuDNN 9.1x,
 * so assumed). The checks that decide for a transformer's training step:
 * - cuDNN (`can_use_cudnn_attention`): fp16/bf16 (`check_dtypes_low_precision`), sm 8.0–12.1
 *   (`check_cudnn_hardware_support`), head dim a multiple of 8 and at most 128
 *   (`check_cudnn_tensor_shapes`), grouped-query attention and masks accepted;
 * - flash (`can_use_flash_attention`): fp16/bf16, sm 8.0 on (`check_flash_attention_hardware_support`),
 *   no mask (`check_for_attn_mask`), head dim a multiple of 8 and at most 256, not above 192 when
 *   training on sm 8.6, 8.9 or 12.x, grouped-query attention accepted;
 * - memory-efficient (`can_use_mem_efficient_attention`): fp32 and fp16 (bf16 from sm 8.0), a mask
 *   accepted, but **no grouped-query attention** (`check_batch_size_and_num_heads_dense<false>`);
 * - math: anything, materializing the scores.
 * So fp32 with grouped-query attention runs the math kernel (s² scores), bf16 on Hopper cuDNN,
 * bf16 on the A100 flash. transformers 5.18 passes `enable_gqa=True` only without a mask
 * (integrations/sdpa_attention.py, `use_gqa_in_sdpa`); with one it repeats K and V to every head
 * first, and then the memory-efficient kernel is open to it.
 */
export function chooseSdpaKernel(call: AttentionCall): SdpaKernel {
  const { cc, headDim } = call;
  const low = call.elementBytes === 2;
  const gqaAfterRepeat = call.gqa && !call.mask;
  const cudnnFirst = (cc.major === 9 && cc.minor === 0) || (cc.major === 10 && (cc.minor === 0 || cc.minor === 3));
  const cudnn = low && atLeast(cc, 8) && !atLeast(cc, 12, 2) && headDim % 8 === 0 && headDim <= 128;
  const bigHeadLimited = call.training && ((cc.major === 8 && (cc.minor === 6 || cc.minor === 9)) || cc.major === 12);
  const flash = low && atLeast(cc, 8) && !call.mask && headDim % 8 === 0 && headDim <= 256 && !(bigHeadLimited && headDim > 192);
  const efficient = !gqaAfterRepeat && atLeast(cc, 5) && (!call.bf16 || !low || atLeast(cc, 8)) && headDim % (low ? 8 : 4) === 0;
  if (cudnnFirst && cudnn) return "cudnn";
  if (flash) return "flash";
  if (efficient) return "efficient";
  return "math";
}

/** Whether a kernel keeps no s² tensor (it recomputes the scores in backward from its saved statistics). */
export function isFused(kernel: AttentionKernel): boolean {
  return kernel === "cudnn" || kernel === "flash" || kernel === "efficient";
}
