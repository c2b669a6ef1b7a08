// Allocating, touching and freeing a probe's blocks.
#include "device_allocations.h"

#include <optional>

#include "native_error.h"

namespace vramfit {

// A block freed by FreeAt keeps its place (indices stay those of the allocations) with no pointer.
DeviceAllocations::~DeviceAllocations() {
  for (const Block& block : blocks_) {
    if (block.pointer != 0) api_.cuMemFree_v2(block.pointer);
  }
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
  blocks_.push_back({pointer, bytes});
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
  Block block = blocks_.back();
  blocks_.pop_back();
  if (block.pointer != 0) CheckCuda(api_, api_.cuMemFree_v2(block.pointer), "cuMemFree_v2");
}

void DeviceAllocations::FreeAt(size_t index) {
  if (index >= blocks_.size() || blocks_[index].pointer == 0) {
    throw NativeError("ERR_INVALID_ARGUMENT", "probe: a release names an allocation that is not held");
  }
  const CUdeviceptr pointer = blocks_[index].pointer;
  blocks_[index] = {0, 0};
  CheckCuda(api_, api_.cuMemFree_v2(pointer), "cuMemFree_v2");
}

void DeviceAllocations::FreeAll() {
  std::vector<Block> blocks;
  blocks.swap(blocks_);  // from here on the destructor has nothing left to free
  std::optional<CUresult> failure;
  for (const Block& block : blocks) {
    if (block.pointer == 0) continue;
    CUresult result = api_.cuMemFree_v2(block.pointer);
    if (result != CUDA_SUCCESS && !failure) failure = result;
  }
  if (failure) throw CudaError(api_, *failure, "cuMemFree_v2");
}

}  // namespace vramfit
