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

struct DeviceSpec {
  std::string name;
  uint64_t totalBytes = 0;  // what cuDeviceTotalMem_v2 and NVML's v1 total report
  // Taken by other processes and the driver itself: never available to cuMemAlloc.
  uint64_t usedBytes = 0;
  uint64_t reservedBytes = 0;  // NVML v2's "reserved": on top of totalBytes, never allocatable
  int ccMajor = 9;
  int ccMinor = 0;
  int multiprocessorCount = 132;
  bool integrated = false;
  int pciBus = -1;       // -1: 0x1B + the device's position in CUDASIM_DEVICES
  unsigned delayMs = 0;  // extra latency of every call that reaches this device
  std::vector<OtherProcess> processes;
  std::vector<uint64_t> migInstanceBytes;  // MIG enabled when non-empty: one pool per instance
};

struct SimConfig {
  std::vector<DeviceSpec> devices;
  uint64_t granularity = 2u << 20;
  // Slows cuCtxSynchronize down so tests can observe that work runs off the JS thread.
  unsigned syncDelayMs = 0;
  // Latency of every call that reaches a device (context, memory, synchronize).
  unsigned callDelayMs = 0;
  // Device memory a primary context takes while it is active (real drivers: a few hundred MiB).
  uint64_t contextBytes = 0;
  // CUDASIM_STATE: a file holding the memory accounting, shared by every process that names it.
  std::string statePath;
  std::string devicesText;  // CUDASIM_DEVICES as given: the identity of the machine
};

// Reads CUDASIM_DEVICES, CUDASIM_GRANULARITY, CUDASIM_SYNC_DELAY_MS, CUDASIM_CALL_DELAY_MS,
// CUDASIM_CONTEXT_BYTES and CUDASIM_STATE. On malformed input, returns nullopt and sets `error`
// (the caller reports it: a typo must not look like "no GPU").
SIMGPU_API std::optional<SimConfig> ReadConfig(std::string& error);

// CUDASIM_DRIVER_VERSION (default 12040). Read on every call: cuDriverGetVersion works before cuInit.
SIMGPU_API int ReadDriverVersion();

}  // namespace cudasim

#endif  // CUDASIM_SIM_CONFIG_H
