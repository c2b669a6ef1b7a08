// The simulated machine behind both simulated libraries: its GPUs, their memory pools and UUIDs.
// Physical order is CUDASIM_DEVICES order; the CUDA and NVML views of it are each library's own.
#ifndef CUDASIM_MACHINE_H
#define CUDASIM_MACHINE_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim_config.h"
#include "simgpu_export.h"

namespace cudasim {

// Memory that is allocated from as one: a whole GPU, or one MIG instance of a GPU.
struct Pool {
  int gpu = 0;
  int mig = -1;  // the MIG instance, or -1 for the whole GPU
  uint64_t totalBytes = 0;
  uint64_t baseUsedBytes = 0;  // taken by others before anything runs
  uint64_t hiddenBytes = 0;    // free to cuMemGetInfo, never granted (DeviceSpec::hiddenBytes; whole GPU only)
  unsigned char uuid[16] = {};
};

struct Machine {
  SimConfig config;
  std::vector<Pool> pools;
  std::vector<int> gpuPool;                // per GPU: its whole-GPU pool
  std::vector<std::vector<int>> migPools;  // per GPU: its MIG instances' pools (empty: MIG off)
  uint64_t identity = 0;                   // what a shared state file must have been made for
};

constexpr int kMaxPools = 64;

// Reads the configuration (ReadConfig) and lays out the pools. UUIDs are deterministic: a GPU's
// depends on its position and name, and on CUDASIM_STATE's path when one is set (two state files are
// two machines), so tests can compare them across runs and processes.
SIMGPU_API std::optional<Machine> BuildMachine(std::string& error);

// nvidia-smi's form: PREFIX-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx, lower-case hex.
SIMGPU_API std::string FormatUuid(const unsigned char* bytes, const char* prefix);

}  // namespace cudasim

#endif  // CUDASIM_MACHINE_H
