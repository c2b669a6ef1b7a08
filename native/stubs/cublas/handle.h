// The stub cuBLAS's handle and the status and mode values of cublas_api.h it answers with.
#ifndef VRAMFIT_STUBS_CUBLAS_HANDLE_H
#define VRAMFIT_STUBS_CUBLAS_HANDLE_H

#include <cstddef>

// cublasStatus_t (cublas_api.h).
constexpr int kCublasSuccess = 0;
constexpr int kCublasNotInitialized = 1;
constexpr int kCublasInvalidValue = 7;

// cublasPointerMode_t: where scalars and results live.
constexpr int kPointerModeHost = 0;
constexpr int kPointerModeDevice = 1;

// What cublasHandle_t points to here (the real one is opaque too).
struct CublasHandle {
  void* stream = nullptr;
  int mathMode = 0;  // CUBLAS_DEFAULT_MATH
  int pointerMode = kPointerModeHost;
  void* workspace = nullptr;
  size_t workspaceBytes = 0;
  int smCountTarget = 0;
};

#endif  // VRAMFIT_STUBS_CUBLAS_HANDLE_H
