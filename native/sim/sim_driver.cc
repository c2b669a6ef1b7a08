// The simulated CUDA driver: the C entry points of libcuda.so.1 that vramfit uses, backed by
// in-memory devices, so every native code path runs without a GPU.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <iterator>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "../cuda/cuda_driver_api.h"
#include "error_table.h"
#include "fault_injection.h"
#include "sim_config.h"

// Declaring every function first makes the compiler check each definition below against the
// shared ABI table (a C-linkage definition that differs is a conflicting declaration), and
// exports exactly these symbols from a library built with -fvisibility=hidden.
#define CUDASIM_DECLARE(name, params) extern "C" __attribute__((visibility("default"))) CUresult name params;
CUDA_DRIVER_FUNCTIONS(CUDASIM_DECLARE)
#undef CUDASIM_DECLARE

// The opaque context handle. Only primary contexts exist here: one per device, for the process.
struct CUctx_st {
  int ordinal;
};

namespace cudasim {
namespace {

struct Allocation {
  size_t requestedBytes;
  uint64_t reservedBytes;  // rounded up to the granularity: what the device actually loses
};

struct SimDevice {
  DeviceSpec spec;
  CUuuid uuid;
  std::map<CUdeviceptr, Allocation> allocations;
  uint64_t allocatedBytes = 0;
  int primaryRefs = 0;  // the primary context is active while retained
};

struct State {
  std::mutex mutex;  // guards everything below: the driver is called from many threads
  bool initialized = false;
  int driverVersion = 0;
  SimConfig config;
  std::vector<SimDevice> devices;
  std::deque<CUctx_st> contexts;  // a deque, so handles stay valid
  CUdeviceptr nextAddress = 1ull << 40;
};

// Never destroyed: a driver call on a worker thread may outlive static destruction at exit.
State& S() {
  static State& state = *new State;
  return state;
}

// Like the real driver, the current context belongs to the calling thread.
thread_local CUcontext tCurrent = nullptr;

// The prologue of every entry point: an injected fault first (it applies even before cuInit,
// as a broken install would), then the state lock, then the initialization check.
class Call {
 public:
  explicit Call(const char* function) : fault_(InjectedFault(function)), lock_(S().mutex) {}
  CUresult Status() const {
    if (fault_ != 0) return fault_;
    return S().initialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
  }
  void Unlock() { lock_.unlock(); }

 private:
  int fault_;
  std::unique_lock<std::mutex> lock_;
};

// Deterministic per device, so tests can compare UUIDs across runs: FNV-1a over index and name.
CUuuid MakeUuid(int ordinal, const std::string& name) {
  CUuuid uuid;
  std::string key = std::to_string(ordinal) + "#" + name;
  for (int half = 0; half < 2; ++half) {
    uint64_t hash = 14695981039346656037ull ^ static_cast<uint64_t>(half + 1);
    for (unsigned char c : key) hash = (hash ^ c) * 1099511628211ull;
    for (int i = 0; i < 8; ++i) uuid.bytes[half * 8 + i] = static_cast<char>(hash >> (8 * i));
  }
  return uuid;
}

SimDevice* FindDevice(CUdevice dev) {
  if (dev < 0 || static_cast<size_t>(dev) >= S().devices.size()) return nullptr;
  return &S().devices[dev];
}

// Memory calls act on the calling thread's current context.
CUresult CurrentDevice(SimDevice*& device) {
  if (tCurrent == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  device = &S().devices[tCurrent->ordinal];
  // A primary context released by everyone is inactive; the real driver answers 709 then.
  return device->primaryRefs > 0 ? CUDA_SUCCESS : CUDA_ERROR_CONTEXT_IS_DESTROYED;
}

uint64_t FreeBytes(const SimDevice& device) {
  return device.spec.totalBytes - device.spec.usedBytes - device.allocatedBytes;
}

CUresult CopyString(const std::string& text, char* out, int len) {
  if (out == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  size_t n = std::min(text.size(), static_cast<size_t>(len - 1));
  std::memcpy(out, text.data(), n);
  out[n] = '\0';
  return CUDA_SUCCESS;
}

CUresult LookUpErrorText(CUresult error, const char** pStr, bool name) {
  if (pStr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const ErrorText* entry = FindErrorText(error);
  *pStr = entry == nullptr ? nullptr : name ? entry->name : entry->description;
  return entry == nullptr ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

}  // namespace
}  // namespace cudasim

using cudasim::Call;
using cudasim::S;
using cudasim::SimDevice;

extern "C" {

CUresult cuInit(unsigned int flags) {
  Call call(__func__);
  if (CUresult fault = call.Status(); fault != CUDA_SUCCESS && fault != CUDA_ERROR_NOT_INITIALIZED) return fault;
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (S().initialized) return CUDA_SUCCESS;
  // Configuration is read once, at the first successful cuInit, as the real driver does.
  std::string error;
  std::optional<cudasim::SimConfig> config = cudasim::ReadConfig(error);
  if (!config) {
    std::fprintf(stderr, "cudasim: %s\n", error.c_str());
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (config->devices.empty()) return CUDA_ERROR_NO_DEVICE;
  S().config = *config;
  S().driverVersion = cudasim::ReadDriverVersion();
  for (size_t i = 0; i < config->devices.size(); ++i) {
    SimDevice device;
    device.spec = config->devices[i];
    device.uuid = cudasim::MakeUuid(static_cast<int>(i), device.spec.name);
    S().devices.push_back(device);
    S().contexts.push_back(CUctx_st{static_cast<int>(i)});
  }
  S().initialized = true;
  return CUDA_SUCCESS;
}

// Like the real driver, this one works before cuInit.
CUresult cuDriverGetVersion(int* driverVersion) {
  Call call(__func__);
  if (CUresult fault = call.Status(); fault != CUDA_SUCCESS && fault != CUDA_ERROR_NOT_INITIALIZED) return fault;
  if (driverVersion == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *driverVersion = S().initialized ? S().driverVersion : cudasim::ReadDriverVersion();
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int* count) {
  Call call(__func__);
  if (CUresult status = call.Status()) return status;
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *count = static_cast<int>(S().devices.size());
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  Call call(__func__);
  if (CUresult status = call.Status()) return status;
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (cudasim::FindDevice(ordinal) == nullptr) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  Call call(__func__);
  if (CUresult status = call.Status()) return status;
  SimDevice* device = cudasim::FindDevice(dev);
  if (device == nullptr) return CUDA_ERROR_INVALID_DEVICE;
  return cudasim::CopyString(device->spec.name, name, len);
}

static CUresult GetUuid(const Call& call, CUuuid* uuid, CUdevice dev) {
  if (CUresult status = call.Status()) return status;
  SimDevice* device = cudasim::FindDevice(dev);
  if (device == nullptr) return CUDA_ERROR_INVALID_DEVICE;
  if (uuid == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *uuid = device->uuid;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid(CUuuid* uuid, CUdevice dev) {
  return GetUuid(Call(__func__), uuid, dev);
}

CUresult cuDeviceGetUuid_v2(CUuuid* uuid, CUdevice dev) {
  return GetUuid(Call(__func__), uuid, dev);
}

CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  Call call(__func__);
  if (CUresult status = call.Status()) return status;
  SimDevice* device = cudasim::FindDevice(dev);
  if (device == nullptr) return CUDA_ERROR_INVALID_DEVICE;
  if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *bytes = device->spec.totalBytes;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int* pi, CUdevice_attribute attrib, CUdevice dev) {
  Call call(__func__);
  if (CUresult status = call.Status()) return status;
  SimDevice* device = cudasim::FindDevice(dev);
  if (device == nullptr) return CUDA_ERROR_INVALID_DEVICE;
  if (pi == nullptr) return CUDA_ERROR_INVALID_VALUE;
  switch (attrib) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *pi = device->spec.ccMajor; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *pi = device->spec.ccMinor; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *pi = device->spec.multiprocessorCount; break;
    case CU_DEVICE_ATTRIBUTE_INTEGRATED: *pi = device->spec.integrated ? 1 : 0; break;
    default: return CUDA_ERROR_INVALID_VALUE;  // the simulator models only what vramfit reads
  }
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetPCIBusId(char* pciBusId, int len, CUdevice dev) {
  Call call(__func__);
  if (CUresult status = call.Status()) return status;
  if (cudasim::FindDevice(dev) == nullptr) return CUDA_ERROR_INVALID_DEVICE;
  // domain:bus:device.function, upper-case hex; consecutive buses keep ids distinct per device.
  int slot = 0x1B + dev;
  char text[32];
  std::snprintf(text, sizeof text, "%04X:%02X:00.0", slot / 256, slot % 256);
  if (len < static_cast<int>(std::strlen(text)) + 1) return CUDA_ERROR_INVALID_VALUE;
  return cudasim::CopyString(text, pciBusId, len);
}

CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  Call call(__func__);
  if (CUresult status = call.Status()) return status;
  SimDevice* device = cudasim::FindDevice(dev);
  if (device == nullptr) return CUDA_ERROR_INVALID_DEVICE;
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  ++device->primaryRefs;
  *pctx = &S().contexts[dev];
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  Call call(__func__);
  if (CUresult status = call.Status()) return status;
  SimDevice* device = cudasim::FindDevice(dev);
  if (device == nullptr) return CUDA_ERROR_INVALID_DEVICE;
  if (device->primaryRefs == 0) return CUDA_ERROR_INVALID_CONTEXT;
  // The last release destroys the context, and with it every allocation made in it.
  if (--device->primaryRefs == 0) {
    device->allocations.clear();
    device->allocatedBytes = 0;
  }
  return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx) {
  Call call(__func__);
  if (CUresult status = call.Status()) return status;
  if (ctx != nullptr) {
    bool known = false;
    for (const CUctx_st& candidate : S().contexts) known = known || &candidate == ctx;
    if (!known) return CUDA_ERROR_INVALID_CONTEXT;
  }
  cudasim::tCurrent = ctx;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext* pctx) {
  Call call(__func__);
  if (CUresult status = call.Status()) return status;
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *pctx = cudasim::tCurrent;
  return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void) {
  Call call(__func__);
  if (CUresult status = call.Status()) return status;
  SimDevice* device = nullptr;
  if (CUresult status = cudasim::CurrentDevice(device)) return status;
  unsigned delayMs = S().config.syncDelayMs;
  call.Unlock();  // a synchronizing thread must not stall the other threads' driver calls
  std::this_thread::sleep_for(std::chrono::milliseconds(delayMs));
  return CUDA_SUCCESS;
}

CUresult cuMemGetInfo_v2(size_t* free, size_t* total) {
  Call call(__func__);
  if (CUresult status = call.Status()) return status;
  SimDevice* device = nullptr;
  if (CUresult status = cudasim::CurrentDevice(device)) return status;
  if (free == nullptr || total == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *free = cudasim::FreeBytes(*device);
  *total = device->spec.totalBytes;
  return CUDA_SUCCESS;
}

CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  Call call(__func__);
  if (CUresult status = call.Status()) return status;
  SimDevice* device = nullptr;
  if (CUresult status = cudasim::CurrentDevice(device)) return status;
  if (dptr == nullptr || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  uint64_t granularity = S().config.granularity;
  uint64_t freeBytes = cudasim::FreeBytes(*device);
  if (bytesize > freeBytes) return CUDA_ERROR_OUT_OF_MEMORY;  // also keeps the rounding below from overflowing
  uint64_t reserved = (bytesize + granularity - 1) / granularity * granularity;
  if (reserved > freeBytes) return CUDA_ERROR_OUT_OF_MEMORY;
  CUdeviceptr address = S().nextAddress;
  S().nextAddress += reserved;  // addresses are never reused, so a stale pointer is caught
  device->allocations[address] = {bytesize, reserved};
  device->allocatedBytes += reserved;
  *dptr = address;
  return CUDA_SUCCESS;
}

CUresult cuMemFree_v2(CUdeviceptr dptr) {
  Call call(__func__);
  if (CUresult status = call.Status()) return status;
  SimDevice* current = nullptr;
  if (CUresult status = cudasim::CurrentDevice(current)) return status;
  // Unified addressing: a pointer is freed wherever it lives, whichever context is current.
  for (SimDevice& device : S().devices) {
    auto found = device.allocations.find(dptr);
    if (found == device.allocations.end()) continue;
    device.allocatedBytes -= found->second.reservedBytes;
    device.allocations.erase(found);
    return CUDA_SUCCESS;
  }
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N) {
  (void)uc;  // there is no memory behind the simulated pointers
  Call call(__func__);
  if (CUresult status = call.Status()) return status;
  SimDevice* device = nullptr;
  if (CUresult status = cudasim::CurrentDevice(device)) return status;
  // The range must lie inside one allocation of the current device: catches a caller's bad size.
  auto after = device->allocations.upper_bound(dstDevice);
  if (after == device->allocations.begin()) return CUDA_ERROR_INVALID_VALUE;
  auto found = std::prev(after);
  uint64_t offset = dstDevice - found->first;
  if (offset >= found->second.requestedBytes || N > found->second.requestedBytes - offset) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

// The two error-text functions work before cuInit, as the real driver's do.
CUresult cuGetErrorName(CUresult error, const char** pStr) {
  if (int fault = cudasim::InjectedFault(__func__)) return fault;
  return cudasim::LookUpErrorText(error, pStr, true);
}

CUresult cuGetErrorString(CUresult error, const char** pStr) {
  if (int fault = cudasim::InjectedFault(__func__)) return fault;
  return cudasim::LookUpErrorText(error, pStr, false);
}

}  // extern "C"
