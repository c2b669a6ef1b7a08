// The subset of the NVML C ABI (libnvidia-ml.so.1) that vramfit uses, declared once for the addon
// and the simulated NVML.
//
// Declared here rather than included from the CUDA toolkit's nvml.h, for the reason
// cuda_driver_api.h gives: building must not need a toolkit, and the library is bound at run time
// with dlsym. Types, values and layouts follow nvml.h (R535+); they are part of NVML's stable ABI,
// and the static_asserts below pin every offset the code relies on (test/native/nvmlAbi.test.ts
// checks the same numbers from the JS side).
#ifndef VRAMFIT_NVML_API_H
#define VRAMFIT_NVML_API_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st* nvmlDevice_t;

enum {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NO_PERMISSION = 4,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NVML_ERROR_FUNCTION_NOT_FOUND = 13,
  NVML_ERROR_GPU_IS_LOST = 15,
  NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
  NVML_ERROR_UNKNOWN = 999,
};

enum { NVML_DEVICE_MIG_DISABLE = 0, NVML_DEVICE_MIG_ENABLE = 1 };

// nvmlComputeMode_t: the same values as the driver's CUcomputemode (1, exclusive-thread, removed).
typedef int nvmlComputeMode_t;
enum { NVML_COMPUTEMODE_DEFAULT = 0, NVML_COMPUTEMODE_PROHIBITED = 2, NVML_COMPUTEMODE_EXCLUSIVE_PROCESS = 3 };

// nvmlDeviceGetUUID: "GPU-" or "MIG-" and 36 characters; NVML_DEVICE_UUID_V2_BUFFER_SIZE.
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE 96
#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80
// usedGpuMemory when the driver cannot tell (e.g. a process in another container, some MIG setups).
#define NVML_VALUE_NOT_AVAILABLE (~0ULL)

// nvmlMemory_t (v1): total = free + used; "used" includes the memory the driver reserves.
typedef struct nvmlMemory_st {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_t;

// nvmlMemory_v2_t: versioned; total is the physical memory, reserved is what the driver and
// firmware set aside, and used includes reserved (so free + used = total here too).
typedef struct nvmlMemory_v2_st {
  unsigned int version;  // must be nvmlMemory_v2
  unsigned long long total;
  unsigned long long reserved;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_v2_t;

// NVML_STRUCT_VERSION(Memory, 2): the struct's size in the low bits, the version in the top byte.
#define NVML_STRUCT_VERSION(data, ver) (unsigned int)(sizeof(nvml##data##_v##ver##_t) | ((ver) << 24U))
#define nvmlMemory_v2 NVML_STRUCT_VERSION(Memory, 2)

// What nvmlDeviceGetComputeRunningProcesses (unversioned, pre-R470) fills.
typedef struct nvmlProcessInfo_v1_st {
  unsigned int pid;
  unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;

// What the _v2 and _v3 entry points fill (nvml.h's nvmlProcessInfo_t); the instance ids are
// 0xFFFFFFFF unless MIG is enabled.
typedef struct nvmlProcessInfo_v2_st {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlProcessInfo_v2_t;

#ifdef __cplusplus
static_assert(sizeof(nvmlMemory_t) == 24, "nvmlMemory_t");
static_assert(sizeof(nvmlMemory_v2_t) == 40 && offsetof(nvmlMemory_v2_t, total) == 8 &&
                  offsetof(nvmlMemory_v2_t, reserved) == 16 && offsetof(nvmlMemory_v2_t, free) == 24 &&
                  offsetof(nvmlMemory_v2_t, used) == 32,
              "nvmlMemory_v2_t");
static_assert(nvmlMemory_v2 == 0x02000028u, "nvmlMemory_v2");
static_assert(sizeof(nvmlProcessInfo_v1_t) == 16 && offsetof(nvmlProcessInfo_v1_t, usedGpuMemory) == 8,
              "nvmlProcessInfo_v1_t");
static_assert(sizeof(nvmlProcessInfo_v2_t) == 24 && offsetof(nvmlProcessInfo_v2_t, usedGpuMemory) == 8 &&
                  offsetof(nvmlProcessInfo_v2_t, gpuInstanceId) == 16 &&
                  offsetof(nvmlProcessInfo_v2_t, computeInstanceId) == 20,
              "nvmlProcessInfo_v2_t");
#endif

// Functions vramfit cannot do without: X(name, parameter list). All return nvmlReturn_t.
#define NVML_REQUIRED_FUNCTIONS(X)                                                  \
  X(nvmlInit_v2, (void))                                                            \
  X(nvmlShutdown, (void))                                                           \
  X(nvmlSystemGetDriverVersion, (char* version, unsigned int length))              \
  X(nvmlDeviceGetCount_v2, (unsigned int* deviceCount))                             \
  X(nvmlDeviceGetHandleByIndex_v2, (unsigned int index, nvmlDevice_t* device))      \
  X(nvmlDeviceGetUUID, (nvmlDevice_t device, char* uuid, unsigned int length))      \
  X(nvmlDeviceGetMemoryInfo, (nvmlDevice_t device, nvmlMemory_t * memory))

// Functions used when the library has them: newer ones first, each with an older fallback or
// a documented loss (no reserved bytes, no process list, no MIG instances).
#define NVML_OPTIONAL_FUNCTIONS(X)                                                                              \
  X(nvmlDeviceGetMemoryInfo_v2, (nvmlDevice_t device, nvmlMemory_v2_t * memory))                                \
  X(nvmlDeviceGetComputeRunningProcesses_v3, (nvmlDevice_t device, unsigned int* infoCount,                     \
                                              nvmlProcessInfo_v2_t* infos))                                     \
  X(nvmlDeviceGetComputeRunningProcesses_v2, (nvmlDevice_t device, unsigned int* infoCount,                     \
                                              nvmlProcessInfo_v2_t* infos))                                     \
  X(nvmlDeviceGetComputeRunningProcesses, (nvmlDevice_t device, unsigned int* infoCount,                        \
                                           nvmlProcessInfo_v1_t* infos))                                        \
  X(nvmlDeviceGetMigMode, (nvmlDevice_t device, unsigned int* currentMode, unsigned int* pendingMode))          \
  X(nvmlDeviceGetMaxMigDeviceCount, (nvmlDevice_t device, unsigned int* count))                                 \
  X(nvmlDeviceGetMigDeviceHandleByIndex, (nvmlDevice_t device, unsigned int index, nvmlDevice_t* migDevice))     \
  X(nvmlDeviceGetComputeMode, (nvmlDevice_t device, nvmlComputeMode_t * mode))

#define NVML_FUNCTIONS(X) NVML_REQUIRED_FUNCTIONS(X) NVML_OPTIONAL_FUNCTIONS(X)

#define NVML_PFN_TYPEDEF(name, params) typedef nvmlReturn_t(*PFN_##name) params;
NVML_FUNCTIONS(NVML_PFN_TYPEDEF)
#undef NVML_PFN_TYPEDEF

// The one function that does not return nvmlReturn_t.
typedef const char* (*PFN_nvmlErrorString)(nvmlReturn_t result);

#ifdef __cplusplus
}
#endif

#endif  // VRAMFIT_NVML_API_H
