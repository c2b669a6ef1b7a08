// Device memory of the stub runtime: address space only (PROT_NONE, MAP_NORESERVE), charged to the
// simulated device's ledger, so cudaMalloc fails past its capacity as a full GPU's would.
#ifndef VRAMFIT_STUBS_CUDART_MEMORY_H
#define VRAMFIT_STUBS_CUDART_MEMORY_H

#include <cstddef>
#include <cstdint>

namespace cudart {

// Where a pointer lies: in a device allocation (its ordinal), or -1 for host memory.
int DeviceOfPointer(const void* pointer);

struct MemoryCounters {
  uint64_t mallocCalls = 0;
  uint64_t failedMallocs = 0;  // cudaErrorMemoryAllocation answers
  uint64_t freeCalls = 0;
  uint64_t liveBytes = 0;      // requested bytes of the live allocations, all devices
  uint64_t peakLiveBytes = 0;
};
MemoryCounters ReadMemoryCounters();

// Reserves address space for `bytes` aligned to `alignment` (a power of two, at least a page).
void* ReserveAddressSpace(size_t bytes, size_t alignment);
void ReleaseAddressSpace(void* base, size_t bytes);

}  // namespace cudart

#endif  // VRAMFIT_STUBS_CUDART_MEMORY_H
