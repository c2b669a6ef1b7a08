// The simulated driver's modules and launches: what a job's PyTorch reaches the driver for directly
// (NVRTC-compiled kernels through libcaffe2_nvrtc.so, Triton's launcher, cuBLAS-free tensor maps).
// A module is a handle with nothing behind it; launches succeed and do nothing, as on the stub
// runtime. Each is counted (touched.h): kernels the job built itself are a sign of Triton or
// torch.compile, whose own memory the simulation does not see.
#include <cstdint>
#include <cstring>
#include <new>

#include "../cuda/cuda_driver_api.h"
#include "touched.h"

namespace {

struct Module {
  int functions = 0;
};
struct Function {
  Module* module;
};
struct LinkState {
  unsigned char cubin[16] = {};  // what cuLinkComplete hands back: the caller only passes it on
};

}  // namespace

#define CUDASIM_API extern "C" __attribute__((visibility("default")))

CUDASIM_API CUresult cuModuleLoad(Module** module, const char* path) {
  if (module == nullptr || path == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *module = new Module;
  cudasim::NoteTouched("driver.moduleLoads");
  return CUDA_SUCCESS;
}

CUDASIM_API CUresult cuModuleLoadData(Module** module, const void* image) {
  if (module == nullptr || image == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *module = new Module;
  cudasim::NoteTouched("driver.moduleLoads");
  return CUDA_SUCCESS;
}

CUDASIM_API CUresult cuModuleLoadDataEx(Module** module, const void* image, unsigned, void*, void**) {
  return cuModuleLoadData(module, image);
}

CUDASIM_API CUresult cuModuleUnload(Module* module) {
  delete module;  // its functions' handles dangle, as the real driver's do
  return CUDA_SUCCESS;
}

CUDASIM_API CUresult cuModuleGetFunction(Function** function, Module* module, const char* name) {
  if (function == nullptr || module == nullptr || name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  ++module->functions;
  *function = new Function{module};
  return CUDA_SUCCESS;
}

// CUfunction_attribute: every attribute reads 0 (no registers, no shared memory), except
// CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK (0), which reads 1024, what every GPU since Fermi allows.
CUDASIM_API CUresult cuFuncGetAttribute(int* value, int attribute, Function* function) {
  if (value == nullptr || function == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *value = attribute == 0 ? 1024 : 0;
  return CUDA_SUCCESS;
}

CUDASIM_API CUresult cuFuncSetAttribute(Function* function, int, int) {
  return function == nullptr ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

CUDASIM_API CUresult cuFuncSetCacheConfig(Function* function, int) {
  return function == nullptr ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

CUDASIM_API CUresult cuLaunchKernel(Function* function, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                    unsigned, void*, void**, void**) {
  if (function == nullptr) return CUDA_ERROR_INVALID_VALUE;
  cudasim::NoteTouched("driver.launches");
  return CUDA_SUCCESS;
}

CUDASIM_API CUresult cuLaunchCooperativeKernel(Function* function, unsigned, unsigned, unsigned, unsigned, unsigned,
                                               unsigned, unsigned, void*, void**) {
  if (function == nullptr) return CUDA_ERROR_INVALID_VALUE;
  cudasim::NoteTouched("driver.launches");
  return CUDA_SUCCESS;
}

CUDASIM_API CUresult cuLinkCreate_v2(unsigned, void*, void**, LinkState** state) {
  if (state == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *state = new LinkState;
  return CUDA_SUCCESS;
}

CUDASIM_API CUresult cuLinkAddData_v2(LinkState* state, int, void* data, size_t, const char*, unsigned, void*, void**) {
  return state == nullptr || data == nullptr ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

CUDASIM_API CUresult cuLinkComplete(LinkState* state, void** cubin, size_t* size) {
  if (state == nullptr || cubin == nullptr || size == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *cubin = state->cubin;
  *size = sizeof state->cubin;
  return CUDA_SUCCESS;
}

CUDASIM_API CUresult cuLinkDestroy(LinkState* state) {
  delete state;
  return CUDA_SUCCESS;
}

// A CUtensorMap is 128 bytes the caller owns and passes to kernels: zeros, since no kernel reads it.
CUDASIM_API CUresult cuTensorMapEncodeTiled(void* tensorMap, int, unsigned, void*, const uint64_t*, const uint64_t*,
                                            const unsigned*, const unsigned*, int, int, int, int) {
  if (tensorMap == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::memset(tensorMap, 0, 128);
  return CUDA_SUCCESS;
}
