// cudaDeviceProp as a real GPU fills it, for either major's layout: from the simulated device's
// CUDASIM_DEVICES fields and its compute capability's architecture (native/sim/architecture.h).
#ifndef VRAMFIT_STUBS_CUDART_PROPERTIES_H
#define VRAMFIT_STUBS_CUDART_PROPERTIES_H

#include <cstring>

#include "runtime.h"

namespace cudart {

// The fields both majors have. Limits that are the same on every GPU since Volta (1024 threads per
// block, 48 KiB static shared memory per block, 64 Ki registers, warps of 32, the texture and
// surface limits) are the Programming Guide's and cudaDeviceProp's documented values; clocks are
// not modelled (CUDA 13 dropped them from cudaDeviceProp) and read 0 where CUDA 12 has them.
template <typename Prop>
void FillCommonProperties(const Device& device, Prop& prop) {
  std::memset(&prop, 0, sizeof prop);
  std::strncpy(prop.name, device.name.c_str(), sizeof prop.name - 1);
  std::memcpy(prop.uuid.bytes, device.uuid, 16);
  const cudasim::DeviceSpec& spec = *device.spec;
  const cudasim::Architecture& arch = *device.arch;
  prop.totalGlobalMem = device.totalBytes;
  prop.sharedMemPerBlock = 48 * 1024;
  prop.regsPerBlock = 65536;
  prop.warpSize = 32;
  prop.memPitch = 2147483647;
  prop.maxThreadsPerBlock = 1024;
  prop.maxThreadsDim[0] = 1024, prop.maxThreadsDim[1] = 1024, prop.maxThreadsDim[2] = 64;
  prop.maxGridSize[0] = 2147483647, prop.maxGridSize[1] = 65535, prop.maxGridSize[2] = 65535;
  prop.totalConstMem = 65536;
  prop.major = spec.ccMajor;
  prop.minor = spec.ccMinor;
  prop.textureAlignment = 512;
  prop.texturePitchAlignment = 32;
  prop.multiProcessorCount = spec.multiprocessorCount;
  prop.integrated = spec.integrated ? 1 : 0;
  prop.canMapHostMemory = 1;
  prop.maxTexture1D = 131072;
  prop.maxTexture1DMipmap = 32768;
  prop.maxTexture2D[0] = 131072, prop.maxTexture2D[1] = 65536;
  prop.maxTexture2DMipmap[0] = 32768, prop.maxTexture2DMipmap[1] = 32768;
  prop.maxTexture2DLinear[0] = 131072, prop.maxTexture2DLinear[1] = 65000, prop.maxTexture2DLinear[2] = 2097120;
  prop.maxTexture2DGather[0] = 32768, prop.maxTexture2DGather[1] = 32768;
  prop.maxTexture3D[0] = prop.maxTexture3D[1] = prop.maxTexture3D[2] = 16384;
  prop.maxTexture3DAlt[0] = 8192, prop.maxTexture3DAlt[1] = 8192, prop.maxTexture3DAlt[2] = 32768;
  prop.maxTextureCubemap = 32768;
  prop.maxTexture1DLayered[0] = 32768, prop.maxTexture1DLayered[1] = 2048;
  prop.maxTexture2DLayered[0] = 32768, prop.maxTexture2DLayered[1] = 32768, prop.maxTexture2DLayered[2] = 2048;
  prop.maxTextureCubemapLayered[0] = 32768, prop.maxTextureCubemapLayered[1] = 2046;
  prop.maxSurface1D = 32768;
  prop.maxSurface2D[0] = 131072, prop.maxSurface2D[1] = 65536;
  prop.maxSurface3D[0] = prop.maxSurface3D[1] = prop.maxSurface3D[2] = 16384;
  prop.maxSurface1DLayered[0] = 32768, prop.maxSurface1DLayered[1] = 2048;
  prop.maxSurface2DLayered[0] = 32768, prop.maxSurface2DLayered[1] = 32768, prop.maxSurface2DLayered[2] = 2048;
  prop.maxSurfaceCubemap = 32768;
  prop.maxSurfaceCubemapLayered[0] = 32768, prop.maxSurfaceCubemapLayered[1] = 2046;
  prop.surfaceAlignment = 512;
  prop.concurrentKernels = 1;
  prop.ECCEnabled = spec.integrated ? 0 : 1;
  prop.pciBusID = spec.pciBus;
  prop.asyncEngineCount = spec.integrated ? 1 : 2;
  prop.unifiedAddressing = 1;
  prop.memoryBusWidth = arch.memoryBusWidthBits;
  prop.l2CacheSize = static_cast<int>(spec.l2CacheBytes != 0 ? spec.l2CacheBytes : arch.l2CacheBytes);
  prop.maxThreadsPerMultiProcessor = arch.maxThreadsPerMultiprocessor;
  prop.streamPrioritiesSupported = 1;
  prop.globalL1CacheSupported = 1;
  prop.localL1CacheSupported = 1;
  prop.sharedMemPerMultiprocessor = arch.sharedMemPerMultiprocessor;
  prop.regsPerMultiprocessor = 65536;
  prop.managedMemory = 1;
  prop.multiGpuBoardGroupID = device.ordinal;
  prop.concurrentManagedAccess = 1;
  prop.computePreemptionSupported = 1;
  prop.canUseHostPointerForRegisteredMem = 1;
  prop.cooperativeLaunch = 1;
  prop.sharedMemPerBlockOptin = arch.sharedMemPerBlockOptin;
  prop.maxBlocksPerMultiProcessor = arch.maxBlocksPerMultiprocessor;
  prop.reservedSharedMemPerBlock = arch.reservedSharedMemPerBlock;
  prop.hostRegisterSupported = 1;
  prop.sparseCudaArraySupported = 1;
  prop.timelineSemaphoreInteropSupported = 1;
  prop.memoryPoolsSupported = 1;
  prop.memoryPoolSupportedHandleTypes = 1;  // cudaMemHandleTypePosixFileDescriptor
  prop.ipcEventSupported = 1;
  prop.clusterLaunch = spec.ccMajor >= 9 ? 1 : 0;  // thread-block clusters arrived with Hopper
}

}  // namespace cudart

#endif  // VRAMFIT_STUBS_CUDART_PROPERTIES_H
