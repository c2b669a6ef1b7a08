// What counts as "out of GPU memory" in a job's output: the messages frameworks and CUDA libraries print.
import { invalidArgument } from "../errors.js";

export interface OutOfMemoryPattern {
  /** Who prints it. */
  framework: string;
  pattern: RegExp;
  /** Where the message comes from, so that a reader can check it. */
  source: string;
}

/**
 * Only these make a failed run "does not fit"; any other failure is an error. Each is specific
 * to device memory: a bare "out of memory" is not (host allocators print it too), and neither is
 * cuDNN's CUDNN_STATUS_NOT_SUPPORTED, which Lightning and accelerate count as out of memory but
 * which also means a real unsupported configuration.
 */
export const OUT_OF_MEMORY_PATTERNS: readonly OutOfMemoryPattern[] = [
  {
    framework: "PyTorch",
    // torch.OutOfMemoryError (2.5+), torch.cuda.OutOfMemoryError (1.13+), and the RuntimeError before.
    pattern: /\bCUDA out of memory\b|\btorch(?:\.cuda)?\.OutOfMemoryError\b/,
    source: 'c10/cuda/CUDACachingAllocator.cpp: "CUDA out of memory. Tried to allocate …" (pytorch/pytorch)',
  },
  {
    framework: "PyTorch",
    pattern: /\bCUDA error: out of memory\b/,
    source: "c10/cuda/CUDAException.h: C10_CUDA_CHECK on cudaErrorMemoryAllocation (a context or a library handle that could not be made)",
  },
  { framework: "CUDA runtime", pattern: /\bcudaErrorMemoryAllocation\b/, source: "cuda_runtime_api.h: cudaErrorMemoryAllocation = 2" },
  { framework: "CUDA driver", pattern: /\bCUDA_ERROR_OUT_OF_MEMORY\b/, source: "cuda.h: CUDA_ERROR_OUT_OF_MEMORY = 2" },
  { framework: "cuBLAS", pattern: /\bCUBLAS_STATUS_ALLOC_FAILED\b/, source: "cublas_api.h: CUBLAS_STATUS_ALLOC_FAILED = 3" },
  { framework: "cuDNN", pattern: /\bCUDNN_STATUS_ALLOC_FAILED\b/, source: "cudnn_graph.h / cudnn.h: CUDNN_STATUS_ALLOC_FAILED" },
  {
    framework: "JAX/XLA",
    pattern: /\bRESOURCE_EXHAUSTED\b/,
    source: 'XLA\'s allocators: "RESOURCE_EXHAUSTED: Out of memory while trying to allocate N bytes." (openxla/xla)',
  },
  {
    framework: "TensorFlow",
    pattern: /\bOOM when allocating\b/,
    source: 'tensorflow/core/framework/op_kernel.cc: errors::ResourceExhausted("OOM when allocating tensor with shape", …)',
  },
];

export interface OutOfMemoryMatch {
  framework: string;
  /** The line that said so, trimmed. */
  line: string;
}

/**
 * The out-of-memory message in one line of output, if there is one.
 * Throws `ERR_INVALID_ARGUMENT` when `line` is not a string.
 */
export function findOutOfMemory(line: string): OutOfMemoryMatch | undefined {
  if (typeof line !== "string") throw invalidArgument("line", line, "a string (one line of the job's output)");
  const found = OUT_OF_MEMORY_PATTERNS.find((p) => p.pattern.test(line));
  return found === undefined ? undefined : { framework: found.framework, line: line.trim() };
}
