// cudaError_t names and descriptions, as the real runtime's cudaGetErrorName/cudaGetErrorString
// return them (driver_types.h's enum and its comments' one-line texts), and the thread's last error.
#include "runtime.h"

using namespace cudart;

namespace {

struct ErrorText {
  Error code;
  const char* name;
  const char* description;
};

const ErrorText kErrors[] = {
    {0, "cudaSuccess", "no error"},
    {1, "cudaErrorInvalidValue", "invalid argument"},
    {2, "cudaErrorMemoryAllocation", "out of memory"},
    {3, "cudaErrorInitializationError", "initialization error"},
    {4, "cudaErrorCudartUnloading", "driver shutting down"},
    {13, "cudaErrorInvalidSymbol", "invalid device symbol"},
    {17, "cudaErrorInvalidDevicePointer", "invalid device pointer"},
    {21, "cudaErrorInvalidMemcpyDirection", "invalid copy direction for memcpy"},
    {34, "cudaErrorStubLibrary", "CUDA driver is a stub library"},
    {35, "cudaErrorInsufficientDriver", "CUDA driver version is insufficient for CUDA runtime version"},
    {46, "cudaErrorDevicesUnavailable", "CUDA-capable device(s) is/are busy or unavailable"},
    {100, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
    {101, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {217, "cudaErrorPeerAccessUnsupported", "peer access is not supported between these two devices"},
    {400, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {401, "cudaErrorIllegalState", "the operation cannot be performed in the present state"},
    {500, "cudaErrorSymbolNotFound", "named symbol not found"},
    {600, "cudaErrorNotReady", "device not ready"},
    {700, "cudaErrorIllegalAddress", "an illegal memory access was encountered"},
    {704, "cudaErrorPeerAccessAlreadyEnabled", "peer access is already enabled"},
    {712, "cudaErrorHostMemoryAlreadyRegistered", "part or all of the requested memory range is already mapped"},
    {713, "cudaErrorHostMemoryNotRegistered", "pointer does not correspond to a registered memory region"},
    {801, "cudaErrorNotSupported", "operation not supported"},
    {900, "cudaErrorStreamCaptureUnsupported", "operation not permitted when stream is capturing"},
    {901, "cudaErrorStreamCaptureInvalidated", "operation failed due to a previous error during capture"},
    {999, "cudaErrorUnknown", "unknown error"},
};

const ErrorText* Find(Error code) {
  for (const ErrorText& entry : kErrors) {
    if (entry.code == code) return &entry;
  }
  return nullptr;
}

}  // namespace

// The real runtime answers an unknown value with these exact strings.
CUDART_API const char* cudaGetErrorName(Error error) {
  const ErrorText* entry = Find(error);
  return entry != nullptr ? entry->name : "unrecognized error code";
}

CUDART_API const char* cudaGetErrorString(Error error) {
  const ErrorText* entry = Find(error);
  return entry != nullptr ? entry->description : "unrecognized error code";
}

CUDART_API Error cudaGetLastError(void) {
  return TakeLastError();
}

CUDART_API Error cudaPeekAtLastError(void) {
  return PeekLastError();
}
