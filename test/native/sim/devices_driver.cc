// Drives the simulated driver (build/Release/libcudasim.so) through its C ABI on several devices at
// once, and prints what it answered as JSON for test/native/simDevices.test.ts: each device has
// its own lock and allocation table, yet a pointer names one allocation in the process.
//   devices_driver LIBRARY unified          a pointer freed, and memset, from another device's context
//   devices_driver LIBRARY threads N ROUNDS one thread per device allocating and freeing at once,
//                                           then each freeing the next device's pointers (a ring)
// LIBRARY is opened with dlopen, as the addon opens it (its soname is libcuda.so.1).
#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "../../../native/cuda/cuda_driver_api.h"

namespace {

#define DECLARE(name, params) CUresult(*name) params = nullptr;
CUDA_DRIVER_FUNCTIONS(DECLARE)
#undef DECLARE

bool Load(const char* path) {
  void* library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) return false;
#define LOAD(name, params) name = reinterpret_cast<decltype(name)>(dlsym(library, #name));
  CUDA_DRIVER_FUNCTIONS(LOAD)
#undef LOAD
  return true;
}

constexpr size_t kMiB = size_t{1} << 20;

void Require(CUresult result, const char* what) {
  if (result != CUDA_SUCCESS) {
    std::fprintf(stderr, "%s failed: %d\n", what, result);
    std::exit(1);
  }
}

CUcontext Retain(int ordinal) {
  CUcontext context = nullptr;
  Require(cuDevicePrimaryCtxRetain(&context, ordinal), "cuDevicePrimaryCtxRetain");
  return context;
}

size_t FreeBytes() {
  size_t freeBytes = 0, totalBytes = 0;
  Require(cuMemGetInfo_v2(&freeBytes, &totalBytes), "cuMemGetInfo_v2");
  return freeBytes;
}

CUdeviceptr Allocate(size_t bytes) {
  CUdeviceptr pointer = 0;
  Require(cuMemAlloc_v2(&pointer, bytes), "cuMemAlloc_v2");
  return pointer;
}

// Two devices: what device 0 allocated, seen from device 1's context.
int Unified() {
  CUcontext first = Retain(0), second = Retain(1);
  Require(cuCtxSetCurrent(first), "cuCtxSetCurrent");
  const size_t start = FreeBytes();
  const CUdeviceptr a = Allocate(3 * kMiB), b = Allocate(3 * kMiB), c = Allocate(3 * kMiB);
  const size_t held = start - FreeBytes();
  // Memset inside an allocation of the current device, past its requested end, after b is freed.
  const int insideA = cuMemsetD8_v2(a + kMiB, 0, 2 * kMiB);
  const int pastA = cuMemsetD8_v2(a + kMiB, 0, 2 * kMiB + 1);
  Require(cuMemFree_v2(b), "cuMemFree_v2");
  const int freedB = cuMemsetD8_v2(b, 0, 1);
  const int aBelowFreedB = cuMemsetD8_v2(a, 0, 3 * kMiB);
  const int cAboveFreedB = cuMemsetD8_v2(c, 0, 3 * kMiB);
  Require(cuCtxSetCurrent(second), "cuCtxSetCurrent");
  const size_t secondStart = FreeBytes();
  const int memsetFromSecond = cuMemsetD8_v2(c, 0, 1);  // not the current device's memory
  const int freeFromSecond = cuMemFree_v2(a);            // unified addressing: freed all the same
  const int freeAgain = cuMemFree_v2(a);
  const int freeUnknown = cuMemFree_v2(c + 1);
  const size_t secondAfter = FreeBytes();
  Require(cuCtxSetCurrent(first), "cuCtxSetCurrent");
  const size_t firstAfterA = FreeBytes();  // a and b given back
  Require(cuMemFree_v2(c), "cuMemFree_v2");
  const size_t firstAfterAll = FreeBytes();
  std::printf(
      "{\"held\":%zu,\"insideA\":%d,\"pastA\":%d,\"freedB\":%d,\"aBelowFreedB\":%d,\"cAboveFreedB\":%d,"
      "\"memsetFromSecond\":%d,\"freeFromSecond\":%d,\"freeAgain\":%d,\"freeUnknown\":%d,\"secondChanged\":%zu,"
      "\"firstReturned\":%zu,\"firstBackToStart\":%s}\n",
      held, insideA, pastA, freedB, aBelowFreedB, cAboveFreedB, memsetFromSecond, freeFromSecond, freeAgain, freeUnknown,
      secondStart - secondAfter, firstAfterA - (start - held), firstAfterAll == start ? "true" : "false");
  return 0;
}

// One thread per device, all at once: each allocates 2 MiB blocks (reading free memory after each,
// as a guarded probe does) and frees them, ROUNDS times; then each allocates once more and frees
// the next device's blocks from its own context, all threads at once, allocating beside.
int Threads(int devices, int rounds) {
  constexpr int kBlocks = 200;
  std::vector<size_t> start(devices), end(devices);
  std::vector<std::vector<CUdeviceptr>> kept(devices);
  std::mutex addressesMutex;
  std::set<CUdeviceptr> addresses;
  size_t allocations = 0;
  std::atomic<int> failures{0}, arrived{0};
  std::vector<std::thread> threads;
  for (int d = 0; d < devices; ++d) {
    threads.emplace_back([&, d] {
      CUcontext context = Retain(d);
      Require(cuCtxSetCurrent(context), "cuCtxSetCurrent");
      start[d] = FreeBytes();
      std::vector<CUdeviceptr> blocks;
      for (int round = 0; round < rounds; ++round) {
        size_t before = FreeBytes();
        for (int i = 0; i < kBlocks; ++i) {
          blocks.push_back(Allocate(2 * kMiB));
          if (FreeBytes() != before - (i + 1) * 2 * kMiB) ++failures;  // only this thread allocates here
        }
        {
          std::lock_guard<std::mutex> lock(addressesMutex);
          addresses.insert(blocks.begin(), blocks.end());
          allocations += blocks.size();
        }
        for (CUdeviceptr block : blocks) Require(cuMemFree_v2(block), "cuMemFree_v2");
        blocks.clear();
      }
      for (int i = 0; i < kBlocks; ++i) kept[d].push_back(Allocate(2 * kMiB));
      ++arrived;
      while (arrived.load() < devices) std::this_thread::yield();
      // The next device's blocks go back while its own thread allocates and frees there too: two
      // threads on one device at once, one of them from another device's context.
      for (CUdeviceptr block : kept[(d + 1) % devices]) {
        if (cuMemFree_v2(block) != CUDA_SUCCESS) ++failures;
        Require(cuMemFree_v2(Allocate(2 * kMiB)), "cuMemFree_v2");
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  bool backToStart = true;
  for (int d = 0; d < devices; ++d) {
    Require(cuCtxSetCurrent(Retain(d)), "cuCtxSetCurrent");
    end[d] = FreeBytes();
    backToStart = backToStart && end[d] == start[d];
  }
  std::printf("{\"failures\":%d,\"allocations\":%zu,\"distinctAddresses\":%zu,\"backToStart\":%s}\n", failures.load(),
              allocations, addresses.size(), backToStart ? "true" : "false");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || !Load(argv[1])) {
    std::fprintf(stderr, "usage: devices_driver LIBRARY unified | devices_driver LIBRARY threads N ROUNDS (%s)\n", dlerror());
    return 2;
  }
  Require(cuInit(0), "cuInit");
  std::string what = argv[2];
  if (what == "unified") return Unified();
  if (what == "threads" && argc == 5) return Threads(std::atoi(argv[3]), std::atoi(argv[4]));
  std::fprintf(stderr, "usage: devices_driver LIBRARY unified | devices_driver LIBRARY threads N ROUNDS\n");
  return 2;
}
