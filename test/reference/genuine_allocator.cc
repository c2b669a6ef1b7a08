// Replays vramfit's allocation events through PyTorch's genuine CUDA caching allocator
// (c10::cuda::CUDACachingAllocator of the torch wheel's libc10_cuda.so, on vramfit's stub CUDA
// runtime) and says what it did. Built at test time by test/reference/genuineAllocator.ts against the
// wheel's torch/include and torch/lib where they lie; nothing of PyTorch is copied here.
//
// One process replays many traces (the allocator's configuration, PYTORCH_CUDA_ALLOC_CONF, is read
// once per process). On stdin, repeated:
//   replay CAPACITY_BYTES          (0: the whole simulated device, i.e. no memory pressure)
//   # ...                          the events log of `vramfit plan --batch B --events FILE`:
//   a ID BYTES                     its `#` header lines, then one allocation or free per line
//   f ID
//   end
// and for each, one JSON line on stdout: fits, the event that ran out of memory (-1: none), the
// allocator's device allocations in order (bytes: + cudaMalloc / cuMemMap, - cudaFree / cuMemUnmap),
// getDeviceStats' peaks (allocated, reserved) and num_alloc_retries, num_ooms.
//
// A capacity below the device's total is made by holding the difference with one cudaMalloc outside
// the allocator for the replay's duration: the stub's device is fixed when the process starts.
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/PeerToPeerAccess.h>
#include <c10/util/Exception.h>
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

namespace allocator = c10::cuda::CUDACachingAllocator;
using c10::CachingDeviceAllocator::TraceEntry;

std::vector<long long> gDeviceCalls;  // what the allocator asked of the device, in order

void Track(const TraceEntry& entry) {
  switch (entry.action_) {
    case TraceEntry::SEGMENT_ALLOC:
    case TraceEntry::SEGMENT_MAP:
      gDeviceCalls.push_back(static_cast<long long>(entry.size_));
      break;
    case TraceEntry::SEGMENT_FREE:
    case TraceEntry::SEGMENT_UNMAP:
      gDeviceCalls.push_back(-static_cast<long long>(entry.size_));
      break;
    default:
      break;
  }
}

struct Event {
  bool alloc;
  long long id;
  size_t bytes;
};

// Reads one request's events up to `end`; false at the end of input.
bool ReadEvents(std::vector<Event>& events) {
  events.clear();
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line == "end") return true;
    if (line.empty() || line[0] == '#') continue;
    const char* text = line.c_str();
    char* rest = nullptr;
    Event event{line[0] == 'a', std::strtoll(text + 2, &rest, 10), 0};
    if (line[0] != 'a' && line[0] != 'f') {
      std::fprintf(stderr, "genuine_allocator: expected `a ID BYTES` or `f ID`, got \"%s\"\n", text);
      std::exit(2);
    }
    if (event.alloc) event.bytes = std::strtoull(rest, nullptr, 10);
    events.push_back(event);
  }
  return false;
}

void Replay(size_t capacity, const std::vector<Event>& events, size_t totalBytes) {
  void* hold = nullptr;
  if (capacity > 0 && capacity < totalBytes && cudaMalloc(&hold, totalBytes - capacity) != cudaSuccess) {
    std::fprintf(stderr, "genuine_allocator: cannot hold %zu bytes to make a capacity of %zu\n", totalBytes - capacity, capacity);
    std::exit(1);
  }
  allocator::emptyCache();
  allocator::resetPeakStats(0);
  allocator::resetAccumulatedStats(0);
  gDeviceCalls.clear();
  std::unordered_map<long long, void*> live;
  long long failedAt = -1;
  for (size_t k = 0; k < events.size() && failedAt < 0; ++k) {
    const Event& event = events[k];
    if (!event.alloc) {
      auto found = live.find(event.id);
      if (found != live.end()) {
        allocator::raw_delete(found->second);
        live.erase(found);
      }
      continue;
    }
    if (event.bytes == 0) continue;  // vramfit allocates nothing for an empty tensor
    try {
      live[event.id] = allocator::raw_alloc(event.bytes);
    } catch (const c10::OutOfMemoryError&) {
      failedAt = static_cast<long long>(k);
    }
  }
  c10::CachingDeviceAllocator::DeviceStats stats = allocator::getDeviceStats(0);
  constexpr size_t kAggregate = static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE);
  std::string calls;
  for (long long bytes : gDeviceCalls) calls += (calls.empty() ? "" : ",") + std::to_string(bytes);
  std::printf("{\"fits\":%s,\"failedAt\":%lld,\"deviceCalls\":[%s],\"peakAllocatedBytes\":%lld,"
              "\"peakReservedBytes\":%lld,\"numAllocRetries\":%lld,\"numOoms\":%lld}\n",
              failedAt < 0 ? "true" : "false", failedAt, calls.c_str(),
              static_cast<long long>(stats.allocated_bytes[kAggregate].peak),
              static_cast<long long>(stats.reserved_bytes[kAggregate].peak),
              static_cast<long long>(stats.num_alloc_retries), static_cast<long long>(stats.num_ooms));
  std::fflush(stdout);
  for (auto& [id, pointer] : live) allocator::raw_delete(pointer);
  allocator::emptyCache();
  if (hold != nullptr) cudaFree(hold);
}

}  // namespace

int main() {
  int devices = c10::cuda::device_count();
  if (devices < 1) {
    std::fprintf(stderr, "genuine_allocator: no CUDA device (set CUDASIM_DEVICES for the stub runtime)\n");
    return 1;
  }
  // As torch.cuda's lazy init does (torch/csrc/cuda/Module.cpp): expandable segments ask whether
  // the device has fabric access, which reads this cache.
  c10::cuda::detail::init_p2p_access_cache(devices);
  allocator::init(devices);
  allocator::attachAllocatorTraceTracker(Track);
  size_t freeBytes = 0, totalBytes = 0;
  cudaSetDevice(0);
  cudaMemGetInfo(&freeBytes, &totalBytes);
  std::string command;
  std::vector<Event> events;
  while (std::cin >> command) {
    if (command != "replay") {
      std::fprintf(stderr, "genuine_allocator: expected `replay CAPACITY`, got \"%s\"\n", command.c_str());
      return 2;
    }
    size_t capacity = 0;
    std::cin >> capacity;
    std::string restOfLine;
    std::getline(std::cin, restOfLine);
    if (!ReadEvents(events)) {
      std::fprintf(stderr, "genuine_allocator: the events ended without `end`\n");
      return 2;
    }
    Replay(capacity, events, freeBytes);
  }
  return 0;
}
