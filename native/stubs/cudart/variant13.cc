// The CUDA 13 build of the stub runtime (libcudart.so.13): its version and cudaDeviceProp layout.
#include "properties.h"
#include "streams.h"
#include "variant.h"

namespace cudart {
int RuntimeVersion() {
  return 13000;
}
}  // namespace cudart

using namespace cudart;

CUDART_API Error cudaGetDeviceProperties(DeviceProp13* prop, int ordinal) {
  Device* device = nullptr;
  if (Error error = DeviceOf(ordinal, device)) return Return(error);
  if (prop == nullptr) return Return(kErrorInvalidValue);
  FillCommonProperties(*device, *prop);
  return kSuccess;
}

// CUDA 13's capture and graph signatures (12.3's _v3 and _v2 ones, renamed).
CUDART_API Error cudaStreamGetCaptureInfo(void* stream, int* status, unsigned long long* id, void** graph,
                                          const void** dependencies, const void** edges, size_t* count) {
  return CaptureInfo(stream, status, id, graph, dependencies, edges, count);
}

CUDART_API Error cudaStreamUpdateCaptureDependencies(void* stream, void* /*deps*/, const void* /*edges*/,
                                                     size_t /*count*/, unsigned int /*flags*/) {
  return UpdateCaptureDependencies(stream);
}

CUDART_API Error cudaGraphAddNode(void** node, void* graph, const void* /*deps*/, const void* /*edges*/,
                                  size_t /*count*/, void* /*params*/) {
  return AddGraphNode(node, graph);
}

CUDART_API Error cudaGraphNodeGetDependencies(void* node, void** /*deps*/, void* /*edges*/, size_t* count) {
  return NodeDependencies(node, count);
}
