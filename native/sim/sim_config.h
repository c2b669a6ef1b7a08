// The simulated machine, as described by the CUDASIM_* environment variables.
#ifndef CUDASIM_SIM_CONFIG_H
#define CUDASIM_SIM_CONFIG_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "simgpu_export.h"

namespace cudasim {

// A process of another user holding memory on a GPU (`proc=PID@BYTES`, or `PID@na` when NVML
// cannot tell how much); its bytes are part of the device's usedBytes.
struct OtherProcess {
  unsigned pid = 0;
  uint64_t bytes = 0;
  bool bytesKnown = true;
};

// CUcomputemode (cuda.h) and nvmlComputeMode_t (nvml.h) share these values; 1 (exclusive-thread)
// was removed in CUDA 8 and is not simulated.
constexpr int kComputeModeDefault = 0;
constexpr int kComputeModeProhibited = 2;
constexpr int kComputeModeExclusiveProcess = 3;

// CUDASIM_CONTEXT_BYTES' default: the 256 MiB a bare primary context was seen to hold (an RTX 3090,
// driver 610, PyTorch 2.7 with CUDA 12.8 lazy loading, before any kernel ran: invoke-ai/InvokeAI
// issue 9413), at the low end of the ~300-400 MB that PyTorch's own context is reported to take
// with CUDA >= 11.7 (pytorch/pytorch issues 107667 and 109888). docs/simulator.md says more.
constexpr uint64_t kDefaultContextBytes = 256ull << 20;

struct DeviceSpec {
  std::string name;
  uint64_t totalBytes = 0;  // what cuDeviceTotalMem_v2 and NVML's v1 total report
  // Taken by other processes and the driver itself: never available to cuMemAlloc.
  uint64_t usedBytes = 0;
  uint64_t reservedBytes = 0;  // NVML v2's "reserved": on top of totalBytes, never allocatable
  // `hidden=BYTES`: counted as free by cuMemGetInfo but never granted by cuMemAlloc/cuMemCreate, as
  // on a real device where the free figure overstates what can be had (the driver's own lazy
  // allocations, its page granularity, fragmentation of its heap): a probe can run out early.
  uint64_t hiddenBytes = 0;
  int ccMajor = 9;
  int ccMinor = 0;
  int multiprocessorCount = 132;
  uint64_t l2CacheBytes = 0;  // `l2=BYTES`; 0: the architecture's flagship's (architecture.h)
  bool integrated = false;
  int pciBus = -1;       // -1: 0x1B + the device's position in CUDASIM_DEVICES
  unsigned delayMs = 0;  // extra latency of every call that reaches this device
  std::vector<OtherProcess> processes;
  std::vector<uint64_t> migInstanceBytes;  // MIG enabled when non-empty: one pool per instance
  // CU_DEVICE_ATTRIBUTE_COMPUTE_MODE / nvmlComputeMode_t: the same numbers in both APIs.
  int computeMode = kComputeModeDefault;
};

struct SimConfig {
  std::vector<DeviceSpec> devices;
  uint64_t granularity = 2u << 20;
  // Slows cuCtxSynchronize down so tests can observe that work runs off the JS thread.
  unsigned syncDelayMs = 0;
  // Latency of every call that reaches a device (context, memory, synchronize).
  unsigned callDelayMs = 0;
  // Device memory a primary context takes while it is active, charged when it is created.
  uint64_t contextBytes = kDefaultContextBytes;
  // cuMemAlloc_v2 requests of at most this many bytes (and under a page) share pages with each
  // other, each rounded up to allocAlignment; larger ones take whole pages (granularity). 0: none
  // share. The defaults follow Pascal and later GPUs: 2 MiB pages, allocations over 1 MiB
  // page-aligned (pytorch/pytorch pull 17120), 512-byte alignment (cupy/cupy pull 176).
  uint64_t smallAllocMaxBytes = 1u << 20;
  uint64_t allocAlignment = 512;
  // CUDASIM_STATE: a file holding the memory accounting, shared by every process that names it.
  std::string statePath;
  std::string devicesText;  // CUDASIM_DEVICES as given: the identity of the machine
};

// Reads CUDASIM_DEVICES, CUDASIM_GRANULARITY, CUDASIM_SYNC_DELAY_MS, CUDASIM_CALL_DELAY_MS,
// CUDASIM_CONTEXT_BYTES, CUDASIM_SMALL_ALLOC_MAX, CUDASIM_ALLOC_ALIGNMENT and CUDASIM_STATE. On malformed input, returns nullopt and sets `error`
// (the caller reports it: a typo must not look like "no GPU").
SIMGPU_API std::optional<SimConfig> ReadConfig(std::string& error);

// CUDASIM_DRIVER_VERSION (default 12040). Read on every call: cuDriverGetVersion works before cuInit.
SIMGPU_API int ReadDriverVersion();

}  // namespace cudasim

#endif  // CUDASIM_SIM_CONFIG_H
