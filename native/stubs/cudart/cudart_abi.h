// The CUDA runtime's C types the stub's entry points take and fill, written out here (the build must
// never need a CUDA toolkit) with the layouts of CUDA 13.0's driver_types.h and CUDA 12.x's;
// test/native/cudartAbi.test.ts compiles test/native/stubs/cudart_abi_check.cc against the real
// headers where they exist and checks every field's offset.
#ifndef VRAMFIT_STUBS_CUDART_ABI_H
#define VRAMFIT_STUBS_CUDART_ABI_H

#include <cstddef>

namespace cudart {

using Error = int;  // cudaError_t: the values below are driver_types.h's

constexpr Error kSuccess = 0;
constexpr Error kErrorInvalidValue = 1;
constexpr Error kErrorMemoryAllocation = 2;
constexpr Error kErrorInitializationError = 3;
constexpr Error kErrorInvalidSymbol = 13;
constexpr Error kErrorInvalidDevicePointer = 17;
constexpr Error kErrorInvalidMemcpyDirection = 21;
constexpr Error kErrorDevicesUnavailable = 46;
constexpr Error kErrorNoDevice = 100;
constexpr Error kErrorInvalidDevice = 101;
constexpr Error kErrorPeerAccessUnsupported = 217;
constexpr Error kErrorInvalidResourceHandle = 400;
constexpr Error kErrorSymbolNotFound = 500;
constexpr Error kErrorNotReady = 600;
constexpr Error kErrorPeerAccessAlreadyEnabled = 704;
constexpr Error kErrorHostMemoryAlreadyRegistered = 712;
constexpr Error kErrorHostMemoryNotRegistered = 713;
constexpr Error kErrorNotSupported = 801;
constexpr Error kErrorStreamCaptureUnsupported = 900;
constexpr Error kErrorUnknown = 999;

struct Dim3 {
  unsigned x, y, z;
};

struct Uuid {
  char bytes[16];
};

// The fields both majors share, in CUDA 13's order; CUDA 12 has deprecated ones between them, so
// each layout is spelled out whole.
struct DeviceProp13 {
  char name[256];
  Uuid uuid;
  char luid[8];
  unsigned int luidDeviceNodeMask;
  size_t totalGlobalMem;
  size_t sharedMemPerBlock;
  int regsPerBlock;
  int warpSize;
  size_t memPitch;
  int maxThreadsPerBlock;
  int maxThreadsDim[3];
  int maxGridSize[3];
  size_t totalConstMem;
  int major;
  int minor;
  size_t textureAlignment;
  size_t texturePitchAlignment;
  int multiProcessorCount;
  int integrated;
  int canMapHostMemory;
  int maxTexture1D;
  int maxTexture1DMipmap;
  int maxTexture2D[2];
  int maxTexture2DMipmap[2];
  int maxTexture2DLinear[3];
  int maxTexture2DGather[2];
  int maxTexture3D[3];
  int maxTexture3DAlt[3];
  int maxTextureCubemap;
  int maxTexture1DLayered[2];
  int maxTexture2DLayered[3];
  int maxTextureCubemapLayered[2];
  int maxSurface1D;
  int maxSurface2D[2];
  int maxSurface3D[3];
  int maxSurface1DLayered[2];
  int maxSurface2DLayered[3];
  int maxSurfaceCubemap;
  int maxSurfaceCubemapLayered[2];
  size_t surfaceAlignment;
  int concurrentKernels;
  int ECCEnabled;
  int pciBusID;
  int pciDeviceID;
  int pciDomainID;
  int tccDriver;
  int asyncEngineCount;
  int unifiedAddressing;
  int memoryBusWidth;
  int l2CacheSize;
  int persistingL2CacheMaxSize;
  int maxThreadsPerMultiProcessor;
  int streamPrioritiesSupported;
  int globalL1CacheSupported;
  int localL1CacheSupported;
  size_t sharedMemPerMultiprocessor;
  int regsPerMultiprocessor;
  int managedMemory;
  int isMultiGpuBoard;
  int multiGpuBoardGroupID;
  int hostNativeAtomicSupported;
  int pageableMemoryAccess;
  int concurrentManagedAccess;
  int computePreemptionSupported;
  int canUseHostPointerForRegisteredMem;
  int cooperativeLaunch;
  size_t sharedMemPerBlockOptin;
  int pageableMemoryAccessUsesHostPageTables;
  int directManagedMemAccessFromHost;
  int maxBlocksPerMultiProcessor;
  int accessPolicyMaxWindowSize;
  size_t reservedSharedMemPerBlock;
  int hostRegisterSupported;
  int sparseCudaArraySupported;
  int hostRegisterReadOnlySupported;
  int timelineSemaphoreInteropSupported;
  int memoryPoolsSupported;
  int gpuDirectRDMASupported;
  unsigned int gpuDirectRDMAFlushWritesOptions;
  int gpuDirectRDMAWritesOrdering;
  unsigned int memoryPoolSupportedHandleTypes;
  int deferredMappingCudaArraySupported;
  int ipcEventSupported;
  int clusterLaunch;
  int unifiedFunctionPointers;
  int deviceNumaConfig;
  int deviceNumaId;
  int mpsEnabled;
  int hostNumaId;
  unsigned int gpuPciDeviceID;
  unsigned int gpuPciSubsystemID;
  int hostNumaMultinodeIpcSupported;
  int reserved[56];
};
static_assert(sizeof(DeviceProp13) == 1008, "CUDA 13.0's sizeof(cudaDeviceProp)");

// CUDA 12.x (12.0-12.3's layout, which later 12.x releases extend only inside `reserved`): the
// deprecated clock, overlap, timeout, compute-mode, 1D-linear and precision-ratio fields that CUDA 13
// removed. Unverified on this machine (no CUDA 12 header here); written from the 12.x driver_types.h.
struct DeviceProp12 {
  char name[256];
  Uuid uuid;
  char luid[8];
  unsigned int luidDeviceNodeMask;
  size_t totalGlobalMem;
  size_t sharedMemPerBlock;
  int regsPerBlock;
  int warpSize;
  size_t memPitch;
  int maxThreadsPerBlock;
  int maxThreadsDim[3];
  int maxGridSize[3];
  int clockRate;
  size_t totalConstMem;
  int major;
  int minor;
  size_t textureAlignment;
  size_t texturePitchAlignment;
  int deviceOverlap;
  int multiProcessorCount;
  int kernelExecTimeoutEnabled;
  int integrated;
  int canMapHostMemory;
  int computeMode;
  int maxTexture1D;
  int maxTexture1DMipmap;
  int maxTexture1DLinear;
  int maxTexture2D[2];
  int maxTexture2DMipmap[2];
  int maxTexture2DLinear[3];
  int maxTexture2DGather[2];
  int maxTexture3D[3];
  int maxTexture3DAlt[3];
  int maxTextureCubemap;
  int maxTexture1DLayered[2];
  int maxTexture2DLayered[3];
  int maxTextureCubemapLayered[2];
  int maxSurface1D;
  int maxSurface2D[2];
  int maxSurface3D[3];
  int maxSurface1DLayered[2];
  int maxSurface2DLayered[3];
  int maxSurfaceCubemap;
  int maxSurfaceCubemapLayered[2];
  size_t surfaceAlignment;
  int concurrentKernels;
  int ECCEnabled;
  int pciBusID;
  int pciDeviceID;
  int pciDomainID;
  int tccDriver;
  int asyncEngineCount;
  int unifiedAddressing;
  int memoryClockRate;
  int memoryBusWidth;
  int l2CacheSize;
  int persistingL2CacheMaxSize;
  int maxThreadsPerMultiProcessor;
  int streamPrioritiesSupported;
  int globalL1CacheSupported;
  int localL1CacheSupported;
  size_t sharedMemPerMultiprocessor;
  int regsPerMultiprocessor;
  int managedMemory;
  int isMultiGpuBoard;
  int multiGpuBoardGroupID;
  int hostNativeAtomicSupported;
  int singleToDoublePrecisionPerfRatio;
  int pageableMemoryAccess;
  int concurrentManagedAccess;
  int computePreemptionSupported;
  int canUseHostPointerForRegisteredMem;
  int cooperativeLaunch;
  int cooperativeMultiDeviceLaunch;
  size_t sharedMemPerBlockOptin;
  int pageableMemoryAccessUsesHostPageTables;
  int directManagedMemAccessFromHost;
  int maxBlocksPerMultiProcessor;
  int accessPolicyMaxWindowSize;
  size_t reservedSharedMemPerBlock;
  int hostRegisterSupported;
  int sparseCudaArraySupported;
  int hostRegisterReadOnlySupported;
  int timelineSemaphoreInteropSupported;
  int memoryPoolsSupported;
  int gpuDirectRDMASupported;
  unsigned int gpuDirectRDMAFlushWritesOptions;
  int gpuDirectRDMAWritesOrdering;
  unsigned int memoryPoolSupportedHandleTypes;
  int deferredMappingCudaArraySupported;
  int ipcEventSupported;
  int clusterLaunch;
  int unifiedFunctionPointers;
  int reserved2[2];
  int reserved1[1];
  int reserved[60];
};

constexpr int kMemoryTypeUnregistered = 0;
constexpr int kMemoryTypeHost = 1;
constexpr int kMemoryTypeDevice = 2;

struct PointerAttributes {
  int type;
  int device;
  void* devicePointer;
  void* hostPointer;
  long reserved[8];
};
static_assert(sizeof(PointerAttributes) == 88, "CUDA 13.0's sizeof(cudaPointerAttributes)");

struct FuncAttributes {
  size_t sharedSizeBytes;
  size_t constSizeBytes;
  size_t localSizeBytes;
  int maxThreadsPerBlock;
  int numRegs;
  int ptxVersion;
  int binaryVersion;
  int cacheModeCA;
  int maxDynamicSharedSizeBytes;
  int preferredShmemCarveout;
  int clusterDimMustBeSet;
  int requiredClusterWidth;
  int requiredClusterHeight;
  int requiredClusterDepth;
  int clusterSchedulingPolicyPreference;
  int nonPortableClusterSizeAllowed;
  int reserved[16];
};
static_assert(sizeof(FuncAttributes) == 144, "CUDA 13.0's sizeof(cudaFuncAttributes)");

struct IpcHandle {  // cudaIpcMemHandle_t and cudaIpcEventHandle_t
  char reserved[64];
};

// cudaMemcpyKind
constexpr int kMemcpyHostToHost = 0;
constexpr int kMemcpyHostToDevice = 1;
constexpr int kMemcpyDeviceToHost = 2;
constexpr int kMemcpyDeviceToDevice = 3;
constexpr int kMemcpyDefault = 4;

// cudaStreamCaptureStatus
constexpr int kCaptureStatusNone = 0;
constexpr int kCaptureStatusActive = 1;

}  // namespace cudart

#endif  // VRAMFIT_STUBS_CUDART_ABI_H
