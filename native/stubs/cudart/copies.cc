// Copies and memsets (copies.h).
#include "copies.h"

#include <atomic>
#include <cstring>

#include "memory.h"
#include "runtime.h"

namespace cudart {
namespace {

std::atomic<uint64_t> gDeviceToHostCopies{0}, gDeviceToHostBytes{0}, gHostToDeviceBytes{0};

// cudaMemcpyDefault infers the direction from the pointers, as unified addressing lets the real one.
int Direction(void* dst, const void* src, int kind) {
  if (kind != kMemcpyDefault) return kind;
  bool dstDevice = DeviceOfPointer(dst) >= 0, srcDevice = DeviceOfPointer(src) >= 0;
  if (srcDevice) return dstDevice ? kMemcpyDeviceToDevice : kMemcpyDeviceToHost;
  return dstDevice ? kMemcpyHostToDevice : kMemcpyHostToHost;
}

// One row of `width` bytes, `height` times, `dpitch` apart in the destination.
Error Copy(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height, int kind) {
  if (kind < kMemcpyHostToHost || kind > kMemcpyDefault) return kErrorInvalidMemcpyDirection;
  if ((dst == nullptr || src == nullptr) && width * height != 0) return kErrorInvalidValue;
  Device* device = nullptr;
  if (Error error = UseCurrentDevice(device)) return error;
  switch (Direction(dst, src, kind)) {
    case kMemcpyHostToHost:
      for (size_t row = 0; row < height; ++row) {
        std::memmove(static_cast<char*>(dst) + row * dpitch, static_cast<const char*>(src) + row * spitch, width);
      }
      break;
    case kMemcpyDeviceToHost:
      for (size_t row = 0; row < height; ++row) std::memset(static_cast<char*>(dst) + row * dpitch, 0, width);
      ++gDeviceToHostCopies;
      gDeviceToHostBytes += width * height;
      break;
    case kMemcpyHostToDevice:
      gHostToDeviceBytes += width * height;
      break;
    default:
      break;  // device to device: there is nothing behind either pointer
  }
  return kSuccess;
}

}  // namespace

CopyCounters ReadCopyCounters() {
  return CopyCounters{gDeviceToHostCopies.load(), gDeviceToHostBytes.load(), gHostToDeviceBytes.load()};
}

}  // namespace cudart

using namespace cudart;

CUDART_API Error cudaMemcpy(void* dst, const void* src, size_t count, int kind) {
  return Return(Copy(dst, count, src, count, count, 1, kind));
}

CUDART_API Error cudaMemcpyAsync(void* dst, const void* src, size_t count, int kind, void* /*stream*/) {
  return Return(Copy(dst, count, src, count, count, 1, kind));
}

CUDART_API Error cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                                   size_t height, int kind, void* /*stream*/) {
  if (width > dpitch || width > spitch) return Return(kErrorInvalidValue);  // cudaErrorInvalidPitchValue's cousin
  return Return(Copy(dst, dpitch, src, spitch, width, height, kind));
}

CUDART_API Error cudaMemcpyPeerAsync(void* dst, int /*dstDevice*/, const void* src, int /*srcDevice*/, size_t count,
                                     void* /*stream*/) {
  return Return(Copy(dst, count, src, count, count, 1, kMemcpyDeviceToDevice));
}

// __constant__ and __device__ variables live nowhere here: writing one is discarded.
CUDART_API Error cudaMemcpyToSymbol(const void* symbol, const void* src, size_t /*count*/, size_t /*offset*/,
                                    int /*kind*/) {
  return symbol == nullptr || src == nullptr ? Return(kErrorInvalidSymbol) : kSuccess;
}

CUDART_API Error cudaMemset(void* pointer, int /*value*/, size_t count) {
  if (pointer == nullptr && count != 0) return Return(kErrorInvalidValue);
  Device* device = nullptr;
  return Return(UseCurrentDevice(device));
}

CUDART_API Error cudaMemsetAsync(void* pointer, int /*value*/, size_t count, void* /*stream*/) {
  if (pointer == nullptr && count != 0) return Return(kErrorInvalidValue);
  Device* device = nullptr;
  return Return(UseCurrentDevice(device));
}
