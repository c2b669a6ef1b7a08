"""Device memory no fake tensor shows, for vramfit to charge: cuBLAS's workspaces (the CUDA context is vramfit's own
estimate, src/fit/context.ts)."""

# aten/src/ATen/cuda/CublasHandlePool.cpp (torch 2.13/2.14, getDefaultWorkspaceSize): ":4096:2:16:8" (8 MiB + 128 KiB)
# unless the GPU is Hopper or Blackwell (major 9, 10, 12), where it is 32 MiB. One workspace per cuBLAS handle and
# stream, and a handle per thread: training adds the autograd engine's device thread, which runs backward's matmuls.
SMALL_WORKSPACE = 4096 * 1024 * 2 + 16 * 1024 * 8
LARGE_WORKSPACE = 4096 * 8 * 1024


def bytes_for(capability, mode="train"):
    major = capability[0]
    workspace = LARGE_WORKSPACE if major in (9, 10, 12) else SMALL_WORKSPACE
    return {"cublasWorkspaceBytes": workspace, "cublasWorkspaces": 2 if mode == "train" else 1}
