// Allocating, touching and freeing a probe's blocks.
#include "device_allocations.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "native_error.h"

namespace vramfit {

// A block freed by FreeAt keeps its place (indices stay those of the allocations) with no pointer.
DeviceAllocations::~DeviceAllocations() {
  for (const Block& block : blocks_) {
    if (block.pointer != 0) Release(block);
  }
}

// What a failed Release names: the call a plain block is freed with, or the virtual-memory API's.
const char* DeviceAllocations::ReleaseCall(const Block& block) {
  return block.pages.empty() ? "cuMemFree_v2" : "cuMemUnmap/cuMemRelease/cuMemAddressFree";
}

CUresult DeviceAllocations::Release(const Block& block) const {
  if (block.pages.empty()) return api_.cuMemFree_v2(block.pointer);
  CUresult first = CUDA_SUCCESS;
  const auto note = [&first](CUresult result) {
    if (result != CUDA_SUCCESS && first == CUDA_SUCCESS) first = result;
  };
  for (size_t i = 0; i < block.pages.size(); ++i) {
    note(api_.cuMemUnmap(block.pointer + i * block.pageBytes, block.pageBytes));
    note(api_.cuMemRelease(block.pages[i]));
  }
  note(api_.cuMemAddressFree(block.pointer, block.reservedBytes));
  return first;
}

bool DeviceAllocations::TryMap(size_t bytes, size_t pageBytes) {
  if (!HasVirtualMemory(api_)) return TryAllocate(bytes);
  if (blocks_.size() == blocks_.capacity()) blocks_.reserve(blocks_.empty() ? 64 : 2 * blocks_.capacity());
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = ordinal_;
  size_t granularity = 0;
  CheckCuda(api_, api_.cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM), "cuMemGetAllocationGranularity");
  if (granularity == 0) granularity = 1;
  Block block;
  block.pointer = 0;
  block.bytes = bytes;
  block.pageBytes = (std::max(pageBytes, size_t{1}) + granularity - 1) / granularity * granularity;
  const size_t count = (bytes + block.pageBytes - 1) / block.pageBytes;
  block.reservedBytes = count * block.pageBytes;
  CheckCuda(api_, api_.cuMemAddressReserve(&block.pointer, block.reservedBytes, 0, 0, 0), "cuMemAddressReserve");
  block.pages.reserve(count);
  // Undoes what is made so far: the pages mapped, the handles created, the range.
  const auto undo = [&](size_t mapped) {
    for (size_t i = 0; i < block.pages.size(); ++i) {
      if (i < mapped) api_.cuMemUnmap(block.pointer + i * block.pageBytes, block.pageBytes);
      api_.cuMemRelease(block.pages[i]);
    }
    api_.cuMemAddressFree(block.pointer, block.reservedBytes);
  };
  for (size_t i = 0; i < count; ++i) {
    CUmemGenericAllocationHandle handle = 0;
    CUresult result = api_.cuMemCreate(&handle, block.pageBytes, &prop, 0);
    if (result == CUDA_ERROR_OUT_OF_MEMORY) {
      undo(0);
      return false;
    }
    if (result != CUDA_SUCCESS) {
      undo(0);
      CheckCuda(api_, result, "cuMemCreate");
    }
    block.pages.push_back(handle);
  }
  for (size_t i = 0; i < count; ++i) {
    CUresult result = api_.cuMemMap(block.pointer + i * block.pageBytes, block.pageBytes, 0, block.pages[i], 0);
    if (result != CUDA_SUCCESS) {
      undo(i);
      CheckCuda(api_, result, "cuMemMap");
    }
  }
  CUmemAccessDesc access = {};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CUresult result = api_.cuMemSetAccess(block.pointer, block.reservedBytes, &access, 1);
  if (result != CUDA_SUCCESS) {
    undo(count);
    CheckCuda(api_, result, "cuMemSetAccess");
  }
  blocks_.push_back(std::move(block));
  return true;
}

bool DeviceAllocations::TryAllocate(size_t bytes) {
  // So the push below cannot throw and orphan the block. Doubling, not size() + 1: reserve grows to
  // exactly what it is asked, so reserving one more each time copied every block at every allocation
  // (quadratic: a 107,000-page expandable probe of llama-2-70b took 21 s, 41 % of it in memmove).
  if (blocks_.size() == blocks_.capacity()) blocks_.reserve(blocks_.empty() ? 64 : 2 * blocks_.capacity());
  CUdeviceptr pointer = 0;
  CUresult result = api_.cuMemAlloc_v2(&pointer, bytes);
  if (result == CUDA_ERROR_OUT_OF_MEMORY) return false;
  CheckCuda(api_, result, "cuMemAlloc_v2");
  Block block;
  block.pointer = pointer;
  block.bytes = bytes;
  blocks_.push_back(std::move(block));
  return true;
}

bool DeviceAllocations::Grants(size_t bytes) {
  CUdeviceptr pointer = 0;
  CUresult result = api_.cuMemAlloc_v2(&pointer, bytes);
  if (result == CUDA_ERROR_OUT_OF_MEMORY) return false;
  CheckCuda(api_, result, "cuMemAlloc_v2");
  CheckCuda(api_, api_.cuMemFree_v2(pointer), "cuMemFree_v2");
  return true;
}

void DeviceAllocations::Touch(const std::function<bool()>& cancelled) {
  for (const Block& block : blocks_) {
    if (cancelled()) return;
    if (block.pointer == 0) continue;
    CheckCuda(api_, api_.cuMemsetD8_v2(block.pointer, 0, block.bytes), "cuMemsetD8_v2");
  }
  CheckCuda(api_, api_.cuCtxSynchronize(), "cuCtxSynchronize");
}

void DeviceAllocations::FreeLast() {
  if (blocks_.empty()) return;
  Block block = std::move(blocks_.back());
  blocks_.pop_back();
  if (block.pointer != 0) CheckCuda(api_, Release(block), ReleaseCall(block));
}

void DeviceAllocations::FreeAt(size_t index) {
  if (index >= blocks_.size() || blocks_[index].pointer == 0) {
    throw NativeError("ERR_INVALID_ARGUMENT", "probe: a release names an allocation that is not held");
  }
  Block block = std::move(blocks_[index]);
  blocks_[index] = Block{};
  CheckCuda(api_, Release(block), ReleaseCall(block));
}

void DeviceAllocations::FreeAll() {
  std::vector<Block> blocks;
  blocks.swap(blocks_);  // from here on the destructor has nothing left to free
  std::optional<CUresult> failure;
  const char* call = "cuMemFree_v2";
  for (const Block& block : blocks) {
    if (block.pointer == 0) continue;
    CUresult result = Release(block);
    if (result != CUDA_SUCCESS && !failure) {
      failure = result;
      call = ReleaseCall(block);
    }
  }
  if (failure) throw CudaError(api_, *failure, call);
}

}  // namespace vramfit
