// The CUDA 12 build of the stub runtime (libcudart.so.12): its version, cudaDeviceProp's CUDA 12
// layout, and the names CUDA 12's headers map calls to (cudaGetDeviceProperties_v2 from 12.0,
// cudaStreamGetCaptureInfo_v2/_v3, cudaGraphAddNode_v2, cudaGraphNodeGetDependencies_v2,
// cudaStreamUpdateCaptureDependencies_v2 from 12.3, cudaGetDriverEntryPoint before 12.5's ByVersion).
#include "properties.h"
#include "streams.h"
#include "variant.h"

namespace cudart {
int RuntimeVersion() {
  return 12080;
}
}  // namespace cudart

using namespace cudart;

CUDART_API Error cudaGetDeviceProperties(DeviceProp12* prop, int ordinal) {
  Device* device = nullptr;
  if (Error error = DeviceOf(ordinal, device)) return Return(error);
  if (prop == nullptr) return Return(kErrorInvalidValue);
  FillCommonProperties(*device, *prop);
  prop->deviceOverlap = 1;
  prop->computeMode = device->spec->computeMode;
  prop->maxTexture1DLinear = 268435456;
  prop->singleToDoublePrecisionPerfRatio = 2;
  prop->cooperativeMultiDeviceLaunch = 1;
  return kSuccess;
}

CUDART_API Error cudaGetDeviceProperties_v2(DeviceProp12* prop, int ordinal) {
  return cudaGetDeviceProperties(prop, ordinal);
}

// Capture and graphs: each name with the signature CUDA 12.x's cuda_runtime_api.h gives it.
CUDART_API Error cudaStreamGetCaptureInfo(void* stream, int* status, unsigned long long* id) {
  return CaptureInfo(stream, status, id, nullptr, nullptr, nullptr, nullptr);
}

CUDART_API Error cudaStreamGetCaptureInfo_v2(void* stream, int* status, unsigned long long* id, void** graph,
                                             const void** dependencies, size_t* count) {
  return CaptureInfo(stream, status, id, graph, dependencies, nullptr, count);
}

CUDART_API Error cudaStreamGetCaptureInfo_v3(void* stream, int* status, unsigned long long* id, void** graph,
                                             const void** dependencies, const void** edges, size_t* count) {
  return CaptureInfo(stream, status, id, graph, dependencies, edges, count);
}

CUDART_API Error cudaStreamUpdateCaptureDependencies(void* stream, void* /*deps*/, size_t /*count*/,
                                                     unsigned int /*flags*/) {
  return UpdateCaptureDependencies(stream);
}

CUDART_API Error cudaStreamUpdateCaptureDependencies_v2(void* stream, void* /*deps*/, const void* /*edges*/,
                                                        size_t /*count*/, unsigned int /*flags*/) {
  return UpdateCaptureDependencies(stream);
}

CUDART_API Error cudaGraphAddNode(void** node, void* graph, const void* /*deps*/, size_t /*count*/,
                                  void* /*params*/) {
  return AddGraphNode(node, graph);
}

CUDART_API Error cudaGraphAddNode_v2(void** node, void* graph, const void* /*deps*/, const void* /*edges*/,
                                     size_t /*count*/, void* /*params*/) {
  return AddGraphNode(node, graph);
}

CUDART_API Error cudaGraphNodeGetDependencies(void* node, void** /*deps*/, size_t* count) {
  return NodeDependencies(node, count);
}

CUDART_API Error cudaGraphNodeGetDependencies_v2(void* node, void** /*deps*/, void* /*edges*/, size_t* count) {
  return NodeDependencies(node, count);
}

CUDART_API Error cudaGetDriverEntryPointByVersion(const char*, void**, unsigned int, unsigned long long, int*);

CUDART_API Error cudaGetDriverEntryPoint(const char* symbol, void** function, unsigned long long flags, int* status) {
  return cudaGetDriverEntryPointByVersion(symbol, function, 12000, flags, status);
}
