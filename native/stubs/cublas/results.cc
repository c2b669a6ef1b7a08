// The cuBLAS functions whose results reach host memory: reductions (dot, nrm2, asum, amax, amin)
// under the host pointer mode, the info words of the batched factorizations, and the vector and
// matrix copies. On a GPU those values come from the device; here they read as zeros, as every
// device->host read of the simulated GPU does, and their bytes are counted as such reads.
#include <dlfcn.h>

#include <cstdint>
#include <cstring>

#include "../common/stub_api.h"
#include "../../sim/touched.h"
#include "handle.h"

namespace {

// A result the device would have written to host memory: zeros, counted.
int HostResult(const CublasHandle* handle, void* result, size_t bytes) {
  if (handle == nullptr) return kCublasNotInitialized;
  if (result == nullptr) return kCublasInvalidValue;
  // Under the device pointer mode the result stays on the device, where nothing is written.
  if (handle->pointerMode == kPointerModeHost) {
    std::memset(result, 0, bytes);
    cudasim::NoteTouched("cublas.deviceToHostBytes", bytes);
  }
  return kCublasSuccess;
}

// cudaDataType_t (library_types.h) -> bytes per element, for cublasDotEx's result.
size_t DataTypeBytes(int type) {
  switch (type) {
    case 0: return 4;    // CUDA_R_32F
    case 1: return 8;    // CUDA_R_64F
    case 2: return 2;    // CUDA_R_16F
    case 4: return 8;    // CUDA_C_32F
    case 5: return 16;   // CUDA_C_64F
    case 6: return 4;    // CUDA_C_16F
    case 14: return 2;   // CUDA_R_16BF
    case 15: return 4;   // CUDA_C_16BF
    default: return 0;
  }
}

// The copies go through the CUDA runtime the job loaded (the stub runtime), which discards what is
// sent and reads zeros back, and counts both: cudaMemcpy2DAsync covers the strided forms.
using Memcpy2DAsync = int (*)(void*, size_t, const void*, size_t, size_t, size_t, int, void*);
constexpr int kHostToDevice = 1, kDeviceToHost = 2;

int Copy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height, int kind,
           void* stream) {
  static auto copy = reinterpret_cast<Memcpy2DAsync>(dlsym(RTLD_DEFAULT, "cudaMemcpy2DAsync"));
  if (copy != nullptr) return copy(dst, dpitch, src, spitch, width, height, kind, stream) == 0 ? kCublasSuccess : 13;
  // No runtime in the process (a test loading cuBLAS alone): do what the stub runtime would.
  if (kind == kDeviceToHost) {
    for (size_t row = 0; row < height; ++row) std::memset(static_cast<char*>(dst) + row * dpitch, 0, width);
    cudasim::NoteTouched("cublas.deviceToHostBytes", width * height);
  }
  return kCublasSuccess;
}

int CheckStrides(int count, int elemSize, int incx, int incy) {
  if (count < 0 || elemSize <= 0 || incx == 0 || incy == 0) return kCublasInvalidValue;
  return kCublasSuccess;
}

}  // namespace

#define STUB_REDUCTION(name, Result)                                                              \
  STUB_API int name(CublasHandle* handle, int, const void*, int, Result* result) {                  \
    return HostResult(handle, result, sizeof(Result));                                               \
  }
STUB_REDUCTION(cublasSnrm2_v2, float)
STUB_REDUCTION(cublasDnrm2_v2, double)
STUB_REDUCTION(cublasScnrm2_v2, float)
STUB_REDUCTION(cublasDznrm2_v2, double)
STUB_REDUCTION(cublasSasum_v2, float)
STUB_REDUCTION(cublasDasum_v2, double)
STUB_REDUCTION(cublasScasum_v2, float)
STUB_REDUCTION(cublasDzasum_v2, double)
STUB_REDUCTION(cublasIsamax_v2, int)
STUB_REDUCTION(cublasIdamax_v2, int)
STUB_REDUCTION(cublasIcamax_v2, int)
STUB_REDUCTION(cublasIzamax_v2, int)
STUB_REDUCTION(cublasIsamin_v2, int)
STUB_REDUCTION(cublasIdamin_v2, int)
STUB_REDUCTION(cublasIcamin_v2, int)
STUB_REDUCTION(cublasIzamin_v2, int)
#undef STUB_REDUCTION

#define STUB_DOT(name, bytes)                                                                      \
  STUB_API int name(CublasHandle* handle, int, const void*, int, const void*, int, void* result) { \
    return HostResult(handle, result, bytes);                                                        \
  }
STUB_DOT(cublasSdot_v2, 4)
STUB_DOT(cublasDdot_v2, 8)
STUB_DOT(cublasCdotu_v2, 8)
STUB_DOT(cublasCdotc_v2, 8)
STUB_DOT(cublasZdotu_v2, 16)
STUB_DOT(cublasZdotc_v2, 16)
#undef STUB_DOT

STUB_API int cublasDotEx(CublasHandle* handle, int, const void*, int, int, const void*, int, int, void* result,
                         int resultType, int) {
  size_t bytes = DataTypeBytes(resultType);
  if (bytes == 0) return kCublasInvalidValue;
  return HostResult(handle, result, bytes);
}

// The batched least squares and QR report argument errors in a host `info` word (their per-matrix
// results stay on the device): 0, no error.
#define STUB_HOST_INFO_GELS(name)                                                                      \
  STUB_API int name(CublasHandle* handle, int, int, int, int, void* const*, int, void* const*, int, int* info, \
                    int*, int) {                                                                         \
    if (handle == nullptr) return kCublasNotInitialized;                                                 \
    if (info == nullptr) return kCublasInvalidValue;                                                     \
    *info = 0;                                                                                           \
    return kCublasSuccess;                                                                               \
  }
STUB_HOST_INFO_GELS(cublasSgelsBatched)
STUB_HOST_INFO_GELS(cublasDgelsBatched)
STUB_HOST_INFO_GELS(cublasCgelsBatched)
STUB_HOST_INFO_GELS(cublasZgelsBatched)
#undef STUB_HOST_INFO_GELS

#define STUB_HOST_INFO_GEQRF(name)                                                                  \
  STUB_API int name(CublasHandle* handle, int, int, void* const*, int, void* const*, int* info, int) { \
    if (handle == nullptr) return kCublasNotInitialized;                                              \
    if (info == nullptr) return kCublasInvalidValue;                                                  \
    *info = 0;                                                                                        \
    return kCublasSuccess;                                                                            \
  }
STUB_HOST_INFO_GEQRF(cublasSgeqrfBatched)
STUB_HOST_INFO_GEQRF(cublasDgeqrfBatched)
STUB_HOST_INFO_GEQRF(cublasCgeqrfBatched)
STUB_HOST_INFO_GEQRF(cublasZgeqrfBatched)
#undef STUB_HOST_INFO_GEQRF

#define STUB_HOST_INFO_GETRS(name)                                                                          \
  STUB_API int name(CublasHandle* handle, int, int, int, const void* const*, int, const int*, void* const*, int, \
                    int* info, int) {                                                                         \
    if (handle == nullptr) return kCublasNotInitialized;                                                      \
    if (info == nullptr) return kCublasInvalidValue;                                                          \
    *info = 0;                                                                                                \
    return kCublasSuccess;                                                                                    \
  }
STUB_HOST_INFO_GETRS(cublasSgetrsBatched)
STUB_HOST_INFO_GETRS(cublasDgetrsBatched)
STUB_HOST_INFO_GETRS(cublasCgetrsBatched)
STUB_HOST_INFO_GETRS(cublasZgetrsBatched)
#undef STUB_HOST_INFO_GETRS

STUB_API int cublasSetVectorAsync(int n, int elemSize, const void* hostPtr, int incx, void* devicePtr, int incy,
                                  void* stream) {
  if (int status = CheckStrides(n, elemSize, incx, incy)) return status;
  size_t width = static_cast<size_t>(elemSize);
  return Copy2D(devicePtr, width * incy, hostPtr, width * incx, width, n, kHostToDevice, stream);
}

STUB_API int cublasGetVectorAsync(int n, int elemSize, const void* devicePtr, int incx, void* hostPtr, int incy,
                                  void* stream) {
  if (int status = CheckStrides(n, elemSize, incx, incy)) return status;
  size_t width = static_cast<size_t>(elemSize);
  return Copy2D(hostPtr, width * incy, devicePtr, width * incx, width, n, kDeviceToHost, stream);
}

// Column-major: `cols` columns of `rows` elements, leading dimensions in elements.
STUB_API int cublasSetMatrixAsync(int rows, int cols, int elemSize, const void* A, int lda, void* B, int ldb,
                                  void* stream) {
  if (rows < 0 || cols < 0 || elemSize <= 0 || lda < rows || ldb < rows || lda <= 0 || ldb <= 0) return kCublasInvalidValue;
  size_t width = static_cast<size_t>(elemSize);
  return Copy2D(B, width * ldb, A, width * lda, width * rows, cols, kHostToDevice, stream);
}

STUB_API int cublasGetMatrixAsync(int rows, int cols, int elemSize, const void* A, int lda, void* B, int ldb,
                                  void* stream) {
  if (rows < 0 || cols < 0 || elemSize <= 0 || lda < rows || ldb < rows || lda <= 0 || ldb <= 0) return kCublasInvalidValue;
  size_t width = static_cast<size_t>(elemSize);
  return Copy2D(B, width * ldb, A, width * lda, width * rows, cols, kDeviceToHost, stream);
}
