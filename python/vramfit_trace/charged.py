"""Device memory no fake tensor shows, for vramfit to charge (docs/trace-format.md, `charged`): cuBLAS's workspaces,
by the rule vramfit charges them by for every other workload (src/plan/blasWorkspace.ts). The events hold every
storage the step's ops made, so nothing here is in them: no cuBLAS call runs on the fake device. The CUDA context is
not written: it belongs to the target, not to the step, and vramfit charges it per target (its job context,
--job-context, or what the device measures), as for every workload."""

# aten/src/ATen/cuda/CublasHandlePool.cpp (torch 2.13/2.14, getDefaultWorkspaceSize): ":4096:2:16:8" (8 MiB + 128 KiB)
# unless the GPU is Hopper or Blackwell (major 9, 10, 12), where it is 32 MiB. One workspace per cuBLAS handle and
# stream, and a handle per thread: training adds the autograd engine's device thread, which runs backward's matmuls.
SMALL_WORKSPACE = 4096 * 1024 * 2 + 16 * 1024 * 8
LARGE_WORKSPACE = 4096 * 8 * 1024


def bytes_for(capability, mode="train"):
    major = capability[0]
    workspace = LARGE_WORKSPACE if major in (9, 10, 12) else SMALL_WORKSPACE
    # cuBLASLt takes the cuBLAS handle's workspace (TORCH_CUBLASLT_UNIFIED_WORKSPACE, on unless set to 0:
    # getCUDABlasLtWorkspace returns the cuBLAS one), so it adds nothing; said as 0 so a reader charges no second one.
    return {"cublasWorkspaceBytes": workspace, "cublasWorkspaces": 2 if mode == "train" else 1, "cublasLtWorkspaceBytes": 0}
