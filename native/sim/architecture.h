// What a GPU of a given compute capability is, beyond what CUDASIM_DEVICES says: the per-SM limits
// every device of that capability shares, and its flagship product's L2 and memory bus.
#ifndef CUDASIM_ARCHITECTURE_H
#define CUDASIM_ARCHITECTURE_H

#include <cstdint>

#include "simgpu_export.h"

namespace cudasim {

struct Architecture {
  // Per compute capability: the CUDA C++ Programming Guide, "Compute Capabilities",
  // table "Technical Specifications per Compute Capability" (CUDA 12.x/13.0 editions).
  int maxThreadsPerMultiprocessor;
  int maxBlocksPerMultiprocessor;
  uint64_t sharedMemPerMultiprocessor;  // bytes
  uint64_t sharedMemPerBlockOptin;      // bytes: the most one block may opt in to
  uint64_t reservedSharedMemPerBlock;   // bytes the system keeps per block (1 KiB from cc 8.0)
  // The flagship product of the architecture (its whitepaper): a device's `l2=` field overrides.
  uint64_t l2CacheBytes;
  int memoryBusWidthBits;
  const char* flagship;  // which product those two numbers are
};

// Unknown capabilities answer with the nearest lower known one (a newer minor revision keeps its
// major's limits), and anything below 7.0 with 7.0's.
SIMGPU_API const Architecture& ArchitectureOf(int ccMajor, int ccMinor);

}  // namespace cudasim

#endif  // CUDASIM_ARCHITECTURE_H
