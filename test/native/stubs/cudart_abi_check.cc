// Compiled by test/native/cudartAbi.test.ts against the real CUDA 13 headers (the CUDA toolkit's, or
// the nvidia-cuda-runtime wheel's in VRAMFIT_CUDA_INCLUDE): every field of the stub's own copies of
// the runtime's structs (native/stubs/cudart/cudart_abi.h) must sit where CUDA 13 puts it.
#include <cuda_runtime_api.h>

#include <cstddef>

#include "../../../native/stubs/cudart/cudart_abi.h"

static_assert(CUDART_VERSION >= 13000 && CUDART_VERSION < 14000, "the CUDA 13 layouts are checked against CUDA 13");

#define CHECK(ours, theirs, field)                                                   \
  static_assert(offsetof(ours, field) == offsetof(theirs, field), #theirs "." #field); \
  static_assert(sizeof(ours::field) == sizeof(theirs::field), #theirs "." #field " size")

static_assert(sizeof(cudart::DeviceProp13) == sizeof(cudaDeviceProp), "cudaDeviceProp");
static_assert(sizeof(cudart::PointerAttributes) == sizeof(cudaPointerAttributes), "cudaPointerAttributes");
static_assert(sizeof(cudart::FuncAttributes) == sizeof(cudaFuncAttributes), "cudaFuncAttributes");
static_assert(sizeof(cudart::IpcHandle) == sizeof(cudaIpcMemHandle_t), "cudaIpcMemHandle_t");
static_assert(sizeof(cudart::IpcHandle) == sizeof(cudaIpcEventHandle_t), "cudaIpcEventHandle_t");
static_assert(sizeof(cudart::Dim3) == sizeof(dim3), "dim3");

static_assert(cudart::kErrorMemoryAllocation == cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation");
static_assert(cudart::kErrorInitializationError == cudaErrorInitializationError, "cudaErrorInitializationError");
static_assert(cudart::kErrorNoDevice == cudaErrorNoDevice, "cudaErrorNoDevice");
static_assert(cudart::kErrorInvalidDevice == cudaErrorInvalidDevice, "cudaErrorInvalidDevice");
static_assert(cudart::kErrorDevicesUnavailable == cudaErrorDevicesUnavailable, "cudaErrorDevicesUnavailable");
static_assert(cudart::kErrorInvalidResourceHandle == cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle");
static_assert(cudart::kErrorStreamCaptureUnsupported == cudaErrorStreamCaptureUnsupported, "cudaErrorStreamCaptureUnsupported");
static_assert(cudart::kMemcpyDeviceToHost == cudaMemcpyDeviceToHost, "cudaMemcpyDeviceToHost");
static_assert(cudart::kMemcpyDefault == cudaMemcpyDefault, "cudaMemcpyDefault");
static_assert(cudart::kMemoryTypeDevice == cudaMemoryTypeDevice, "cudaMemoryTypeDevice");
static_assert(cudart::kCaptureStatusActive == cudaStreamCaptureStatusActive, "cudaStreamCaptureStatusActive");

CHECK(cudart::DeviceProp13, cudaDeviceProp, name);
CHECK(cudart::DeviceProp13, cudaDeviceProp, uuid);
CHECK(cudart::DeviceProp13, cudaDeviceProp, luid);
CHECK(cudart::DeviceProp13, cudaDeviceProp, luidDeviceNodeMask);
CHECK(cudart::DeviceProp13, cudaDeviceProp, totalGlobalMem);
CHECK(cudart::DeviceProp13, cudaDeviceProp, sharedMemPerBlock);
CHECK(cudart::DeviceProp13, cudaDeviceProp, regsPerBlock);
CHECK(cudart::DeviceProp13, cudaDeviceProp, warpSize);
CHECK(cudart::DeviceProp13, cudaDeviceProp, memPitch);
CHECK(cudart::DeviceProp13, cudaDeviceProp, maxThreadsPerBlock);
CHECK(cudart::DeviceProp13, cudaDeviceProp, maxThreadsDim);
CHECK(cudart::DeviceProp13, cudaDeviceProp, maxGridSize);
CHECK(cudart::DeviceProp13, cudaDeviceProp, totalConstMem);
CHECK(cudart::DeviceProp13, cudaDeviceProp, major);
CHECK(cudart::DeviceProp13, cudaDeviceProp, minor);
CHECK(cudart::DeviceProp13, cudaDeviceProp, textureAlignment);
CHECK(cudart::DeviceProp13, cudaDeviceProp, texturePitchAlignment);
CHECK(cudart::DeviceProp13, cudaDeviceProp, multiProcessorCount);
CHECK(cudart::DeviceProp13, cudaDeviceProp, integrated);
CHECK(cudart::DeviceProp13, cudaDeviceProp, canMapHostMemory);
CHECK(cudart::DeviceProp13, cudaDeviceProp, maxTexture1D);
CHECK(cudart::DeviceProp13, cudaDeviceProp, maxTexture1DMipmap);
CHECK(cudart::DeviceProp13, cudaDeviceProp, maxTexture2D);
CHECK(cudart::DeviceProp13, cudaDeviceProp, maxTexture2DMipmap);
CHECK(cudart::DeviceProp13, cudaDeviceProp, maxTexture2DLinear);
CHECK(cudart::DeviceProp13, cudaDeviceProp, maxTexture2DGather);
CHECK(cudart::DeviceProp13, cudaDeviceProp, maxTexture3D);
CHECK(cudart::DeviceProp13, cudaDeviceProp, maxTexture3DAlt);
CHECK(cudart::DeviceProp13, cudaDeviceProp, maxTextureCubemap);
CHECK(cudart::DeviceProp13, cudaDeviceProp, maxTexture1DLayered);
CHECK(cudart::DeviceProp13, cudaDeviceProp, maxTexture2DLayered);
CHECK(cudart::DeviceProp13, cudaDeviceProp, maxTextureCubemapLayered);
CHECK(cudart::DeviceProp13, cudaDeviceProp, maxSurface1D);
CHECK(cudart::DeviceProp13, cudaDeviceProp, maxSurface2D);
CHECK(cudart::DeviceProp13, cudaDeviceProp, maxSurface3D);
CHECK(cudart::DeviceProp13, cudaDeviceProp, maxSurface1DLayered);
CHECK(cudart::DeviceProp13, cudaDeviceProp, maxSurface2DLayered);
CHECK(cudart::DeviceProp13, cudaDeviceProp, maxSurfaceCubemap);
CHECK(cudart::DeviceProp13, cudaDeviceProp, maxSurfaceCubemapLayered);
CHECK(cudart::DeviceProp13, cudaDeviceProp, surfaceAlignment);
CHECK(cudart::DeviceProp13, cudaDeviceProp, concurrentKernels);
CHECK(cudart::DeviceProp13, cudaDeviceProp, ECCEnabled);
CHECK(cudart::DeviceProp13, cudaDeviceProp, pciBusID);
CHECK(cudart::DeviceProp13, cudaDeviceProp, pciDeviceID);
CHECK(cudart::DeviceProp13, cudaDeviceProp, pciDomainID);
CHECK(cudart::DeviceProp13, cudaDeviceProp, tccDriver);
CHECK(cudart::DeviceProp13, cudaDeviceProp, asyncEngineCount);
CHECK(cudart::DeviceProp13, cudaDeviceProp, unifiedAddressing);
CHECK(cudart::DeviceProp13, cudaDeviceProp, memoryBusWidth);
CHECK(cudart::DeviceProp13, cudaDeviceProp, l2CacheSize);
CHECK(cudart::DeviceProp13, cudaDeviceProp, persistingL2CacheMaxSize);
CHECK(cudart::DeviceProp13, cudaDeviceProp, maxThreadsPerMultiProcessor);
CHECK(cudart::DeviceProp13, cudaDeviceProp, streamPrioritiesSupported);
CHECK(cudart::DeviceProp13, cudaDeviceProp, globalL1CacheSupported);
CHECK(cudart::DeviceProp13, cudaDeviceProp, localL1CacheSupported);
CHECK(cudart::DeviceProp13, cudaDeviceProp, sharedMemPerMultiprocessor);
CHECK(cudart::DeviceProp13, cudaDeviceProp, regsPerMultiprocessor);
CHECK(cudart::DeviceProp13, cudaDeviceProp, managedMemory);
CHECK(cudart::DeviceProp13, cudaDeviceProp, isMultiGpuBoard);
CHECK(cudart::DeviceProp13, cudaDeviceProp, multiGpuBoardGroupID);
CHECK(cudart::DeviceProp13, cudaDeviceProp, hostNativeAtomicSupported);
CHECK(cudart::DeviceProp13, cudaDeviceProp, pageableMemoryAccess);
CHECK(cudart::DeviceProp13, cudaDeviceProp, concurrentManagedAccess);
CHECK(cudart::DeviceProp13, cudaDeviceProp, computePreemptionSupported);
CHECK(cudart::DeviceProp13, cudaDeviceProp, canUseHostPointerForRegisteredMem);
CHECK(cudart::DeviceProp13, cudaDeviceProp, cooperativeLaunch);
CHECK(cudart::DeviceProp13, cudaDeviceProp, sharedMemPerBlockOptin);
CHECK(cudart::DeviceProp13, cudaDeviceProp, pageableMemoryAccessUsesHostPageTables);
CHECK(cudart::DeviceProp13, cudaDeviceProp, directManagedMemAccessFromHost);
CHECK(cudart::DeviceProp13, cudaDeviceProp, maxBlocksPerMultiProcessor);
CHECK(cudart::DeviceProp13, cudaDeviceProp, accessPolicyMaxWindowSize);
CHECK(cudart::DeviceProp13, cudaDeviceProp, reservedSharedMemPerBlock);
CHECK(cudart::DeviceProp13, cudaDeviceProp, hostRegisterSupported);
CHECK(cudart::DeviceProp13, cudaDeviceProp, sparseCudaArraySupported);
CHECK(cudart::DeviceProp13, cudaDeviceProp, hostRegisterReadOnlySupported);
CHECK(cudart::DeviceProp13, cudaDeviceProp, timelineSemaphoreInteropSupported);
CHECK(cudart::DeviceProp13, cudaDeviceProp, memoryPoolsSupported);
CHECK(cudart::DeviceProp13, cudaDeviceProp, gpuDirectRDMASupported);
CHECK(cudart::DeviceProp13, cudaDeviceProp, gpuDirectRDMAFlushWritesOptions);
CHECK(cudart::DeviceProp13, cudaDeviceProp, gpuDirectRDMAWritesOrdering);
CHECK(cudart::DeviceProp13, cudaDeviceProp, memoryPoolSupportedHandleTypes);
CHECK(cudart::DeviceProp13, cudaDeviceProp, deferredMappingCudaArraySupported);
CHECK(cudart::DeviceProp13, cudaDeviceProp, ipcEventSupported);
CHECK(cudart::DeviceProp13, cudaDeviceProp, clusterLaunch);
CHECK(cudart::DeviceProp13, cudaDeviceProp, unifiedFunctionPointers);
CHECK(cudart::DeviceProp13, cudaDeviceProp, deviceNumaConfig);
CHECK(cudart::DeviceProp13, cudaDeviceProp, deviceNumaId);
CHECK(cudart::DeviceProp13, cudaDeviceProp, mpsEnabled);
CHECK(cudart::DeviceProp13, cudaDeviceProp, hostNumaId);
CHECK(cudart::DeviceProp13, cudaDeviceProp, gpuPciDeviceID);
CHECK(cudart::DeviceProp13, cudaDeviceProp, gpuPciSubsystemID);
CHECK(cudart::DeviceProp13, cudaDeviceProp, hostNumaMultinodeIpcSupported);
CHECK(cudart::DeviceProp13, cudaDeviceProp, reserved);

CHECK(cudart::PointerAttributes, cudaPointerAttributes, type);
CHECK(cudart::PointerAttributes, cudaPointerAttributes, device);
CHECK(cudart::PointerAttributes, cudaPointerAttributes, reserved);

CHECK(cudart::FuncAttributes, cudaFuncAttributes, sharedSizeBytes);
CHECK(cudart::FuncAttributes, cudaFuncAttributes, constSizeBytes);
CHECK(cudart::FuncAttributes, cudaFuncAttributes, localSizeBytes);
CHECK(cudart::FuncAttributes, cudaFuncAttributes, maxThreadsPerBlock);
CHECK(cudart::FuncAttributes, cudaFuncAttributes, numRegs);
CHECK(cudart::FuncAttributes, cudaFuncAttributes, ptxVersion);
CHECK(cudart::FuncAttributes, cudaFuncAttributes, binaryVersion);
CHECK(cudart::FuncAttributes, cudaFuncAttributes, cacheModeCA);
CHECK(cudart::FuncAttributes, cudaFuncAttributes, maxDynamicSharedSizeBytes);
CHECK(cudart::FuncAttributes, cudaFuncAttributes, preferredShmemCarveout);
CHECK(cudart::FuncAttributes, cudaFuncAttributes, clusterDimMustBeSet);
CHECK(cudart::FuncAttributes, cudaFuncAttributes, requiredClusterWidth);
CHECK(cudart::FuncAttributes, cudaFuncAttributes, requiredClusterHeight);
CHECK(cudart::FuncAttributes, cudaFuncAttributes, requiredClusterDepth);
CHECK(cudart::FuncAttributes, cudaFuncAttributes, clusterSchedulingPolicyPreference);
CHECK(cudart::FuncAttributes, cudaFuncAttributes, nonPortableClusterSizeAllowed);
CHECK(cudart::FuncAttributes, cudaFuncAttributes, reserved);

int main() {
  return 0;
}
