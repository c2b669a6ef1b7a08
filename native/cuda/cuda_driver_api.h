// The subset of the CUDA driver C ABI that vramfit uses, declared once for the addon and the simulator.
//
// We declare the types ourselves instead of including cuda.h: building must not need a CUDA toolkit,
// and the addon binds these functions at run time with dlsym, never at link time. Values and
// signatures follow cuda.h (CUDA 12); they are part of the driver's stable ABI.
#ifndef VRAMFIT_CUDA_DRIVER_API_H
#define VRAMFIT_CUDA_DRIVER_API_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st* CUcontext;
typedef unsigned long long CUdeviceptr;
typedef struct CUuuid_st {
  char bytes[16];
} CUuuid;
typedef int CUdevice_attribute;

enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_DEVICE_UNAVAILABLE = 46,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_CONTEXT = 201,
  CUDA_ERROR_CONTEXT_IS_DESTROYED = 709,
};

enum {
  CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
  CU_DEVICE_ATTRIBUTE_INTEGRATED = 18,
  CU_DEVICE_ATTRIBUTE_COMPUTE_MODE = 20,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
  // Asked by PyTorch's expandable segments before their first cuMemCreate (the simulated driver's).
  CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 102,
  CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED = 103,
  CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED = 110,
  CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED = 128,
};

// CUcomputemode: what CU_DEVICE_ATTRIBUTE_COMPUTE_MODE answers (1, exclusive-thread, was removed
// in CUDA 8).
enum {
  CU_COMPUTEMODE_DEFAULT = 0,
  CU_COMPUTEMODE_PROHIBITED = 2,
  CU_COMPUTEMODE_EXCLUSIVE_PROCESS = 3,
};

// The virtual-memory API's types (cuda.h, CUDA 10.2+), as PyTorch's expandable segments use it.
typedef unsigned long long CUmemGenericAllocationHandle;
typedef struct CUmemLocation_st {
  int type;  // CUmemLocationType: CU_MEM_LOCATION_TYPE_DEVICE
  int id;    // the device ordinal
} CUmemLocation;
typedef struct CUmemAllocationProp_st {
  int type;                  // CUmemAllocationType: CU_MEM_ALLOCATION_TYPE_PINNED
  int requestedHandleTypes;  // CUmemAllocationHandleType: none (not shared)
  CUmemLocation location;
  void* win32HandleMetaData;
  struct {
    unsigned char compressionType;
    unsigned char gpuDirectRDMACapable;
    unsigned short usage;
    unsigned char reserved[4];
  } allocFlags;
} CUmemAllocationProp;
typedef struct CUmemAccessDesc_st {
  CUmemLocation location;
  int flags;  // CUmemAccess_flags: CU_MEM_ACCESS_FLAGS_PROT_READWRITE
} CUmemAccessDesc;
enum {
  CU_MEM_ALLOCATION_TYPE_PINNED = 1,
  CU_MEM_LOCATION_TYPE_DEVICE = 1,
  CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3,
  CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0,
};

// Every driver function vramfit touches: X(name, parameter list). All return CUresult.
// The versioned names (_v2) are the symbols behind cuda.h's macros (cuMemAlloc is #defined to
// cuMemAlloc_v2, ...): binding them explicitly keeps the legacy 32-bit-size ABI out.
#define CUDA_DRIVER_REQUIRED_FUNCTIONS(X)                                     \
  X(cuInit, (unsigned int flags))                                             \
  X(cuDriverGetVersion, (int* driverVersion))                                 \
  X(cuDeviceGetCount, (int* count))                                           \
  X(cuDeviceGet, (CUdevice * device, int ordinal))                            \
  X(cuDeviceGetName, (char* name, int len, CUdevice dev))                     \
  X(cuDeviceTotalMem_v2, (size_t * bytes, CUdevice dev))                      \
  X(cuDeviceGetAttribute, (int* pi, CUdevice_attribute attrib, CUdevice dev)) \
  X(cuDeviceGetPCIBusId, (char* pciBusId, int len, CUdevice dev))             \
  X(cuDevicePrimaryCtxRetain, (CUcontext * pctx, CUdevice dev))               \
  X(cuDevicePrimaryCtxRelease_v2, (CUdevice dev))                             \
  X(cuCtxSetCurrent, (CUcontext ctx))                                         \
  X(cuCtxGetCurrent, (CUcontext * pctx))                                      \
  X(cuCtxSynchronize, (void))                                                 \
  X(cuMemGetInfo_v2, (size_t * free, size_t * total))                         \
  X(cuMemAlloc_v2, (CUdeviceptr * dptr, size_t bytesize))                     \
  X(cuMemFree_v2, (CUdeviceptr dptr))                                         \
  X(cuMemsetD8_v2, (CUdeviceptr dstDevice, unsigned char uc, size_t N))       \
  X(cuGetErrorName, (CUresult error, const char** pStr))                      \
  X(cuGetErrorString, (CUresult error, const char** pStr))

// cuDeviceGetUuid_v2 (CUDA 11.4+), or cuDeviceGetUuid on older drivers: one of them is needed.
#define CUDA_DRIVER_UUID_FUNCTIONS(X)               \
  X(cuDeviceGetUuid_v2, (CUuuid * uuid, CUdevice dev)) \
  X(cuDeviceGetUuid, (CUuuid * uuid, CUdevice dev))

// The virtual-memory API (CUDA 10.2+): the probe maps expandable segments' pages with it as PyTorch
// does (ExpandableSegment::map/unmapHandles); a driver without all of them gets cuMemAlloc instead.
#define CUDA_DRIVER_VIRTUAL_MEMORY_FUNCTIONS(X)                                                                         \
  X(cuMemGetAllocationGranularity, (size_t * granularity, const CUmemAllocationProp* prop, int option))                \
  X(cuMemAddressReserve, (CUdeviceptr * ptr, size_t size, size_t alignment, CUdeviceptr addr, unsigned long long flags)) \
  X(cuMemAddressFree, (CUdeviceptr ptr, size_t size))                                                                  \
  X(cuMemCreate, (CUmemGenericAllocationHandle * handle, size_t size, const CUmemAllocationProp* prop,                 \
                  unsigned long long flags))                                                                          \
  X(cuMemRelease, (CUmemGenericAllocationHandle handle))                                                               \
  X(cuMemMap, (CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,                       \
               unsigned long long flags))                                                                             \
  X(cuMemUnmap, (CUdeviceptr ptr, size_t size))                                                                        \
  X(cuMemSetAccess, (CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc, size_t count))

#define CUDA_DRIVER_FUNCTIONS(X) \
  CUDA_DRIVER_REQUIRED_FUNCTIONS(X) CUDA_DRIVER_UUID_FUNCTIONS(X) CUDA_DRIVER_VIRTUAL_MEMORY_FUNCTIONS(X)

// One function-pointer type per function, PFN_<name>, as the addon stores them after dlsym.
#define CUDA_DRIVER_PFN_TYPEDEF(name, params) typedef CUresult(*PFN_##name) params;
CUDA_DRIVER_FUNCTIONS(CUDA_DRIVER_PFN_TYPEDEF)
#undef CUDA_DRIVER_PFN_TYPEDEF

#ifdef __cplusplus
}
#endif

#endif  // VRAMFIT_CUDA_DRIVER_API_H
