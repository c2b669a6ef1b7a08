// The job's CUDA context: one quantity, charged the same way on every target (docs/memory-model.md, "The CUDA context").
import { invalidArgument } from "../errors.js";

const MiB = 2 ** 20;

/**
 * Device memory a training or inference job takes besides its tensors: the driver's context and
 * the kernels of the libraries it loads (PyTorch, cuBLAS, cuDNN), which CUDA ≥ 11.7 loads lazily.
 * 274 MiB were measured after `import torch` and one 6.4 MB tensor (pytorch/pytorch#86509, with
 * lazy loading; 636 MiB without), "~300MB" per NVIDIA's ptrblck (pytorch/pytorch#107667); a job's
 * first matmul and convolution load cuBLAS and cuDNN kernels on top. 512 MiB covers that; the
 * GPU validation (docs/validation.md) measures the real figure, not yet run. `--job-context`
 * sets it for a job that differs.
 */
export const DEFAULT_JOB_CONTEXT_BYTES = 512 * MiB;

/** The job's context, and how much of it the free-memory reading already paid. */
export interface ContextCharge {
  /** What the job's context takes (default DEFAULT_JOB_CONTEXT_BYTES). */
  jobContextBytes: number;
  /**
   * Device memory vramfit's own context takes, already missing from the free memory it read on
   * the device (0 on a catalog GPU, a raw budget, or a reading through NVML, which needs no
   * context). The job's context replaces it once vramfit gives it back.
   */
  spentBytes: number;
}

/** The job context to charge: the caller's, or the documented default. */
export function jobContextBytes(bytes: number | undefined): number {
  if (bytes === undefined) return DEFAULT_JOB_CONTEXT_BYTES;
  if (!Number.isInteger(bytes) || bytes < 0 || bytes > 2 ** 53) throw invalidArgument("jobContextBytes", bytes, "a whole number of bytes ≥ 0");
  return bytes;
}

/** What the job's context still needs beyond what vramfit's own context already took: the probe keeps it free too. */
export function unpaidContextBytes(charge: ContextCharge): number {
  return Math.max(0, charge.jobContextBytes - charge.spentBytes);
}
