// The simulated NVML: the C entry points of libnvidia-ml.so.1 that vramfit uses, answering from the
// same simulated machine and ledger as the simulated driver (libsimgpu.so), without any context.
//
// NVML's view differs from CUDA's the way the real ones do: it lists every GPU, ignores
// CUDA_VISIBLE_DEVICES, orders GPUs by PCI bus id, and reaches MIG instances through their parent.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "../nvml/nvml_api.h"
#include "accounting.h"
#include "call_hooks.h"
#include "fault_injection.h"
#include "machine.h"

#define NVMLSIM_DECLARE(name, params) extern "C" __attribute__((visibility("default"))) nvmlReturn_t name params;
NVML_FUNCTIONS(NVMLSIM_DECLARE)
#undef NVMLSIM_DECLARE
extern "C" __attribute__((visibility("default"))) const char* nvmlErrorString(nvmlReturn_t result);

// The opaque handle: a whole GPU, or one MIG instance of it.
struct nvmlDevice_st {
  int gpu;
  int pool;
  int mig;  // -1 for a whole GPU
};

namespace nvmlsim {
namespace {

using cudasim::Machine;

constexpr unsigned kMaxMigDevices = 7;
constexpr unsigned kNoInstance = 0xFFFFFFFFu;
const char kDriverVersion[] = "550.54.15";

struct State {
  std::mutex mutex;
  int initRefs = 0;
  Machine machine;
  cudasim::Accounting* accounting = nullptr;
  std::vector<nvmlDevice_st*> byIndex;  // GPUs in PCI bus order
  std::deque<nvmlDevice_st> handles;    // a deque, so handles stay valid
};

State& S() {
  static State& state = *new State;  // never destroyed, like the driver's
  return state;
}

struct ErrorText {
  int code;
  const char* text;
};

// nvmlErrorString's texts.
const ErrorText kErrors[] = {
    {0, "Success"},
    {1, "Uninitialized"},
    {2, "Invalid Argument"},
    {3, "Not Supported"},
    {4, "Insufficient Permissions"},
    {5, "Already Initialized"},
    {6, "Not Found"},
    {7, "Insufficient Size"},
    {8, "Insufficient External Power"},
    {9, "Driver Not Loaded"},
    {10, "Timeout"},
    {11, "Interrupt Request Issue"},
    {12, "NVML Shared Library Not Found"},
    {13, "Function Not Found"},
    {14, "Corrupted infoROM"},
    {15, "GPU is lost"},
    {16, "GPU requires restart"},
    {17, "The operating system has blocked the request."},
    {18, "RM has detected an NVML/RM version mismatch."},
    {19, "In use by another client"},
    {20, "Insufficient Memory"},
    {21, "No data"},
    {25, "Version mismatch"},
    {999, "Unknown Error"},
};

// Prologue: injected fault, trace, lock, initialization check, and for calls on a device, that
// the handle is one of ours and its GPU has not been lost (CUDASIM_LOST).
class Call {
 public:
  explicit Call(const char* function) : fault_(cudasim::InjectedFault(function)), lock_(S().mutex) {
    cudasim::TraceCall(function);
  }
  nvmlReturn_t Status() const {
    if (fault_ != 0) return fault_;
    return S().initRefs > 0 ? NVML_SUCCESS : NVML_ERROR_UNINITIALIZED;
  }
  nvmlReturn_t Status(nvmlDevice_t device) const {
    if (nvmlReturn_t status = Status()) return status;
    bool known = false;
    for (const nvmlDevice_st& handle : S().handles) known = known || &handle == device;
    if (!known) return NVML_ERROR_INVALID_ARGUMENT;
    return cudasim::GpuLost(device->gpu) ? NVML_ERROR_GPU_IS_LOST : NVML_SUCCESS;
  }

 private:
  int fault_;
  std::unique_lock<std::mutex> lock_;
};

const cudasim::DeviceSpec& Spec(nvmlDevice_t device) {
  return S().machine.config.devices[device->gpu];
}

// The v1 numbers: total (without reserved) and used.
void Usage(nvmlDevice_t device, unsigned long long& total, unsigned long long& used) {
  const cudasim::Pool& pool = S().machine.pools[device->pool];
  total = pool.totalBytes;
  used = pool.baseUsedBytes + S().accounting->Charged(device->pool);
  if (device->mig < 0) {
    for (int instance : S().machine.migPools[device->gpu]) used += S().accounting->Charged(instance);
  }
  used = std::min(used, total);
}

struct Process {
  unsigned pid;
  unsigned long long bytes;
  unsigned gpuInstance;
};

std::vector<Process> Processes(nvmlDevice_t device) {
  std::vector<Process> list;
  if (device->mig < 0) {
    for (const cudasim::OtherProcess& other : Spec(device).processes) {
      list.push_back({other.pid, other.bytesKnown ? other.bytes : NVML_VALUE_NOT_AVAILABLE, kNoInstance});
    }
    for (const cudasim::Holder& holder : S().accounting->Holders(device->pool)) {
      list.push_back({static_cast<unsigned>(holder.pid), holder.bytes, kNoInstance});
    }
  }
  const std::vector<int>& instances = S().machine.migPools[device->gpu];
  for (size_t k = 0; k < instances.size(); ++k) {
    if (device->mig >= 0 && device->mig != static_cast<int>(k)) continue;
    for (const cudasim::Holder& holder : S().accounting->Holders(instances[k])) {
      list.push_back({static_cast<unsigned>(holder.pid), holder.bytes, static_cast<unsigned>(k + 1)});
    }
  }
  return list;
}

/**
 * CUDASIM_NVML_SEEN_DIR: writes each listed process's bytes to DIR/<pid>, so that a test's job
 * (test/job/sim-job.c) can hold its memory until a sampler has seen it, whatever the machine's load.
 */
void MarkSeen(const std::vector<Process>& list) {
  const char* dir = std::getenv("CUDASIM_NVML_SEEN_DIR");
  if (dir == nullptr || *dir == '\0') return;
  for (const Process& process : list) {
    std::string path = std::string(dir) + "/" + std::to_string(process.pid);
    std::string temporary = path + ".tmp";
    if (FILE* file = std::fopen(temporary.c_str(), "w")) {
      std::fprintf(file, "%llu\n", static_cast<unsigned long long>(process.bytes));
      std::fclose(file);
      std::rename(temporary.c_str(), path.c_str());
    }
  }
}

template <typename Info>
nvmlReturn_t ListProcesses(const Call& call, nvmlDevice_t device, unsigned int* infoCount, Info* infos,
                           void (*fill)(const Process&, Info&)) {
  if (nvmlReturn_t status = call.Status(device)) return status;
  if (infoCount == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (Spec(device).integrated) return NVML_ERROR_NOT_SUPPORTED;
  // CUDASIM_NVML_HIDE_PROCESSES: an empty list, as NVML gives inside many containers (read on every call).
  const char* hide = std::getenv("CUDASIM_NVML_HIDE_PROCESSES");
  std::vector<Process> all = Processes(device);
  MarkSeen(all);
  std::vector<Process> list = hide != nullptr && *hide != '\0' && std::strcmp(hide, "0") != 0 ? std::vector<Process>{} : all;
  unsigned capacity = *infoCount;
  *infoCount = static_cast<unsigned>(list.size());
  if (list.empty()) return NVML_SUCCESS;
  if (infos == nullptr || capacity < list.size()) return NVML_ERROR_INSUFFICIENT_SIZE;
  for (size_t i = 0; i < list.size(); ++i) fill(list[i], infos[i]);
  return NVML_SUCCESS;
}

void FillV2(const Process& process, nvmlProcessInfo_v2_t& info) {
  info.pid = process.pid;
  info.usedGpuMemory = process.bytes;
  info.gpuInstanceId = process.gpuInstance;
  info.computeInstanceId = process.gpuInstance == kNoInstance ? kNoInstance : 0;
}

void FillV1(const Process& process, nvmlProcessInfo_v1_t& info) {
  info.pid = process.pid;
  info.usedGpuMemory = process.bytes;
}

}  // namespace
}  // namespace nvmlsim

using nvmlsim::Call;
using nvmlsim::S;

extern "C" {

nvmlReturn_t nvmlInit_v2(void) {
  Call call(__func__);
  if (nvmlReturn_t fault = call.Status(); fault != NVML_SUCCESS && fault != NVML_ERROR_UNINITIALIZED) return fault;
  if (S().initRefs > 0) {
    ++S().initRefs;
    return NVML_SUCCESS;
  }
  std::string error;
  std::optional<cudasim::Machine> machine = cudasim::BuildMachine(error);
  cudasim::Accounting* accounting = machine ? cudasim::Accounting::Open(*machine, error) : nullptr;
  if (accounting == nullptr) {
    std::fprintf(stderr, "nvmlsim: %s\n", error.c_str());
    return NVML_ERROR_UNKNOWN;
  }
  S().machine = *machine;
  S().accounting = accounting;
  S().handles.clear();
  S().byIndex.clear();
  std::vector<int> order;
  for (size_t gpu = 0; gpu < machine->config.devices.size(); ++gpu) order.push_back(static_cast<int>(gpu));
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return machine->config.devices[a].pciBus < machine->config.devices[b].pciBus;
  });
  for (int gpu : order) {
    S().handles.push_back(nvmlDevice_st{gpu, S().machine.gpuPool[gpu], -1});
    S().byIndex.push_back(&S().handles.back());
    const std::vector<int>& instances = S().machine.migPools[gpu];
    for (size_t k = 0; k < instances.size(); ++k) {
      S().handles.push_back(nvmlDevice_st{gpu, instances[k], static_cast<int>(k)});
    }
  }
  S().initRefs = 1;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlShutdown(void) {
  Call call(__func__);
  if (nvmlReturn_t status = call.Status()) return status;
  --S().initRefs;
  return NVML_SUCCESS;
}

const char* nvmlErrorString(nvmlReturn_t result) {
  cudasim::TraceCall(__func__);
  for (const nvmlsim::ErrorText& entry : nvmlsim::kErrors) {
    if (entry.code == result) return entry.text;
  }
  return "Unknown Error";
}

nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  Call call(__func__);
  if (nvmlReturn_t status = call.Status()) return status;
  if (version == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (length < sizeof nvmlsim::kDriverVersion) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(version, nvmlsim::kDriverVersion, sizeof nvmlsim::kDriverVersion);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* deviceCount) {
  Call call(__func__);
  if (nvmlReturn_t status = call.Status()) return status;
  if (deviceCount == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *deviceCount = static_cast<unsigned>(S().byIndex.size());
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  Call call(__func__);
  if (nvmlReturn_t status = call.Status()) return status;
  if (device == nullptr || index >= S().byIndex.size()) return NVML_ERROR_INVALID_ARGUMENT;
  if (cudasim::GpuLost(S().byIndex[index]->gpu)) return NVML_ERROR_GPU_IS_LOST;
  *device = S().byIndex[index];
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  Call call(__func__);
  if (nvmlReturn_t status = call.Status(device)) return status;
  if (uuid == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  std::string text = cudasim::FormatUuid(S().machine.pools[device->pool].uuid, device->mig < 0 ? "GPU" : "MIG");
  if (length < text.size() + 1) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(uuid, text.c_str(), text.size() + 1);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  Call call(__func__);
  if (nvmlReturn_t status = call.Status(device)) return status;
  if (memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  // As on Jetson and other integrated GPUs: device memory is system memory, and NVML cannot say.
  if (nvmlsim::Spec(device).integrated) return NVML_ERROR_NOT_SUPPORTED;
  nvmlsim::Usage(device, memory->total, memory->used);
  memory->free = memory->total - memory->used;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t* memory) {
  Call call(__func__);
  if (nvmlReturn_t status = call.Status(device)) return status;
  if (memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (memory->version != nvmlMemory_v2) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  if (nvmlsim::Spec(device).integrated) return NVML_ERROR_NOT_SUPPORTED;
  unsigned long long total = 0, used = 0;
  nvmlsim::Usage(device, total, used);
  memory->reserved = device->mig < 0 ? nvmlsim::Spec(device).reservedBytes : 0;
  memory->total = total + memory->reserved;
  memory->free = total - used;
  memory->used = used + memory->reserved;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int* infoCount,
                                                      nvmlProcessInfo_v2_t* infos) {
  return nvmlsim::ListProcesses(Call(__func__), device, infoCount, infos, nvmlsim::FillV2);
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int* infoCount,
                                                      nvmlProcessInfo_v2_t* infos) {
  return nvmlsim::ListProcesses(Call(__func__), device, infoCount, infos, nvmlsim::FillV2);
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device, unsigned int* infoCount,
                                                   nvmlProcessInfo_v1_t* infos) {
  return nvmlsim::ListProcesses(Call(__func__), device, infoCount, infos, nvmlsim::FillV1);
}

nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t device, nvmlComputeMode_t* mode) {
  Call call(__func__);
  if (nvmlReturn_t status = call.Status(device)) return status;
  if (mode == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (device->mig >= 0 || nvmlsim::Spec(device).integrated) return NVML_ERROR_NOT_SUPPORTED;
  *mode = nvmlsim::Spec(device).computeMode;  // the driver's and NVML's values are the same
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int* currentMode, unsigned int* pendingMode) {
  Call call(__func__);
  if (nvmlReturn_t status = call.Status(device)) return status;
  if (currentMode == nullptr || pendingMode == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (device->mig >= 0 || nvmlsim::Spec(device).integrated) return NVML_ERROR_NOT_SUPPORTED;
  bool enabled = !S().machine.migPools[device->gpu].empty();
  *currentMode = *pendingMode = enabled ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int* count) {
  Call call(__func__);
  if (nvmlReturn_t status = call.Status(device)) return status;
  if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  // Like the real one: the most there could be (0 with MIG off), not how many exist.
  *count = S().machine.migPools[device->gpu].empty() || device->mig >= 0 ? 0 : nvmlsim::kMaxMigDevices;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index, nvmlDevice_t* migDevice) {
  Call call(__func__);
  if (nvmlReturn_t status = call.Status(device)) return status;
  if (migDevice == nullptr || device->mig >= 0 || index >= nvmlsim::kMaxMigDevices) return NVML_ERROR_INVALID_ARGUMENT;
  const std::vector<int>& instances = S().machine.migPools[device->gpu];
  if (instances.empty()) return NVML_ERROR_INVALID_ARGUMENT;
  if (index >= instances.size()) return NVML_ERROR_NOT_FOUND;  // a slot with no instance in it
  for (nvmlDevice_st& handle : S().handles) {
    if (handle.pool == instances[index]) {
      *migDevice = &handle;
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_UNKNOWN;
}

// --- What PyTorch's driver API asks NVML for (c10/cuda/driver_api.h of torch 2.14.1: C10_NVML_DRIVER_API,
// resolved with dlsym and asserted present when libnvidia-ml.so.1 loads, and the optional
// nvmlDeviceGetGpuFabricInfoV). Expandable segments (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True)
// reach them on their first map: c10/cuda/PeerToPeerAccess.cpp's get_fabric_access finds the device by
// its PCI bus id (the runtime's cudaDeviceProp pciDomainID:pciBusID:pciDeviceID) and asks for its fabric.
// The simulated GPUs have no NVLink and no fabric: they answer as a PCIe GPU does. Declared here, not in
// nvml_api.h: the addon never calls them.
#define NVMLSIM_EXPORT __attribute__((visibility("default")))

// "%08X:%02X:%02X.0" (NVML_DEVICE_PCI_BUS_ID_FMT) or the short "%04X:%02X:%02X.0": domain 0, device 0.
NVMLSIM_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char* pciBusId, nvmlDevice_t* device) {
  Call call(__func__);
  if (nvmlReturn_t status = call.Status()) return status;
  unsigned domain = 0, bus = 0, slot = 0, function = 0;
  if (pciBusId == nullptr || device == nullptr || std::sscanf(pciBusId, "%x:%x:%x.%x", &domain, &bus, &slot, &function) != 4) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  for (nvmlDevice_st* gpu : S().byIndex) {
    if (domain == 0 && slot == 0 && function == 0 && static_cast<unsigned>(nvmlsim::Spec(gpu).pciBus) == bus) {
      if (cudasim::GpuLost(gpu->gpu)) return NVML_ERROR_GPU_IS_LOST;
      *device = gpu;
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_NOT_FOUND;
}

// The CUDA version the driver supports, as cuDriverGetVersion gives it (CUDASIM_DRIVER_VERSION).
NVMLSIM_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* cudaDriverVersion) {
  Call call(__func__);
  if (nvmlReturn_t status = call.Status()) return status;
  if (cudaDriverVersion == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *cudaDriverVersion = cudasim::ReadDriverVersion();
  return NVML_SUCCESS;
}

// No NVLink on a simulated GPU: what NVML answers for a GPU without it.
NVMLSIM_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(nvmlDevice_t device, unsigned int /*link*/, int* type) {
  Call call(__func__);
  if (nvmlReturn_t status = call.Status(device)) return status;
  return type == nullptr ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_NOT_SUPPORTED;
}
NVMLSIM_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device, unsigned int /*link*/, void* pci) {
  Call call(__func__);
  if (nvmlReturn_t status = call.Status(device)) return status;
  return pci == nullptr ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_NOT_SUPPORTED;
}

// nvmlGpuFabricInfoV_t (nvml.h, R550+): version at 0, clusterUuid[16] at 4, status at 20, cliqueId at 24,
// state (one byte) at 28, healthMask at 32 (v2: 36 bytes in all). A GPU outside any NVLink fabric:
// success, state NVML_GPU_FABRIC_STATE_NOT_SUPPORTED (0), so PyTorch exchanges file descriptors, not
// fabric handles.
NVMLSIM_EXPORT nvmlReturn_t nvmlDeviceGetGpuFabricInfoV(nvmlDevice_t device, void* info) {
  Call call(__func__);
  if (nvmlReturn_t status = call.Status(device)) return status;
  if (info == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  unsigned version = 0;
  std::memcpy(&version, info, sizeof version);
  if ((version & 0xFFFFFFu) < 36) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  unsigned char* bytes = static_cast<unsigned char*>(info);
  std::memset(bytes + 4, 0, 32);  // no cluster, status success, clique 0, state not supported, healthy
  return NVML_SUCCESS;
}

}  // extern "C"
