// The stub cuDNN as a library: its version (the one torch 2.14.1's wheel depends on), handles,
// streams, error strings, and the configured workspace size.
#include <cstdlib>
#include <cstring>
#include <string>

#include "../common/stub_api.h"
#include "../../sim/touched.h"
#include "status.h"

namespace {

// torch 2.14.1's Requires-Dist pins nvidia-cudnn-cu13==9.24.0.43; cudnn_version.h encodes
// CUDNN_VERSION as major * 10000 + minor * 100 + patch. torch/backends/cudnn/__init__.py accepts a
// runtime of the same major and a minor at least the one it was built with.
constexpr int kMajor = 9, kMinor = 24, kPatch = 0;

struct Handle {
  void* stream = nullptr;
};

}  // namespace

size_t CudnnWorkspaceBytes() {
  static const size_t bytes = [] {
    const char* text = std::getenv("VRAMFIT_STUB_CUDNN_WORKSPACE");
    return text == nullptr ? size_t{0} : static_cast<size_t>(std::strtoull(text, nullptr, 10));
  }();
  return bytes;
}

STUB_API size_t cudnnGetVersion() {
  return kMajor * 10000 + kMinor * 100 + kPatch;
}

// The CUDA runtime cuDNN was built for: the cu13 wheel's is 13.0, the cu12 wheel's 12.9
// (cudaRuntimeGetVersion's encoding, major * 1000 + minor * 10).
STUB_API size_t cudnnGetCudartVersion() {
#if STUB_CUDA_MAJOR >= 13
  return 13000;
#else
  return 12090;
#endif
}

// libraryPropertyType (library_types.h): MAJOR_VERSION 0, MINOR_VERSION 1, PATCH_LEVEL 2.
STUB_API int cudnnGetProperty(int type, int* value) {
  if (value == nullptr) return kCudnnBadParamNullPointer;
  switch (type) {
    case 0: *value = kMajor; return kCudnnSuccess;
    case 1: *value = kMinor; return kCudnnSuccess;
    case 2: *value = kPatch; return kCudnnSuccess;
    default: return kCudnnBadParam;
  }
}

STUB_API int cudnnCreate(Handle** handle) {
  if (handle == nullptr) return kCudnnBadParamNullPointer;
  *handle = new Handle;
  cudasim::NoteTouched("cudnn.handles");
  return kCudnnSuccess;
}

STUB_API int cudnnDestroy(Handle* handle) {
  delete handle;
  return kCudnnSuccess;
}

STUB_API int cudnnSetStream(Handle* handle, void* stream) {
  if (handle == nullptr) return kCudnnBadParamNullPointer;
  handle->stream = stream;
  return kCudnnSuccess;
}

STUB_API int cudnnGetStream(Handle* handle, void** stream) {
  if (handle == nullptr || stream == nullptr) return kCudnnBadParamNullPointer;
  *stream = handle->stream;
  return kCudnnSuccess;
}

STUB_API const char* cudnnGetErrorString(int status) {
  switch (status) {
    case kCudnnSuccess: return "CUDNN_STATUS_SUCCESS";
    case kCudnnBadParam: return "CUDNN_STATUS_BAD_PARAM";
    case kCudnnBadParamNullPointer: return "CUDNN_STATUS_BAD_PARAM_NULL_POINTER";
    case kCudnnBadParamNotFinalized: return "CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED";
    case kCudnnBadParamSizeInsufficient: return "CUDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT";
    case kCudnnNotSupported: return "CUDNN_STATUS_NOT_SUPPORTED";
    default: return "CUDNN_STATUS_UNKNOWN";
  }
}

// What cuDNN would say about its last error: the stub's only refusals are the RNN family's.
STUB_API void cudnnGetLastErrorString(char* message, size_t size) {
  if (message == nullptr || size == 0) return;
  std::strncpy(message, "", size);
}
