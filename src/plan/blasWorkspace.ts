// cuBLAS's workspaces: taken by PyTorch from its caching allocator once per handle and stream, kept for the process.
import type { PlannedTensor } from "./memoryPlan.js";
import type { ComputeCapability } from "./computeCapability.js";

/**
 * Bytes of one cuBLAS workspace under PyTorch 2.14 with no `CUBLAS_WORKSPACE_CONFIG` set
 * (pytorch/pytorch aten/src/ATen/cuda/CublasHandlePool.cpp, `parseChosenWorkspaceSize`, as read in
 * the main branch of 2026, lines 175-184): 32 MiB (`4096 * 8 * 1024`) on compute capability 9.x,
 * 10.x and 12.x (Hopper, Blackwell), else `:4096:2:16:8`, 2 × 4 MiB + 8 × 16 KiB = 8,519,680 B.
 * cuBLASLt shares it: `TORCH_CUBLASLT_UNIFIED_WORKSPACE` is on unless set to 0
 * (`unified_cublas_and_lt_workspaces`, `getCUDABlasLtWorkspace` returns the cuBLAS handle's
 * workspace), so there is no second, cuBLASLt-only buffer by default.
 */
export function blasWorkspaceBytes(cc: ComputeCapability): number {
  return cc.major === 9 || cc.major === 10 || cc.major === 12 ? 4096 * 8 * 1024 : 4096 * 1024 * 2 + 16 * 1024 * 8;
}

/** The prefix of the workspaces' names: what a comparison with a CPU step (which has none) leaves out. */
export const BLAS_WORKSPACE_PREFIX = "cublas.workspace";

/**
 * The workspaces a step holds. Each is allocated through the caching allocator on a handle's
 * first matmul on a stream (`getNewWorkspace` → `CUDACachingAllocator::get()->allocate`) and kept in
 * `cublas_handle_stream_to_workspace()` until the process clears it, so in every step after the
 * first it is live the whole step. Handles are per thread (`getCurrentCUDABlasHandle` reserves one
 * from a thread-local `PoolWindow`), and backward runs on autograd's device thread
 * (torch/csrc/autograd/engine.cpp, `Engine::start_device_threads`): a training step holds two, the
 * Python thread's (forward, loss) and autograd's (backward); inference one.
 */
export function blasWorkspaceTensors(cc: ComputeCapability, training: boolean): PlannedTensor[] {
  const bytes = blasWorkspaceBytes(cc);
  const tensor = (thread: string): PlannedTensor => ({ name: `${BLAS_WORKSPACE_PREFIX}.${thread}`, category: "workspace", fixedBytes: bytes, perSampleBytes: 0 });
  return training ? [tensor("forward"), tensor("backward")] : [tensor("forward")];
}
