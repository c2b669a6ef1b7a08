// The stub cuBLAS's handles: what torch sets on them (stream, workspace, math and pointer modes) is
// kept and read back; the library's version is the one torch 2.14.1's wheel depends on.
#include <cstdint>
#include <cstring>

#include "../common/stub_api.h"
#include "handle.h"

namespace {

// cuda-toolkit 13.0.3 (torch 2.14.1's Requires-Dist) pins nvidia-cublas 13.1.1.3; cublas_api.h
// encodes a version as major * 10000 + minor * 100 + patch. The CUDA 12 build answers with the
// 12.9 release's cuBLAS (12.9.1.4, CUDA 12.9 Update 1), the last of that major.
#if STUB_CUDA_MAJOR >= 13
constexpr int kMajor = 13, kMinor = 1, kPatch = 1;
#else
constexpr int kMajor = 12, kMinor = 9, kPatch = 1;
#endif

}  // namespace

STUB_API int cublasCreate_v2(CublasHandle** handle) {
  if (handle == nullptr) return kCublasInvalidValue;
  *handle = new CublasHandle;
  return kCublasSuccess;
}

STUB_API int cublasDestroy_v2(CublasHandle* handle) {
  if (handle == nullptr) return kCublasNotInitialized;
  delete handle;
  return kCublasSuccess;
}

STUB_API int cublasSetStream_v2(CublasHandle* handle, void* stream) {
  if (handle == nullptr) return kCublasNotInitialized;
  handle->stream = stream;
  return kCublasSuccess;
}

STUB_API int cublasGetStream_v2(CublasHandle* handle, void** stream) {
  if (handle == nullptr) return kCublasNotInitialized;
  if (stream == nullptr) return kCublasInvalidValue;
  *stream = handle->stream;
  return kCublasSuccess;
}

STUB_API int cublasSetMathMode(CublasHandle* handle, int mode) {
  if (handle == nullptr) return kCublasNotInitialized;
  handle->mathMode = mode;
  return kCublasSuccess;
}

STUB_API int cublasGetMathMode(CublasHandle* handle, int* mode) {
  if (handle == nullptr) return kCublasNotInitialized;
  if (mode == nullptr) return kCublasInvalidValue;
  *mode = handle->mathMode;
  return kCublasSuccess;
}

STUB_API int cublasSetPointerMode_v2(CublasHandle* handle, int mode) {
  if (handle == nullptr) return kCublasNotInitialized;
  if (mode != kPointerModeHost && mode != kPointerModeDevice) return kCublasInvalidValue;
  handle->pointerMode = mode;
  return kCublasSuccess;
}

STUB_API int cublasGetPointerMode_v2(CublasHandle* handle, int* mode) {
  if (handle == nullptr) return kCublasNotInitialized;
  if (mode == nullptr) return kCublasInvalidValue;
  *mode = handle->pointerMode;
  return kCublasSuccess;
}

// The workspace is the caller's memory (torch allocates it through its caching allocator, so the
// simulated device already counted it); cuBLAS only remembers where it is.
STUB_API int cublasSetWorkspace_v2(CublasHandle* handle, void* workspace, size_t bytes) {
  if (handle == nullptr) return kCublasNotInitialized;
  handle->workspace = workspace;
  handle->workspaceBytes = bytes;
  return kCublasSuccess;
}

STUB_API int cublasSetSmCountTarget(CublasHandle* handle, int count) {
  if (handle == nullptr) return kCublasNotInitialized;
  if (count < 0) return kCublasInvalidValue;
  handle->smCountTarget = count;
  return kCublasSuccess;
}

STUB_API int cublasGetSmCountTarget(CublasHandle* handle, int* count) {
  if (handle == nullptr) return kCublasNotInitialized;
  if (count == nullptr) return kCublasInvalidValue;
  *count = handle->smCountTarget;
  return kCublasSuccess;
}

STUB_API int cublasGetVersion_v2(CublasHandle* /*handle*/, int* version) {
  if (version == nullptr) return kCublasInvalidValue;
  *version = kMajor * 10000 + kMinor * 100 + kPatch;
  return kCublasSuccess;
}

// libraryPropertyType (library_types.h): MAJOR_VERSION 0, MINOR_VERSION 1, PATCH_LEVEL 2.
STUB_API int cublasGetProperty(int type, int* value) {
  if (value == nullptr) return kCublasInvalidValue;
  switch (type) {
    case 0: *value = kMajor; return kCublasSuccess;
    case 1: *value = kMinor; return kCublasSuccess;
    case 2: *value = kPatch; return kCublasSuccess;
    default: return kCublasInvalidValue;
  }
}

STUB_API size_t cublasGetCudartVersion() {
  return STUB_CUDA_MAJOR * 1000;
}

STUB_API const char* cublasGetStatusName(int status) {
  switch (status) {
    case 0: return "CUBLAS_STATUS_SUCCESS";
    case 1: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case 3: return "CUBLAS_STATUS_ALLOC_FAILED";
    case 7: return "CUBLAS_STATUS_INVALID_VALUE";
    case 8: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case 13: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case 14: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case 15: return "CUBLAS_STATUS_NOT_SUPPORTED";
    default: return "CUBLAS_STATUS_UNKNOWN";
  }
}

STUB_API const char* cublasGetStatusString(int status) {
  return cublasGetStatusName(status);
}
