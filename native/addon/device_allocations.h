// The memory a probe holds on the current device; everything is freed when it goes out of scope.
#ifndef VRAMFIT_DEVICE_ALLOCATIONS_H
#define VRAMFIT_DEVICE_ALLOCATIONS_H

#include <cstddef>
#include <functional>
#include <vector>

#include "driver_library.h"

namespace vramfit {

// Use inside a DeviceSession: the driver allocates in, and frees from, the current context.
class DeviceAllocations {
 public:
  // `ordinal`: the current context's device, where TryMap creates its pages.
  explicit DeviceAllocations(const DriverApi& api, int ordinal = 0) : api_(api), ordinal_(ordinal) {}
  // Frees whatever is still held, ignoring failures: this runs on error paths, where an error
  // is already on its way to JS and a second one would hide it.
  ~DeviceAllocations();
  DeviceAllocations(const DeviceAllocations&) = delete;
  DeviceAllocations& operator=(const DeviceAllocations&) = delete;

  // cuMemAlloc_v2. False on CUDA_ERROR_OUT_OF_MEMORY (a result, not an error); any other failure
  // throws NativeError.
  bool TryAllocate(size_t bytes);
  // `bytes` as PyTorch's expandable segments hold it (ExpandableSegment::map): an address range
  // reserved (cuMemAddressReserve), one physical allocation per page of `pageBytes` (cuMemCreate,
  // the page rounded up to the driver's granularity), each mapped (cuMemMap), then the range made
  // accessible (cuMemSetAccess). False on CUDA_ERROR_OUT_OF_MEMORY from cuMemCreate, with every
  // page created so far released and the range freed; any other failure throws NativeError, also
  // after undoing what was made. Where the driver lacks the API (HasVirtualMemory), TryAllocate.
  bool TryMap(size_t bytes, size_t pageBytes);
  // Writes every byte (cuMemsetD8_v2) and waits (cuCtxSynchronize): memory the driver reserved
  // lazily is then really backed. Stops early, before the next block, once `cancelled` says so.
  // Throws NativeError.
  void Touch(const std::function<bool()>& cancelled);
  // Frees everything. When cuMemFree_v2 fails, the other blocks are still freed, then the first
  // failure is thrown. A block whose free failed is not retried (the driver's state for it is
  // unknown, and a failing free is usually a sticky context error that a retry repeats): it
  // may stay allocated until the primary context is released at exit.
  void FreeAll();
  // Frees the block allocated last (the probe gives back one that crossed the reserve). Throws
  // NativeError when cuMemFree_v2 fails; the block is then no longer tracked, as in FreeAll.
  void FreeLast();
  // Frees the block of the `index`-th successful TryAllocate (a step's replay gives a cached
  // segment back, as PyTorch's allocator does before it retries). Throws NativeError when
  // cuMemFree_v2 fails or the block is not held; it is then no longer tracked, as in FreeAll.
  void FreeAt(size_t index);

  // Whether cuMemAlloc_v2 grants `bytes` now: the block, if any, is freed at once and not kept.
  // False on CUDA_ERROR_OUT_OF_MEMORY; any other failure throws NativeError.
  bool Grants(size_t bytes);

  // Successful TryAllocate calls, those freed since included.
  size_t count() const { return blocks_.size(); }

 private:
  struct Block {
    CUdeviceptr pointer = 0;
    size_t bytes = 0;
    // Mapped through the virtual-memory API: the page size, the range reserved, the pages' handles
    // (empty for a cuMemAlloc block).
    size_t pageBytes = 0;
    size_t reservedBytes = 0;
    std::vector<CUmemGenericAllocationHandle> pages;
  };
  // Gives a block's memory back: cuMemFree_v2, or unmap and release each page (as PyTorch's
  // unmapHandles) and free the range. Every step is tried; the first failure is returned.
  CUresult Release(const Block& block) const;
  static const char* ReleaseCall(const Block& block);

  const DriverApi& api_;
  int ordinal_;
  std::vector<Block> blocks_;
};

}  // namespace vramfit

#endif  // VRAMFIT_DEVICE_ALLOCATIONS_H
