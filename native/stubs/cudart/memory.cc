// Device memory (memory.h), host memory the runtime hands out, pointer queries, IPC handles and the
// stream-ordered allocator's pools.
#include "memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>

#include "runtime.h"

namespace cudart {
namespace {

struct Allocation {
  int ordinal;
  size_t bytes;      // as asked
  uint64_t charged;  // what the device lost
  size_t mappedBytes;
};

struct HostRange {
  size_t bytes;
  bool allocated;  // cudaHostAlloc's (freed by cudaFreeHost) rather than cudaHostRegister's
};

// Guarded by R().mutex.
std::map<uintptr_t, Allocation> gAllocations;
std::map<uintptr_t, HostRange> gHost;
std::map<uintptr_t, size_t> gOpenedIpc;  // mappings of cudaIpcOpenMemHandle, by address
MemoryCounters gCounters;

uint64_t RoundUp(uint64_t bytes, uint64_t unit) {
  return (bytes + unit - 1) / unit * unit;
}

template <typename Range>
typename std::map<uintptr_t, Range>::iterator Containing(std::map<uintptr_t, Range>& table, const void* pointer,
                                                          size_t Range::*size) {
  uintptr_t address = reinterpret_cast<uintptr_t>(pointer);
  auto after = table.upper_bound(address);
  if (after == table.begin()) return table.end();
  auto found = std::prev(after);
  return address - found->first < found->second.*size ? found : table.end();
}

// The driver's rules (native/sim/sim_config.h): requests above CUDASIM_SMALL_ALLOC_MAX or a page
// take whole pages (CUDASIM_GRANULARITY, 2 MiB) and are page-aligned; smaller ones are charged their
// size rounded to CUDASIM_ALLOC_ALIGNMENT (512 B), the pages they share not being modelled here
// (PyTorch's caching allocator never asks for less than 2 MiB).
Error Allocate(int ordinal, size_t bytes, void** pointer) {
  Device* device = nullptr;
  if (Error error = UseDevice(ordinal, device)) return error;
  if (pointer == nullptr) return kErrorInvalidValue;
  if (bytes == 0) {
    *pointer = nullptr;
    return kSuccess;
  }
  const cudasim::SimConfig& config = R().machine.config;
  bool small = bytes <= config.smallAllocMaxBytes && bytes < config.granularity;
  uint64_t charged = small ? RoundUp(bytes, config.allocAlignment) : RoundUp(bytes, config.granularity);
  size_t alignment = small ? static_cast<size_t>(sysconf(_SC_PAGESIZE)) : config.granularity;
  std::lock_guard<std::mutex> lock(R().mutex);
  ++gCounters.mallocCalls;
  if (bytes > CapacityOf(*device) || !ChargeLocked(*device, charged)) {
    ++gCounters.failedMallocs;
    return kErrorMemoryAllocation;
  }
  size_t mapped = RoundUp(bytes, alignment);
  void* base = ReserveAddressSpace(mapped, alignment);
  if (base == nullptr) {
    UnchargeLocked(*device, charged);
    ++gCounters.failedMallocs;
    return kErrorMemoryAllocation;
  }
  gAllocations[reinterpret_cast<uintptr_t>(base)] = Allocation{ordinal, bytes, charged, mapped};
  gCounters.liveBytes += bytes;
  if (gCounters.liveBytes > gCounters.peakLiveBytes) gCounters.peakLiveBytes = gCounters.liveBytes;
  *pointer = base;
  return kSuccess;
}

Error Free(void* pointer) {
  Device* device = nullptr;
  if (Error error = UseCurrentDevice(device)) return error;  // cudaFree(0): the context idiom
  if (pointer == nullptr) return kSuccess;
  std::lock_guard<std::mutex> lock(R().mutex);
  auto found = gAllocations.find(reinterpret_cast<uintptr_t>(pointer));
  if (found == gAllocations.end()) return kErrorInvalidValue;
  ++gCounters.freeCalls;
  const Allocation& allocation = found->second;
  UnchargeLocked(R().devices[allocation.ordinal], allocation.charged);
  gCounters.liveBytes -= allocation.bytes;
  ReleaseAddressSpace(pointer, allocation.mappedBytes);
  gAllocations.erase(found);
  return kSuccess;
}

}  // namespace

void* ReserveAddressSpace(size_t bytes, size_t alignment) {
  // Over-reserve by the alignment and trim both ends: mmap alone only promises page alignment.
  size_t span = bytes + alignment;
  void* raw = mmap(nullptr, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  uintptr_t start = reinterpret_cast<uintptr_t>(raw);
  uintptr_t aligned = RoundUp(start, alignment);
  if (aligned > start) munmap(raw, aligned - start);
  size_t tail = start + span - (aligned + bytes);
  if (tail > 0) munmap(reinterpret_cast<void*>(aligned + bytes), tail);
  return reinterpret_cast<void*>(aligned);
}

void ReleaseAddressSpace(void* base, size_t bytes) {
  munmap(base, bytes);
}

int DeviceOfPointer(const void* pointer) {
  std::lock_guard<std::mutex> lock(R().mutex);
  auto found = Containing(gAllocations, pointer, &Allocation::bytes);
  if (found != gAllocations.end()) return found->second.ordinal;
  auto opened = gOpenedIpc.upper_bound(reinterpret_cast<uintptr_t>(pointer));
  if (opened != gOpenedIpc.begin() && reinterpret_cast<uintptr_t>(pointer) - std::prev(opened)->first < std::prev(opened)->second) {
    return 0;
  }
  return -1;
}

MemoryCounters ReadMemoryCounters() {
  std::lock_guard<std::mutex> lock(R().mutex);
  return gCounters;
}

}  // namespace cudart

using namespace cudart;

CUDART_API Error cudaMalloc(void** pointer, size_t bytes) {
  return Return(Allocate(CurrentOrdinal(), bytes, pointer));
}

CUDART_API Error cudaFree(void* pointer) {
  return Return(Free(pointer));
}

// The stream-ordered allocator: the same memory, available at once (streams have no queue here).
CUDART_API Error cudaMallocAsync(void** pointer, size_t bytes, void* /*stream*/) {
  return Return(Allocate(CurrentOrdinal(), bytes, pointer));
}

CUDART_API Error cudaFreeAsync(void* pointer, void* /*stream*/) {
  return Return(Free(pointer));
}

CUDART_API Error cudaMemGetInfo(size_t* free, size_t* total) {
  Device* device = nullptr;
  if (Error error = UseCurrentDevice(device)) return Return(error);
  if (free == nullptr || total == nullptr) return Return(kErrorInvalidValue);
  std::lock_guard<std::mutex> lock(R().mutex);
  uint64_t charged = R().accounting->Charged(device->pool);  // every process's, as the driver sees it
  uint64_t capacity = CapacityOf(*device);
  *free = charged >= capacity ? 0 : capacity - charged;
  *total = device->totalBytes;
  return kSuccess;
}

// Pinned host memory is plain host memory here (nothing DMAs into it).
CUDART_API Error cudaHostAlloc(void** pointer, size_t bytes, unsigned int /*flags*/) {
  if (pointer == nullptr) return Return(kErrorInvalidValue);
  void* memory = nullptr;
  if (posix_memalign(&memory, 4096, bytes == 0 ? 1 : bytes) != 0) return Return(kErrorMemoryAllocation);
  std::lock_guard<std::mutex> lock(R().mutex);
  gHost[reinterpret_cast<uintptr_t>(memory)] = HostRange{bytes, true};
  *pointer = memory;
  return kSuccess;
}

CUDART_API Error cudaFreeHost(void* pointer) {
  if (pointer == nullptr) return kSuccess;
  std::lock_guard<std::mutex> lock(R().mutex);
  auto found = gHost.find(reinterpret_cast<uintptr_t>(pointer));
  if (found == gHost.end() || !found->second.allocated) return Return(kErrorInvalidValue);
  gHost.erase(found);
  std::free(pointer);
  return kSuccess;
}

CUDART_API Error cudaHostRegister(void* pointer, size_t bytes, unsigned int /*flags*/) {
  if (pointer == nullptr || bytes == 0) return Return(kErrorInvalidValue);
  std::lock_guard<std::mutex> lock(R().mutex);
  if (!gHost.emplace(reinterpret_cast<uintptr_t>(pointer), HostRange{bytes, false}).second) {
    return Return(kErrorHostMemoryAlreadyRegistered);
  }
  return kSuccess;
}

CUDART_API Error cudaHostUnregister(void* pointer) {
  std::lock_guard<std::mutex> lock(R().mutex);
  auto found = gHost.find(reinterpret_cast<uintptr_t>(pointer));
  if (found == gHost.end() || found->second.allocated) return Return(kErrorHostMemoryNotRegistered);
  gHost.erase(found);
  return kSuccess;
}

CUDART_API Error cudaPointerGetAttributes(PointerAttributes* attributes, const void* pointer) {
  if (attributes == nullptr) return Return(kErrorInvalidValue);
  std::memset(attributes, 0, sizeof *attributes);
  int ordinal = DeviceOfPointer(pointer);
  if (ordinal >= 0) {
    attributes->type = kMemoryTypeDevice;
    attributes->device = ordinal;
    attributes->devicePointer = const_cast<void*>(pointer);
    return kSuccess;
  }
  std::lock_guard<std::mutex> lock(R().mutex);
  if (Containing(gHost, pointer, &HostRange::bytes) != gHost.end()) {
    attributes->type = kMemoryTypeHost;
    attributes->device = CurrentOrdinal();
    attributes->devicePointer = attributes->hostPointer = const_cast<void*>(pointer);
  } else {
    attributes->type = kMemoryTypeUnregistered;
    attributes->device = -2;  // what CUDA 11+ reports for memory it does not know
  }
  return kSuccess;
}

// IPC: the handle carries the allocation's size; opening it in another process maps address space
// of that size, uncharged (the exporting process pays for the memory).
namespace {
constexpr uint64_t kIpcMagic = 0x766672616d667431ull;  // "vframft1"
}

CUDART_API Error cudaIpcGetMemHandle(IpcHandle* handle, void* pointer) {
  if (handle == nullptr) return Return(kErrorInvalidValue);
  std::lock_guard<std::mutex> lock(R().mutex);
  auto found = gAllocations.find(reinterpret_cast<uintptr_t>(pointer));
  if (found == gAllocations.end()) return Return(kErrorInvalidValue);
  std::memset(handle, 0, sizeof *handle);
  uint64_t fields[3] = {kIpcMagic, static_cast<uint64_t>(getpid()), found->second.bytes};
  std::memcpy(handle->reserved, fields, sizeof fields);
  return kSuccess;
}

CUDART_API Error cudaIpcOpenMemHandle(void** pointer, IpcHandle handle, unsigned int /*flags*/) {
  uint64_t fields[3];
  std::memcpy(fields, handle.reserved, sizeof fields);
  if (pointer == nullptr || fields[0] != kIpcMagic) return Return(kErrorInvalidValue);
  size_t bytes = RoundUp(fields[2], 4096);
  void* base = ReserveAddressSpace(bytes, 4096);
  if (base == nullptr) return Return(kErrorMemoryAllocation);
  std::lock_guard<std::mutex> lock(R().mutex);
  gOpenedIpc[reinterpret_cast<uintptr_t>(base)] = bytes;
  *pointer = base;
  return kSuccess;
}

CUDART_API Error cudaIpcCloseMemHandle(void* pointer) {
  std::lock_guard<std::mutex> lock(R().mutex);
  auto found = gOpenedIpc.find(reinterpret_cast<uintptr_t>(pointer));
  if (found == gOpenedIpc.end()) return Return(kErrorInvalidValue);
  ReleaseAddressSpace(pointer, found->second);
  gOpenedIpc.erase(found);
  return kSuccess;
}

// The stream-ordered allocator's pools: one per device, whose attributes are remembered and do
// nothing (there is no pool behind cudaMallocAsync here).
namespace {
struct MemPool {
  std::map<int, uint64_t> attributes;  // cudaMemPoolAttr -> value (int or cuuint64_t alike)
};
MemPool gPools[64];
}  // namespace

CUDART_API Error cudaDeviceGetDefaultMemPool(void** pool, int ordinal) {
  Device* device = nullptr;
  if (Error error = DeviceOf(ordinal, device)) return Return(error);
  if (pool == nullptr || ordinal >= 64) return Return(kErrorInvalidValue);
  *pool = &gPools[ordinal];
  return kSuccess;
}

// cudaMemPoolAttr 1-3 are ints, 4 onwards (thresholds and byte counts) cuuint64_t.
CUDART_API Error cudaMemPoolSetAttribute(void* pool, int attr, void* value) {
  if (pool == nullptr || value == nullptr) return Return(kErrorInvalidValue);
  std::lock_guard<std::mutex> lock(R().mutex);
  static_cast<MemPool*>(pool)->attributes[attr] = attr <= 3 ? *static_cast<int*>(value) : *static_cast<uint64_t*>(value);
  return kSuccess;
}

CUDART_API Error cudaMemPoolGetAttribute(void* pool, int attr, void* value) {
  if (pool == nullptr || value == nullptr) return Return(kErrorInvalidValue);
  std::lock_guard<std::mutex> lock(R().mutex);
  uint64_t stored = static_cast<MemPool*>(pool)->attributes[attr];
  if (attr <= 3) *static_cast<int*>(value) = static_cast<int>(stored);
  else *static_cast<uint64_t*>(value) = stored;
  return kSuccess;
}

CUDART_API Error cudaMemPoolSetAccess(void* pool, const void* /*descList*/, size_t /*count*/) {
  return pool == nullptr ? Return(kErrorInvalidValue) : kSuccess;
}

CUDART_API Error cudaMemPoolTrimTo(void* pool, size_t /*minBytesToKeep*/) {
  return pool == nullptr ? Return(kErrorInvalidValue) : kSuccess;
}

// cudaGraphMemAttributeType: the graph allocator's usage counters, all 0 (graphs allocate nothing).
CUDART_API Error cudaDeviceGetGraphMemAttribute(int ordinal, int /*attr*/, void* value) {
  Device* device = nullptr;
  if (Error error = DeviceOf(ordinal, device)) return Return(error);
  if (value == nullptr) return Return(kErrorInvalidValue);
  *static_cast<uint64_t*>(value) = 0;
  return kSuccess;
}

CUDART_API Error cudaDeviceSetGraphMemAttribute(int ordinal, int /*attr*/, void* /*value*/) {
  Device* device = nullptr;
  return Return(DeviceOf(ordinal, device));
}
