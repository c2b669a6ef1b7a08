// The simulated CUDA driver: the C entry points of libcuda.so.1 that vramfit uses, backed by the
// simulated machine (libsimgpu.so), so every native code path runs without a GPU.
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <deque>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "../cuda/cuda_driver_api.h"
#include "../cuda/sticky_errors.h"
#include "accounting.h"
#include "allocation_table.h"
#include "call_hooks.h"
#include "error_table.h"
#include "fault_injection.h"
#include "machine.h"
#include "touched.h"
#include "visible_devices.h"

// Declaring every function first makes the compiler check each definition below against the
// shared ABI table (a C-linkage definition that differs is a conflicting declaration), and
// exports exactly these symbols from a library built with -fvisibility=hidden.
#define CUDASIM_DECLARE(name, params) extern "C" __attribute__((visibility("default"))) CUresult name params;
CUDA_DRIVER_FUNCTIONS(CUDASIM_DECLARE)
// Beyond the addon's table: what a job's PyTorch calls on the driver of a simulated GPU.
CUDASIM_DECLARE(cuDevicePrimaryCtxGetState, (CUdevice dev, unsigned int* flags, int* active))
CUDASIM_DECLARE(cuOccupancyMaxActiveBlocksPerMultiprocessor, (int* numBlocks, void* function, int blockSize, size_t dynamicSMemSize))
CUDASIM_DECLARE(cuPointerGetAttribute, (void* data, int attribute, CUdeviceptr ptr))
#undef CUDASIM_DECLARE

// The opaque context handle. Only primary contexts exist here: one per device, for the process.
struct CUctx_st {
  int ordinal;
};

namespace cudasim {
namespace {

// A real driver gives up when a GPU has fallen off the bus; this is the simulator's choice of
// code for every call that reaches such a GPU (CUDASIM_LOST).
constexpr CUresult kLostResult = 46;  // CUDA_ERROR_DEVICE_UNAVAILABLE

// A page (one granule) that small allocations share, as the real driver packs them: charged
// when the first one needs it, uncharged when the last one in it is freed. Its bytes are
// counted, not placed: fragmentation inside a page is not modelled.
struct SharedPage {
  uint64_t usedBytes = 0;
  int allocations = 0;
};

// A CUDA device: a whole GPU, or one MIG instance of one. What is fixed at cuInit is read freely;
// the rest is guarded by the device's own lock, as a real driver's devices do not share one: the
// threads of several devices (vramfit probes them all at once) never wait on one another here.
struct SimDevice {
  int ordinal;
  int pool;
  const DeviceSpec* spec;
  std::string name;
  CUuuid uuid;        // cuDeviceGetUuid_v2: the MIG instance's own UUID on a MIG device
  CUuuid legacyUuid;  // cuDeviceGetUuid: always the physical GPU's
  std::mutex mutex;   // guards everything below
  int primaryRefs = 0;  // the primary context is active while retained
  // Of the primary context, reset when it is destroyed: an asynchronous error waiting for the
  // next synchronization, and a sticky one that every call in the context now returns.
  CUresult pendingError = CUDA_SUCCESS;
  CUresult stickyError = CUDA_SUCCESS;
  AllocationTable allocations;           // made in its primary context, by address
  std::map<uint64_t, SharedPage> pages;  // by page id
  uint64_t nextPage = 1;
};

struct State {
  std::mutex mutex;  // guards cuInit's setup, and serializes the calls that reach no device
  std::atomic<bool> initialized{false};  // read unlocked by Call; the devices are fixed before it is set
  int driverVersion = 0;
  Machine machine;
  Accounting* accounting = nullptr;  // locks itself
  std::vector<std::unique_ptr<SimDevice>> devices;  // by ordinal; a SimDevice (its mutex) cannot move
  std::deque<CUctx_st> contexts;     // a deque, so handles stay valid
  // Every device's allocations and reserved ranges take their addresses from here, so a pointer
  // names one allocation in the process (unified addressing).
  std::atomic<CUdeviceptr> nextAddress{1ull << 40};
};

// Never destroyed: a driver call on a worker thread may outlive static destruction at exit.
// Inlined: every entry point reaches it several times.
inline __attribute__((always_inline)) State& S() {
  static State& state = *new State;
  return state;
}

// Like the real driver, the current context belongs to the calling thread.
thread_local CUcontext tCurrent = nullptr;

inline __attribute__((always_inline)) SimDevice* FindDevice(CUdevice dev) {
  if (dev < 0 || static_cast<size_t>(dev) >= S().devices.size()) return nullptr;
  return S().devices[dev].get();
}

// The stub driver of a simulated GPU (native/stubs/stubs.cmake builds these objects again with
// CUDASIM_IMPLICIT_INIT) initializes itself on first use: there, the CUDA runtime is the stub one,
// which never calls cuInit, yet PyTorch calls the driver directly (libcaffe2_nvrtc.so's
// cuDevicePrimaryCtxGetState) expecting the runtime to have done so, as the real runtime does.
#ifdef CUDASIM_IMPLICIT_INIT
constexpr bool kImplicitInit = true;
#else
constexpr bool kImplicitInit = false;
#endif

}  // namespace
}  // namespace cudasim
extern "C" CUresult cuInit(unsigned int flags);
namespace cudasim {
namespace {

void InitializeImplicitly() {
  static thread_local bool initializing = false;  // cuInit's own prologue comes back here
  if (!kImplicitInit || S().initialized || initializing) return;
  initializing = true;
  cuInit(0);
  initializing = false;
}

// The prologue of every entry point: an injected fault first (it applies even before cuInit,
// as a broken install would), the trace, then for calls that reach a GPU its latency and whether
// it is lost, then the lock (that device's, or the driver's for a call that reaches none) and the
// initialization check.
class Call {
 public:
  static constexpr int kNoDevice = -2;
  static constexpr int kCurrent = -1;

  // `device`: kNoDevice for calls the driver answers from its own tables (enumeration),
  // kCurrent for calls on the thread's current context, or a CUDA ordinal.
  explicit Call(const char* function, int device = kNoDevice) : settings_(cudasim::ReadCallSettings()), fault_(InjectedFault(function, settings_.fail)) {
    InitializeImplicitly();
    if (settings_.trace != nullptr) TraceCall(function, settings_.trace);
    // Unlocked: while this call waits, other threads and processes proceed.
    const bool paused = settings_.pause != nullptr && PauseIfAsked(function, settings_.pause);
    current_ = tCurrent;  // read once: each read of a shared library's thread-local is a call
    int ordinal = device == kCurrent ? (current_ ? current_->ordinal : -1) : device;
    if (device != kNoDevice && S().initialized) target_ = FindDevice(ordinal);  // fixed after cuInit
    if (target_ != nullptr) {
      const unsigned delayMs = S().machine.config.callDelayMs + target_->spec->delayMs;
      if (delayMs > 0) SleepMs(delayMs);  // unlocked: others proceed
      // After a wait, read again: a test may have lost the GPU meanwhile.
      const char* lost = paused || delayMs > 0 ? std::getenv("CUDASIM_LOST") : settings_.lost;
      lost_ = lost != nullptr && GpuLost(S().machine.pools[target_->pool].gpu, lost);
    }
    lock_ = std::unique_lock<std::mutex>(target_ != nullptr ? target_->mutex : S().mutex);
  }
  CUresult Status() const {
    if (fault_ != 0) return fault_;
    if (!S().initialized) return CUDA_ERROR_NOT_INITIALIZED;
    return lost_ ? kLostResult : CUDA_SUCCESS;
  }
  void Unlock() { lock_.unlock(); }
  // The calling thread's current context when the call began, and the device the call reached
  // (whose lock it holds), if any.
  CUcontext current() const { return current_; }
  SimDevice* target() const { return target_; }
  // The CUDASIM_* settings read when the call began (the ledger's CUDASIM_MEMORY_LOG, ...).
  const cudasim::CallSettings& settings() const { return settings_; }

 private:
  cudasim::CallSettings settings_;
  int fault_;
  bool lost_ = false;
  CUcontext current_ = nullptr;
  SimDevice* target_ = nullptr;
  std::unique_lock<std::mutex> lock_;
};

// Memory calls act on the calling thread's current context: `call`'s, whose device it locked.
CUresult CurrentDevice(const Call& call, SimDevice*& device) {
  if (call.current() == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  device = call.target();  // the current context's device: Status() said the driver is initialized
  // A primary context released by everyone is inactive; the real driver answers 709 then.
  if (device->primaryRefs == 0) return CUDA_ERROR_CONTEXT_IS_DESTROYED;
  return device->stickyError;  // CUDA_SUCCESS unless the context is broken
}

bool SmallAllocation(uint64_t bytes) {
  const SimConfig& config = S().machine.config;
  return bytes <= config.smallAllocMaxBytes && bytes < config.granularity;
}

uint64_t RoundUp(uint64_t bytes, uint64_t unit) {
  return (bytes + unit - 1) / unit * unit;
}

uint64_t Capacity(const SimDevice& device) {
  const Pool& pool = S().machine.pools[device.pool];
  return pool.totalBytes - pool.baseUsedBytes;
}

// What cuMemAlloc and cuMemCreate may charge in all: the capacity less the hidden bytes, which
// cuMemGetInfo still counts as free.
uint64_t GrantableCapacity(const SimDevice& device) {
  uint64_t capacity = Capacity(device);
  uint64_t hidden = S().machine.pools[device.pool].hiddenBytes;
  return hidden >= capacity ? 0 : capacity - hidden;
}

uint64_t FreeBytes(const SimDevice& device) {
  uint64_t charged = S().accounting->Charged(device.pool);
  uint64_t capacity = Capacity(device);
  return charged >= capacity ? 0 : capacity - charged;
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

std::string MigName(const DeviceSpec& spec, uint64_t bytes) {
  return spec.name + " MIG " + std::to_string((bytes + 500000000) / 1000000000) + "gb";
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
  std::optional<cudasim::Machine> machine = cudasim::BuildMachine(error);
  if (!machine) {
    std::fprintf(stderr, "cudasim: %s\n", error.c_str());
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::vector<int> pools = cudasim::VisiblePools(*machine);
  if (pools.empty()) return CUDA_ERROR_NO_DEVICE;
  cudasim::Accounting* accounting = cudasim::Accounting::Open(*machine, error);
  if (accounting == nullptr) {
    std::fprintf(stderr, "cudasim: %s\n", error.c_str());
    return CUDA_ERROR_INVALID_VALUE;
  }
  S().machine = *machine;
  S().accounting = accounting;
  S().driverVersion = cudasim::ReadDriverVersion();
  for (int poolIndex : pools) {
    const cudasim::Pool& pool = S().machine.pools[poolIndex];
    const cudasim::DeviceSpec& spec = S().machine.config.devices[pool.gpu];
    const int ordinal = static_cast<int>(S().devices.size());
    SimDevice& device = *S().devices.emplace_back(std::make_unique<SimDevice>());
    device.ordinal = ordinal;
    device.pool = poolIndex;
    device.spec = &spec;
    device.name = pool.mig < 0 ? spec.name : cudasim::MigName(spec, pool.totalBytes);
    std::memcpy(device.uuid.bytes, pool.uuid, 16);
    std::memcpy(device.legacyUuid.bytes, S().machine.pools[S().machine.gpuPool[pool.gpu]].uuid, 16);
    S().contexts.push_back(CUctx_st{ordinal});
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
  return cudasim::CopyString(device->name, name, len);
}

static CUresult GetUuid(const Call& call, CUuuid* uuid, CUdevice dev, bool v2) {
  if (CUresult status = call.Status()) return status;
  SimDevice* device = cudasim::FindDevice(dev);
  if (device == nullptr) return CUDA_ERROR_INVALID_DEVICE;
  if (uuid == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *uuid = v2 ? device->uuid : device->legacyUuid;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid(CUuuid* uuid, CUdevice dev) {
  return GetUuid(Call(__func__), uuid, dev, false);
}

CUresult cuDeviceGetUuid_v2(CUuuid* uuid, CUdevice dev) {
  return GetUuid(Call(__func__), uuid, dev, true);
}

CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  Call call(__func__);
  if (CUresult status = call.Status()) return status;
  SimDevice* device = cudasim::FindDevice(dev);
  if (device == nullptr) return CUDA_ERROR_INVALID_DEVICE;
  if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *bytes = S().machine.pools[device->pool].totalBytes;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int* pi, CUdevice_attribute attrib, CUdevice dev) {
  Call call(__func__);
  if (CUresult status = call.Status()) return status;
  SimDevice* device = cudasim::FindDevice(dev);
  if (device == nullptr) return CUDA_ERROR_INVALID_DEVICE;
  if (pi == nullptr) return CUDA_ERROR_INVALID_VALUE;
  switch (attrib) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *pi = device->spec->ccMajor; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *pi = device->spec->ccMinor; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *pi = device->spec->multiprocessorCount; break;
    case CU_DEVICE_ATTRIBUTE_INTEGRATED: *pi = device->spec->integrated ? 1 : 0; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_MODE: *pi = device->spec->computeMode; break;
    // The virtual-memory functions below serve expandable segments; their handles cannot be
    // exported (cuMemExportToShareableHandle is not supported), nor used for GPUDirect RDMA or a fabric.
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: *pi = 1; break;
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED: *pi = 0; break;
    case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED: *pi = 0; break;
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED: *pi = 0; break;
    default: return CUDA_ERROR_INVALID_VALUE;  // the simulator models only what vramfit reads
  }
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetPCIBusId(char* pciBusId, int len, CUdevice dev) {
  Call call(__func__);
  if (CUresult status = call.Status()) return status;
  SimDevice* device = cudasim::FindDevice(dev);
  if (device == nullptr) return CUDA_ERROR_INVALID_DEVICE;
  // domain:bus:device.function, upper-case hex; a MIG instance reports its GPU's.
  char text[32];
  std::snprintf(text, sizeof text, "0000:%02X:00.0", device->spec->pciBus);
  if (len < static_cast<int>(std::strlen(text)) + 1) return CUDA_ERROR_INVALID_VALUE;
  return cudasim::CopyString(text, pciBusId, len);
}

CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  Call call(__func__, dev);
  if (CUresult status = call.Status()) return status;
  SimDevice* device = cudasim::FindDevice(dev);
  if (device == nullptr) return CUDA_ERROR_INVALID_DEVICE;
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (device->primaryRefs == 0) {
    // Creating the context: the compute mode may forbid it (CUDA_ERROR_DEVICE_UNAVAILABLE is what
    // cuda.h names for both modes), and it costs device memory (CUDASIM_CONTEXT_BYTES).
    int mode = device->spec->computeMode;
    if (mode == cudasim::kComputeModeProhibited) return CUDA_ERROR_DEVICE_UNAVAILABLE;
    bool exclusive = mode == cudasim::kComputeModeExclusiveProcess;
    // Another user's process (proc=) on a whole GPU has its context there already.
    bool mig = S().machine.pools[device->pool].mig >= 0;
    if (exclusive && !mig && !device->spec->processes.empty()) return CUDA_ERROR_DEVICE_UNAVAILABLE;
    switch (S().accounting->OpenContext(device->pool, S().machine.config.contextBytes, cudasim::Capacity(*device),
                                        exclusive)) {
      case cudasim::ContextOpened::kBusy: return CUDA_ERROR_DEVICE_UNAVAILABLE;
      case cudasim::ContextOpened::kOutOfMemory: return CUDA_ERROR_OUT_OF_MEMORY;
      case cudasim::ContextOpened::kOk: break;
    }
  }
  ++device->primaryRefs;
  *pctx = &S().contexts[dev];
  return CUDA_SUCCESS;
}

// Whether the device's primary context is active: retained here, or, on a simulated GPU, opened by
// the stub runtime of the same process (it records its context in the shared ledger, as this
// driver does; nothing else holds memory in this process's name).
CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int* flags, int* active) {
  Call call(__func__, dev);
  if (CUresult status = call.Status()) return status;
  SimDevice* device = cudasim::FindDevice(dev);
  if (device == nullptr) return CUDA_ERROR_INVALID_DEVICE;
  if (flags == nullptr || active == nullptr) return CUDA_ERROR_INVALID_VALUE;
  bool held = device->primaryRefs > 0;
  if (!held && cudasim::kImplicitInit) {
    for (const cudasim::Holder& holder : S().accounting->Holders(device->pool)) held = held || holder.pid == getpid();
  }
  *flags = 0;
  *active = held ? 1 : 0;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  Call call(__func__, dev);
  if (CUresult status = call.Status()) return status;
  SimDevice* device = cudasim::FindDevice(dev);
  if (device == nullptr) return CUDA_ERROR_INVALID_DEVICE;
  if (device->primaryRefs == 0) return CUDA_ERROR_INVALID_CONTEXT;
  // The last release destroys the context, and with it every allocation made in it and any
  // error it had.
  if (--device->primaryRefs == 0) {
    uint64_t held = S().machine.config.contextBytes + device->pages.size() * S().machine.config.granularity;
    device->allocations.ForEach([&held](const cudasim::Allocation& allocation) { held += allocation.reservedBytes; });
    device->allocations.Clear();
    device->pages.clear();
    device->pendingError = device->stickyError = CUDA_SUCCESS;
    S().accounting->CloseContext(device->pool, held);
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
  // On a simulated GPU the stub runtime makes contexts current without telling the driver, as the
  // real runtime does through it: the thread's context is then the primary context of the
  // runtime's current device, once this process has opened it (PyTorch's cuBLAS handle pool asks).
  if (*pctx == nullptr && cudasim::kImplicitInit) {
    using GetDevice = int (*)(int*);
    static auto getDevice = reinterpret_cast<GetDevice>(dlsym(RTLD_DEFAULT, "cudaGetDevice"));
    int ordinal = -1;
    SimDevice* device = nullptr;
    call.Unlock();  // the runtime may call back into the driver
    bool known = getDevice != nullptr && getDevice(&ordinal) == 0;
    std::lock_guard<std::mutex> lock(S().mutex);
    if (known && (device = cudasim::FindDevice(ordinal)) != nullptr) {
      for (const cudasim::Holder& holder : S().accounting->Holders(device->pool)) {
        if (holder.pid == getpid()) *pctx = &S().contexts[ordinal];
      }
    }
  }
  return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void) {
  Call call(__func__, Call::kCurrent);
  if (CUresult status = call.Status()) return status;
  SimDevice* device = nullptr;
  if (CUresult status = cudasim::CurrentDevice(call, device)) return status;
  // The queued work's failure surfaces here; a sticky one stays with the context from now on.
  CUresult failure = device->pendingError;
  device->pendingError = CUDA_SUCCESS;
  if (vramfit::IsStickyError(failure)) device->stickyError = failure;
  unsigned delayMs = S().machine.config.syncDelayMs;
  call.Unlock();  // a synchronizing thread must not stall the other threads' driver calls
  cudasim::SleepMs(delayMs);
  return failure;
}

CUresult cuMemGetInfo_v2(size_t* free, size_t* total) {
  Call call(__func__, Call::kCurrent);
  if (CUresult status = call.Status()) return status;
  SimDevice* device = nullptr;
  if (CUresult status = cudasim::CurrentDevice(call, device)) return status;
  if (free == nullptr || total == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *free = cudasim::FreeBytes(*device);
  *total = S().machine.pools[device->pool].totalBytes;
  return CUDA_SUCCESS;
}

CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  Call call(__func__, Call::kCurrent);
  if (CUresult status = call.Status()) return status;
  SimDevice* device = nullptr;
  if (CUresult status = cudasim::CurrentDevice(call, device)) return status;
  if (dptr == nullptr || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  uint64_t granularity = S().machine.config.granularity;
  uint64_t capacity = cudasim::GrantableCapacity(*device);
  if (bytesize > capacity) return CUDA_ERROR_OUT_OF_MEMORY;  // also keeps the rounding below from overflowing
  cudasim::Allocation allocation;
  allocation.requestedBytes = bytesize;
  if (cudasim::SmallAllocation(bytesize)) {
    // Into the first shared page with room, else a new page.
    allocation.pageBytes = cudasim::RoundUp(bytesize, S().machine.config.allocAlignment);
    for (auto& [id, page] : device->pages) {
      if (page.usedBytes + allocation.pageBytes <= granularity) {
        allocation.page = id;
        break;
      }
    }
    if (allocation.page == 0) {
      if (!S().accounting->Charge(device->pool, granularity, capacity, call.settings().memoryLog)) return CUDA_ERROR_OUT_OF_MEMORY;
      allocation.page = device->nextPage++;
    }
    cudasim::SharedPage& page = device->pages[allocation.page];
    page.usedBytes += allocation.pageBytes;
    ++page.allocations;
  } else {
    allocation.reservedBytes = cudasim::RoundUp(bytesize, granularity);
    // The check and the charge are one step of the ledger: another process cannot slip in between.
    if (!S().accounting->Charge(device->pool, allocation.reservedBytes, capacity, call.settings().memoryLog)) return CUDA_ERROR_OUT_OF_MEMORY;
  }
  // Addresses are never reused, so a stale pointer is caught; a small allocation's address is not
  // inside its page (pages are only counted). Taken under the device's lock, so they grow per device.
  CUdeviceptr address = S().nextAddress.fetch_add(cudasim::RoundUp(bytesize, granularity), std::memory_order_relaxed);
  device->allocations.Add(address, allocation);
  *dptr = address;
  return CUDA_SUCCESS;
}

namespace cudasim {
namespace {
// Frees `dptr` if `owner` (locked) holds it; false when it does not.
bool FreeOn(SimDevice& owner, CUdeviceptr dptr, const char* memoryLog) {
  AllocationTable::Entry* entry = owner.allocations.At(dptr);
  if (entry == nullptr) return false;
  const Allocation& allocation = entry->allocation;
  if (allocation.page != 0) {
    auto page = owner.pages.find(allocation.page);
    page->second.usedBytes -= allocation.pageBytes;
    if (--page->second.allocations == 0) {  // the last allocation in the page: the page goes too
      owner.pages.erase(page);
      S().accounting->Uncharge(owner.pool, S().machine.config.granularity, memoryLog);
    }
  } else {
    S().accounting->Uncharge(owner.pool, allocation.reservedBytes, memoryLog);
  }
  owner.allocations.Remove(entry);
  return true;
}
}  // namespace
}  // namespace cudasim

CUresult cuMemFree_v2(CUdeviceptr dptr) {
  Call call(__func__, Call::kCurrent);
  if (CUresult status = call.Status()) return status;
  SimDevice* current = nullptr;
  if (CUresult status = cudasim::CurrentDevice(call, current)) return status;
  if (cudasim::FreeOn(*current, dptr, call.settings().memoryLog)) return CUDA_SUCCESS;
  // Unified addressing: a pointer is freed wherever it lives, whichever context is current, under
  // its own device's lock. The current device's goes first, so that two threads freeing each
  // other's pointers cannot deadlock.
  call.Unlock();
  for (const std::unique_ptr<SimDevice>& owner : S().devices) {
    if (owner.get() == current) continue;
    std::lock_guard<std::mutex> lock(owner->mutex);
    if (cudasim::FreeOn(*owner, dptr, call.settings().memoryLog)) return CUDA_SUCCESS;
  }
  return CUDA_ERROR_INVALID_VALUE;
}

namespace cudasim {
bool MappedThroughRange(CUdeviceptr ptr, uint64_t bytes);  // with the virtual-memory API, below
}  // namespace cudasim

CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N) {
  (void)uc;  // there is no memory behind the simulated pointers
  Call call(__func__, Call::kCurrent);
  if (CUresult status = call.Status()) return status;
  SimDevice* device = nullptr;
  if (CUresult status = cudasim::CurrentDevice(call, device)) return status;
  // The range must lie inside one allocation of the current device, or in pages mapped end to end
  // (the virtual-memory API): catches a caller's bad size.
  bool inside = false;
  if (const cudasim::AllocationTable::Entry* found = device->allocations.Below(dstDevice)) {
    uint64_t offset = dstDevice - found->address;
    inside = offset < found->allocation.requestedBytes && N <= found->allocation.requestedBytes - offset;
  }
  if (!inside && !cudasim::MappedThroughRange(dstDevice, N)) return CUDA_ERROR_INVALID_VALUE;
  // The memset is queued on the device: a failure of that work (CUDASIM_ASYNC_FAIL) is not this
  // call's result but the next synchronization's. The first failure is the one reported.
  if (int failure = cudasim::InjectedAsyncFault(__func__, call.settings().asyncFail); failure != 0 && device->pendingError == CUDA_SUCCESS) {
    device->pendingError = failure;
  }
  return CUDA_SUCCESS;
}

// Blocks of `blockSize` threads that fit on one SM of the current device, by threads alone: the
// simulated kernels use no registers or shared memory (cuFuncGetAttribute says 0), so the limits
// left are 2048 threads and 32 blocks per SM, those of every datacenter GPU since Volta (the CUDA
// C++ Programming Guide's "Technical Specifications per Compute Capability").
CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int* numBlocks, void* function, int blockSize,
                                                     size_t /*dynamicSMemSize*/) {
  Call call(__func__, Call::kCurrent);
  if (CUresult status = call.Status()) return status;
  SimDevice* device = nullptr;
  if (CUresult status = cudasim::CurrentDevice(call, device)) return status;
  if (numBlocks == nullptr || function == nullptr || blockSize <= 0 || blockSize > 1024) return CUDA_ERROR_INVALID_VALUE;
  *numBlocks = std::min(2048 / blockSize, 32);
  return CUDA_SUCCESS;
}

// CUpointer_attribute, for a pointer the simulated GPU handed out: it is device memory of the
// current device (the stub runtime's allocations are not in this driver's table, so any pointer
// is taken as one).
CUresult cuPointerGetAttribute(void* data, int attribute, CUdeviceptr ptr) {
  Call call(__func__, Call::kCurrent);
  if (CUresult status = call.Status()) return status;
  SimDevice* device = nullptr;
  if (CUresult status = cudasim::CurrentDevice(call, device)) return status;
  if (data == nullptr || ptr == 0) return CUDA_ERROR_INVALID_VALUE;
  switch (attribute) {
    case 1: *static_cast<CUcontext*>(data) = call.current(); return CUDA_SUCCESS;              // CONTEXT
    case 2: *static_cast<unsigned*>(data) = 2; return CUDA_SUCCESS;                            // MEMORY_TYPE: DEVICE
    case 3: *static_cast<CUdeviceptr*>(data) = ptr; return CUDA_SUCCESS;                       // DEVICE_POINTER
    case 9: *static_cast<int*>(data) = device->ordinal; return CUDA_SUCCESS;                  // DEVICE_ORDINAL
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

// --- PyTorch's driver API (c10/cuda/driver_api.h): c10 resolves every function of its required list
// through cudaGetDriverEntryPoint when it first needs the driver, and asserts each exists. The
// virtual-memory ones serve expandable segments (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True):
// physical memory is charged to the device like cuMemAlloc's; the stub runtime's peak does not see
// it (touched.h: driver.virtualMemory says the job used them). Sharing memory between processes,
// green contexts and multicast are not simulated: CUDA_ERROR_NOT_SUPPORTED, as a driver without
// them answers.
namespace cudasim {
namespace {
constexpr CUresult kNotSupported = 801;  // CUDA_ERROR_NOT_SUPPORTED
struct PhysicalMemory {
  int ordinal;
  uint64_t bytes;
};
// Reserved ranges (start -> bytes), under S().mutex: a page must be mapped inside one, a range
// freed whole, and cuMemsetD8 reaches memory mapped there. The mappings themselves are not tracked:
// torch's expandable segments map millions of pages on the tests' terabyte devices, and tracking
// each (a hash map of them) made genuineAllocator.test.ts' expandable case 20 % slower
// (56.5 -> 68-71 s, 03:13-03:21). Leaks still show: a page's memory is charged from cuMemCreate to
// cuMemRelease.
std::map<CUdeviceptr, uint64_t>& Reservations() {
  static auto& reservations = *new std::map<CUdeviceptr, uint64_t>;
  return reservations;
}
// Whether [ptr, ptr + bytes) lies in one reserved range.
bool Reserved(CUdeviceptr ptr, uint64_t bytes) {
  auto after = Reservations().upper_bound(ptr);
  if (after == Reservations().begin()) return false;
  auto range = std::prev(after);
  return ptr - range->first <= range->second && bytes <= range->second - (ptr - range->first);
}
}  // namespace
// Called under a device's lock (cuMemsetD8_v2), which comes before the driver's.
bool MappedThroughRange(CUdeviceptr ptr, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(S().mutex);
  return Reserved(ptr, bytes);
}
}  // namespace cudasim

#define CUDASIM_API extern "C" __attribute__((visibility("default")))

CUDASIM_API CUresult cuMemGetAllocationGranularity(size_t* granularity, const CUmemAllocationProp* /*prop*/, int /*option*/) {
  Call call(__func__);
  if (CUresult status = call.Status()) return status;
  if (granularity == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *granularity = S().machine.config.granularity;
  return CUDA_SUCCESS;
}

CUDASIM_API CUresult cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t /*alignment*/, CUdeviceptr /*addr*/,
                                         unsigned long long /*flags*/) {
  Call call(__func__);
  if (CUresult status = call.Status()) return status;
  if (ptr == nullptr || size == 0) return CUDA_ERROR_INVALID_VALUE;
  // Address space only, like every simulated pointer: never touched.
  *ptr = S().nextAddress.fetch_add(cudasim::RoundUp(size, S().machine.config.granularity), std::memory_order_relaxed);
  cudasim::Reservations()[*ptr] = size;
  cudasim::NoteTouched("driver.virtualMemory");
  return CUDA_SUCCESS;
}

// The whole range as reserved.
CUDASIM_API CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  Call call(__func__);
  if (CUresult status = call.Status()) return status;
  auto range = cudasim::Reservations().find(ptr);
  if (ptr == 0 || range == cudasim::Reservations().end() || range->second != size) return CUDA_ERROR_INVALID_VALUE;
  cudasim::Reservations().erase(range);
  return CUDA_SUCCESS;
}

// CUmemAllocationProp: its location (type, id) is at bytes 8..15; the device is the id.
CUDASIM_API CUresult cuMemCreate(unsigned long long* handle, size_t size, const CUmemAllocationProp* prop, unsigned long long /*flags*/) {
  Call call(__func__);
  if (CUresult status = call.Status()) return status;
  if (handle == nullptr || prop == nullptr || size == 0) return CUDA_ERROR_INVALID_VALUE;
  int ordinal = 0;
  std::memcpy(&ordinal, reinterpret_cast<const char*>(prop) + 12, sizeof ordinal);
  SimDevice* device = cudasim::FindDevice(ordinal);
  if (device == nullptr) return CUDA_ERROR_INVALID_DEVICE;
  uint64_t bytes = cudasim::RoundUp(size, S().machine.config.granularity);
  if (!S().accounting->Charge(device->pool, bytes, cudasim::GrantableCapacity(*device), call.settings().memoryLog)) return CUDA_ERROR_OUT_OF_MEMORY;
  *handle = reinterpret_cast<unsigned long long>(new cudasim::PhysicalMemory{ordinal, bytes});
  return CUDA_SUCCESS;
}

CUDASIM_API CUresult cuMemRelease(unsigned long long handle) {
  Call call(__func__);
  if (CUresult status = call.Status()) return status;
  auto* memory = reinterpret_cast<cudasim::PhysicalMemory*>(handle);
  if (memory == nullptr) return CUDA_ERROR_INVALID_VALUE;
  S().accounting->Uncharge(S().devices[memory->ordinal]->pool, memory->bytes, call.settings().memoryLog);
  delete memory;
  return CUDA_SUCCESS;
}

// Inside a reserved range (offset 0: PyTorch's use); the page mapped is not recorded (see Reservations).
CUDASIM_API CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, unsigned long long handle, unsigned long long) {
  if (int fault = cudasim::InjectedFault(__func__)) return fault;
  std::lock_guard<std::mutex> lock(S().mutex);
  if (ptr == 0 || size == 0 || handle == 0 || offset != 0 || !cudasim::Reserved(ptr, size)) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

CUDASIM_API CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  if (int fault = cudasim::InjectedFault(__func__)) return fault;
  std::lock_guard<std::mutex> lock(S().mutex);
  return ptr == 0 || size == 0 || !cudasim::Reserved(ptr, size) ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

CUDASIM_API CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc, size_t count) {
  if (int fault = cudasim::InjectedFault(__func__)) return fault;
  std::lock_guard<std::mutex> lock(S().mutex);
  return ptr == 0 || size == 0 || desc == nullptr || count == 0 || !cudasim::Reserved(ptr, size) ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

// The allocation a pointer lies in is the stub runtime's to know; the simulated driver answers
// with the pointer itself and one byte (what PyTorch asks it for, sharing memory between
// processes, is not simulated).
CUDASIM_API CUresult cuMemGetAddressRange_v2(CUdeviceptr* base, size_t* size, CUdeviceptr ptr) {
  if (ptr == 0) return CUDA_ERROR_INVALID_VALUE;
  if (base != nullptr) *base = ptr;
  if (size != nullptr) *size = 1;
  return CUDA_SUCCESS;
}
CUDASIM_API CUresult cuMemGetAddressRange(CUdeviceptr* base, size_t* size, CUdeviceptr ptr) {
  return cuMemGetAddressRange_v2(base, size, ptr);
}

// Work queued on a stream does nothing on the simulated GPU.
CUDASIM_API CUresult cuMemsetD32Async(CUdeviceptr ptr, unsigned, size_t, void*) {
  return ptr == 0 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}
CUDASIM_API CUresult cuStreamWriteValue32_v2(void*, CUdeviceptr ptr, unsigned, unsigned) {
  return ptr == 0 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}
CUDASIM_API CUresult cuStreamWriteValue32(void* stream, CUdeviceptr ptr, unsigned value, unsigned flags) {
  return cuStreamWriteValue32_v2(stream, ptr, value, flags);
}

// The context stack: one level deep is all a primary-context process uses.
CUDASIM_API CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
  return cuCtxSetCurrent(ctx);
}
CUDASIM_API CUresult cuCtxPushCurrent(CUcontext ctx) {
  return cuCtxSetCurrent(ctx);
}
CUDASIM_API CUresult cuCtxPopCurrent_v2(CUcontext* pctx) {
  CUcontext current = nullptr;
  if (CUresult status = cuCtxGetCurrent(&current)) return status;
  if (pctx != nullptr) *pctx = current;
  return cuCtxSetCurrent(nullptr);
}
CUDASIM_API CUresult cuCtxPopCurrent(CUcontext* pctx) {
  return cuCtxPopCurrent_v2(pctx);
}

// The driver's log callbacks: registered, never called (the simulated driver logs nothing).
CUDASIM_API CUresult cuLogsRegisterCallback(void*, void*, void** handle) {
  static int registration;
  if (handle != nullptr) *handle = &registration;
  return CUDA_SUCCESS;
}
CUDASIM_API CUresult cuLogsUnregisterCallback(void*) {
  return CUDA_SUCCESS;
}

#define CUDASIM_NOT_SUPPORTED(name) \
  CUDASIM_API CUresult name() { return cudasim::kNotSupported; }
CUDASIM_NOT_SUPPORTED(cuMemExportToShareableHandle)
CUDASIM_NOT_SUPPORTED(cuMemImportFromShareableHandle)
CUDASIM_NOT_SUPPORTED(cuMemRetainAllocationHandle)
CUDASIM_NOT_SUPPORTED(cuMemGetAllocationPropertiesFromHandle)
CUDASIM_NOT_SUPPORTED(cuGreenCtxCreate)
CUDASIM_NOT_SUPPORTED(cuGreenCtxDestroy)
CUDASIM_NOT_SUPPORTED(cuGreenCtxStreamCreate)
CUDASIM_NOT_SUPPORTED(cuCtxFromGreenCtx)
CUDASIM_NOT_SUPPORTED(cuDeviceGetDevResource)
CUDASIM_NOT_SUPPORTED(cuDevSmResourceSplitByCount)
CUDASIM_NOT_SUPPORTED(cuDevResourceGenerateDesc)
CUDASIM_NOT_SUPPORTED(cuMulticastCreate)
CUDASIM_NOT_SUPPORTED(cuMulticastAddDevice)
CUDASIM_NOT_SUPPORTED(cuMulticastBindMem)
CUDASIM_NOT_SUPPORTED(cuMulticastUnbind)
#undef CUDASIM_NOT_SUPPORTED

// The two error-text functions work before cuInit, as the real driver's do.
CUresult cuGetErrorName(CUresult error, const char** pStr) {
  cudasim::TraceCall(__func__);
  if (int fault = cudasim::InjectedFault(__func__)) return fault;
  return cudasim::LookUpErrorText(error, pStr, true);
}

CUresult cuGetErrorString(CUresult error, const char** pStr) {
  cudasim::TraceCall(__func__);
  if (int fault = cudasim::InjectedFault(__func__)) return fault;
  return cudasim::LookUpErrorText(error, pStr, false);
}

}  // extern "C"
