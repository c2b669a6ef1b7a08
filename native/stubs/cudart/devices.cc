// Devices: enumeration, the current device, properties as attributes, peers, versions.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "../../sim/sim_config.h"
#include "properties.h"
#include "runtime.h"
#include "variant.h"

using namespace cudart;

namespace {

// cudaDeviceAttr values (driver_types.h) answered from the same cudaDeviceProp a
// cudaGetDeviceProperties call fills, so the two never disagree.
bool AttributeValue(const Device& device, int attr, int& value) {
  DeviceProp13 p;
  FillCommonProperties(device, p);
  switch (attr) {
    case 1: value = p.maxThreadsPerBlock; return true;
    case 2: case 3: case 4: value = p.maxThreadsDim[attr - 2]; return true;
    case 5: case 6: case 7: value = p.maxGridSize[attr - 5]; return true;
    case 8: value = static_cast<int>(p.sharedMemPerBlock); return true;
    case 9: value = static_cast<int>(p.totalConstMem); return true;
    case 10: value = p.warpSize; return true;
    case 11: value = static_cast<int>(p.memPitch); return true;
    case 12: value = p.regsPerBlock; return true;
    case 13: value = 0; return true;  // cudaDevAttrClockRate: not modelled
    case 14: value = static_cast<int>(p.textureAlignment); return true;
    case 15: value = 1; return true;  // cudaDevAttrGpuOverlap
    case 16: value = p.multiProcessorCount; return true;
    case 17: value = 0; return true;  // cudaDevAttrKernelExecTimeout: no display watchdog
    case 18: value = p.integrated; return true;
    case 19: value = p.canMapHostMemory; return true;
    case 20: value = device.spec->computeMode; return true;
    case 30: value = static_cast<int>(p.surfaceAlignment); return true;
    case 31: value = p.concurrentKernels; return true;
    case 32: value = p.ECCEnabled; return true;
    case 33: value = p.pciBusID; return true;
    case 34: value = p.pciDeviceID; return true;
    case 35: value = p.tccDriver; return true;
    case 36: value = 0; return true;  // cudaDevAttrMemoryClockRate: not modelled
    case 37: value = p.memoryBusWidth; return true;
    case 38: value = p.l2CacheSize; return true;
    case 39: value = p.maxThreadsPerMultiProcessor; return true;
    case 40: value = p.asyncEngineCount; return true;
    case 41: value = p.unifiedAddressing; return true;
    case 50: value = p.pciDomainID; return true;
    case 51: value = static_cast<int>(p.texturePitchAlignment); return true;
    case 75: value = p.major; return true;
    case 76: value = p.minor; return true;
    case 78: value = p.streamPrioritiesSupported; return true;
    case 79: value = p.globalL1CacheSupported; return true;
    case 80: value = p.localL1CacheSupported; return true;
    case 81: value = static_cast<int>(p.sharedMemPerMultiprocessor); return true;
    case 82: value = p.regsPerMultiprocessor; return true;
    case 83: value = p.managedMemory; return true;
    case 84: value = p.isMultiGpuBoard; return true;
    case 85: value = p.multiGpuBoardGroupID; return true;
    case 86: value = p.hostNativeAtomicSupported; return true;
    case 87: value = 2; return true;  // cudaDevAttrSingleToDoublePrecisionPerfRatio of the datacenter parts
    case 88: value = p.pageableMemoryAccess; return true;
    case 89: value = p.concurrentManagedAccess; return true;
    case 90: value = p.computePreemptionSupported; return true;
    case 91: value = p.canUseHostPointerForRegisteredMem; return true;
    case 95: value = p.cooperativeLaunch; return true;
    case 97: value = static_cast<int>(p.sharedMemPerBlockOptin); return true;
    case 98: value = 1; return true;  // cudaDevAttrCanFlushRemoteWrites
    case 99: value = p.hostRegisterSupported; return true;
    case 100: value = p.pageableMemoryAccessUsesHostPageTables; return true;
    case 101: value = p.directManagedMemAccessFromHost; return true;
    case 106: value = p.maxBlocksPerMultiProcessor; return true;
    case 108: value = p.persistingL2CacheMaxSize; return true;
    case 109: value = p.accessPolicyMaxWindowSize; return true;
    case 111: value = static_cast<int>(p.reservedSharedMemPerBlock); return true;
    case 112: value = p.sparseCudaArraySupported; return true;
    case 113: value = p.hostRegisterReadOnlySupported; return true;
    case 114: value = p.timelineSemaphoreInteropSupported; return true;
    case 115: value = p.memoryPoolsSupported; return true;
    case 116: value = p.gpuDirectRDMASupported; return true;
    case 117: value = static_cast<int>(p.gpuDirectRDMAFlushWritesOptions); return true;
    case 118: value = p.gpuDirectRDMAWritesOrdering; return true;
    case 119: value = static_cast<int>(p.memoryPoolSupportedHandleTypes); return true;
    case 120: value = p.clusterLaunch; return true;
    case 121: value = p.deferredMappingCudaArraySupported; return true;
    case 125: value = p.ipcEventSupported; return true;
    case 126: value = 4; return true;  // cudaDevAttrMemSyncDomainCount: 4 on Hopper (1 before)
    case 130: value = p.deviceNumaConfig; return true;
    case 131: value = -1; return true;  // cudaDevAttrNumaId: not a NUMA node
    case 133: value = p.mpsEnabled; return true;
    case 134: value = -1; return true;  // cudaDevAttrHostNumaId
    default: return false;
  }
}

}  // namespace

CUDART_API Error cudaGetDeviceCount(int* count) {
  if (count == nullptr) return Return(kErrorInvalidValue);
  Error error = Initialize();
  *count = error == kSuccess ? static_cast<int>(R().devices.size()) : 0;
  return Return(error);
}

CUDART_API Error cudaGetDevice(int* device) {
  if (device == nullptr) return Return(kErrorInvalidValue);
  *device = CurrentOrdinal();
  return Return(Initialize());
}

// Since CUDA 12.0 cudaSetDevice initializes the device's primary context (CUDA Runtime API,
// cudaSetDevice: "this function will also immediately initialize the runtime state on the
// primary context").
CUDART_API Error cudaSetDevice(int ordinal) {
  Device* device = nullptr;
  if (Error error = UseDevice(ordinal, device)) return Return(error);
  SetCurrentOrdinal(ordinal);
  return kSuccess;
}

CUDART_API Error cudaDeviceGetAttribute(int* value, int attr, int ordinal) {
  Device* device = nullptr;
  if (Error error = DeviceOf(ordinal, device)) return Return(error);
  if (value == nullptr || !AttributeValue(*device, attr, *value)) return Return(kErrorInvalidValue);
  return kSuccess;
}

CUDART_API Error cudaDeviceGetPCIBusId(char* pciBusId, int len, int ordinal) {
  Device* device = nullptr;
  if (Error error = DeviceOf(ordinal, device)) return Return(error);
  char text[32];
  std::snprintf(text, sizeof text, "0000:%02X:00.0", device->spec->pciBus);  // as the simulated driver says
  if (pciBusId == nullptr || len < static_cast<int>(std::strlen(text)) + 1) return Return(kErrorInvalidValue);
  std::memcpy(pciBusId, text, std::strlen(text) + 1);
  return kSuccess;
}

// Peer access between simulated GPUs: allowed, as on an NVLink machine; it changes nothing here.
CUDART_API Error cudaDeviceCanAccessPeer(int* canAccessPeer, int ordinal, int peer) {
  Device* a = nullptr;
  Device* b = nullptr;
  if (Error error = DeviceOf(ordinal, a)) return Return(error);
  if (Error error = DeviceOf(peer, b)) return Return(error);
  if (canAccessPeer == nullptr) return Return(kErrorInvalidValue);
  *canAccessPeer = ordinal != peer ? 1 : 0;
  return kSuccess;
}

CUDART_API Error cudaDeviceEnablePeerAccess(int peer, unsigned int flags) {
  Device* device = nullptr;
  if (Error error = DeviceOf(peer, device)) return Return(error);
  if (flags != 0) return Return(kErrorInvalidValue);
  if (peer == CurrentOrdinal()) return Return(kErrorInvalidDevice);
  return kSuccess;
}

// Kernels do nothing and finish at once: there is never anything to wait for.
CUDART_API Error cudaDeviceSynchronize(void) {
  Device* device = nullptr;
  return Return(UseCurrentDevice(device));
}

CUDART_API Error cudaRuntimeGetVersion(int* version) {
  if (version == nullptr) return Return(kErrorInvalidValue);
  *version = RuntimeVersion();
  return kSuccess;
}

// CUDASIM_DRIVER_VERSION when set (as the simulated driver reports it), else a driver as new as the
// runtime: the stub must not look like an install whose driver is too old for it.
CUDART_API Error cudaDriverGetVersion(int* version) {
  if (version == nullptr) return Return(kErrorInvalidValue);
  const char* text = std::getenv("CUDASIM_DRIVER_VERSION");
  *version = text != nullptr && *text != '\0' ? cudasim::ReadDriverVersion() : RuntimeVersion();
  return kSuccess;
}

// Priorities 0 (least) to -5 (greatest): what an H100 or A100 reports.
CUDART_API Error cudaDeviceGetStreamPriorityRange(int* leastPriority, int* greatestPriority) {
  if (leastPriority != nullptr) *leastPriority = 0;
  if (greatestPriority != nullptr) *greatestPriority = -5;
  return kSuccess;
}

CUDART_API Error cudaProfilerStart(void) {
  return kSuccess;
}

CUDART_API Error cudaProfilerStop(void) {
  return kSuccess;
}
