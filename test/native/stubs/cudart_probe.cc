// Drives the stub CUDA runtime through its C ABI, as PyTorch would, and prints what it answered as
// JSON for test/native/cudartStub.test.ts. Built by that test with g++ against
// build/Release/stubs/cuda13/libcudart.so.13; declares the functions itself (no CUDA headers), with
// the stub's own layouts (native/stubs/cudart/cudart_abi.h, checked by cudart_abi_check.cc).
//   cudart_probe              the device, its properties and attributes, errors, copies
//   cudart_probe fill BYTES   cudaMalloc(BYTES) until it fails: how many, and the error
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../../../native/stubs/cudart/cudart_abi.h"

extern "C" {
int cudaGetDeviceCount(int*);
int cudaSetDevice(int);
int cudaGetDeviceProperties(void*, int);
int cudaDeviceGetAttribute(int*, int, int);
int cudaMalloc(void**, size_t);
int cudaFree(void*);
int cudaMemGetInfo(size_t*, size_t*);
int cudaMemcpy(void*, const void*, size_t, int);
int cudaGetLastError(void);
int cudaPeekAtLastError(void);
const char* cudaGetErrorName(int);
const char* cudaGetErrorString(int);
int cudaPointerGetAttributes(void*, const void*);
int cudaRuntimeGetVersion(int*);
int cudaDriverGetVersion(int*);
}

namespace {

std::string Quote(const char* text) {
  return std::string("\"") + (text ? text : "(null)") + "\"";
}

int Fill(size_t bytes) {
  std::vector<void*> held;
  int error = 0;
  for (;;) {
    void* pointer = nullptr;
    error = cudaMalloc(&pointer, bytes);
    if (error != 0) break;
    if (reinterpret_cast<uintptr_t>(pointer) % 512 != 0) {
      std::printf("{\"misaligned\": true}\n");
      return 1;
    }
    held.push_back(pointer);
  }
  size_t free = 0, total = 0;
  cudaMemGetInfo(&free, &total);
  int last = cudaGetLastError();
  int afterTake = cudaGetLastError();
  for (void* pointer : held) cudaFree(pointer);
  size_t freeAfter = 0;
  cudaMemGetInfo(&freeAfter, &total);
  std::printf("{\"allocations\": %zu, \"error\": %d, \"errorName\": %s, \"lastError\": %d, \"afterTake\": %d, "
              "\"freeAtFull\": %zu, \"freeAfter\": %zu, \"total\": %zu}\n",
              held.size(), error, Quote(cudaGetErrorName(error)).c_str(), last, afterTake, free, freeAfter, total);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "fill") return Fill(std::strtoull(argv[2], nullptr, 10));
  int count = -1;
  int countError = cudaGetDeviceCount(&count);
  if (countError != 0) {
    std::printf("{\"countError\": %d, \"count\": %d, \"errorName\": %s, \"errorString\": %s}\n", countError, count,
                Quote(cudaGetErrorName(countError)).c_str(), Quote(cudaGetErrorString(countError)).c_str());
    return 0;
  }
  cudart::DeviceProp13 prop;
  int propError = cudaGetDeviceProperties(&prop, 0);
  int attr[5];
  const int ids[5] = {75, 76, 16, 39, 97};  // cc major, minor, SMs, threads/SM, shared/block opt-in
  for (int i = 0; i < 5; ++i) cudaDeviceGetAttribute(&attr[i], ids[i], 0);
  int badAttr = cudaDeviceGetAttribute(&attr[0], 75, 7);
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  void* device = nullptr;
  cudaMalloc(&device, 3000);
  unsigned char host[3000];
  std::memset(host, 0xAB, sizeof host);
  int d2h = cudaMemcpy(host, device, sizeof host, 4);  // cudaMemcpyDefault: direction from the pointers
  bool zeros = true;
  for (unsigned char byte : host) zeros = zeros && byte == 0;
  cudart::PointerAttributes attributes;
  cudaPointerGetAttributes(&attributes, static_cast<char*>(device) + 100);
  int pointerType = attributes.type;
  cudaPointerGetAttributes(&attributes, host);
  cudaFree(device);
  std::printf(
      "{\"count\": %d, \"propError\": %d, \"name\": %s, \"totalGlobalMem\": %zu, \"major\": %d, \"minor\": %d, "
      "\"multiProcessorCount\": %d, \"l2CacheSize\": %d, \"maxThreadsPerMultiProcessor\": %d, "
      "\"sharedMemPerMultiprocessor\": %zu, \"sharedMemPerBlockOptin\": %zu, \"warpSize\": %d, "
      "\"attributes\": [%d, %d, %d, %d, %d], \"badDeviceError\": %d, \"runtimeVersion\": %d, \"driverVersion\": %d, "
      "\"deviceToHost\": %d, \"readZeros\": %s, \"devicePointerType\": %d, \"hostPointerType\": %d, "
      "\"oomName\": %s, \"oomString\": %s, \"unknownName\": %s}\n",
      count, propError, Quote(prop.name).c_str(), prop.totalGlobalMem, prop.major, prop.minor, prop.multiProcessorCount,
      prop.l2CacheSize, prop.maxThreadsPerMultiProcessor, prop.sharedMemPerMultiprocessor, prop.sharedMemPerBlockOptin,
      prop.warpSize, attr[0], attr[1], attr[2], attr[3], attr[4], badAttr, runtime,
      driver, d2h, zeros ? "true" : "false", pointerType, attributes.type, Quote(cudaGetErrorName(2)).c_str(),
      Quote(cudaGetErrorString(2)).c_str(), Quote(cudaGetErrorName(12345)).c_str());
  return 0;
}
