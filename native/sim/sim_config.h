// The simulated machine, as described by the CUDASIM_* environment variables.
#ifndef CUDASIM_SIM_CONFIG_H
#define CUDASIM_SIM_CONFIG_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cudasim {

struct DeviceSpec {
  std::string name;
  uint64_t totalBytes = 0;
  // Taken by other processes and the driver itself: never available to cuMemAlloc.
  uint64_t usedBytes = 0;
  int ccMajor = 9;
  int ccMinor = 0;
  int multiprocessorCount = 132;
  bool integrated = false;
};

struct SimConfig {
  std::vector<DeviceSpec> devices;
  uint64_t granularity = 2u << 20;
  // Slows cuCtxSynchronize down so tests can observe that work runs off the JS thread.
  unsigned syncDelayMs = 0;
};

// Reads CUDASIM_DEVICES, CUDASIM_GRANULARITY and CUDASIM_SYNC_DELAY_MS. On malformed input,
// returns nullopt and sets `error` (the caller reports it: a typo must not look like "no GPU").
std::optional<SimConfig> ReadConfig(std::string& error);

// CUDASIM_DRIVER_VERSION (default 12040). Read on every call: cuDriverGetVersion works before cuInit.
int ReadDriverVersion();

}  // namespace cudasim

#endif  // CUDASIM_SIM_CONFIG_H
