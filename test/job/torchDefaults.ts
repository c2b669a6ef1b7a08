// The environment of a test's PyTorch job with PyTorch's own defaults, whatever the caller sets: the tests predict
// cuBLAS's default workspace size and the caching allocator's default policy.
export function withTorchDefaults(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const { CUBLAS_WORKSPACE_CONFIG: _workspace, PYTORCH_CUDA_ALLOC_CONF: _cudaAllocator, PYTORCH_ALLOC_CONF: _allocator, ...rest } = env;
  return rest;
}
