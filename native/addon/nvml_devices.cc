// nvmlDevices(): what NVML says about every GPU and MIG instance, without a CUDA context.
//
// A failure that concerns one device (a lost GPU, an unsupported query) is recorded on that
// device's entry, so one bad GPU does not hide the others; only a failed device count rejects.
#include <optional>
#include <string>
#include <vector>

#include "addon_functions.h"
#include "nvml.h"
#include "promise_worker.h"

namespace vramfit {
namespace {

struct MemoryRecord {
  std::string call;
  unsigned long long totalBytes = 0;
  std::optional<unsigned long long> reservedBytes;  // v2 only
  unsigned long long freeBytes = 0;
  unsigned long long usedBytes = 0;
};

struct ProcessRecord {
  unsigned pid = 0;
  unsigned long long usedBytes = 0;  // NVML_VALUE_NOT_AVAILABLE when unknown
  unsigned gpuInstanceId = 0xFFFFFFFFu;
  unsigned computeInstanceId = 0xFFFFFFFFu;
};

struct DeviceRecord {
  int index = -1;        // NVML index of the GPU (of the parent GPU for a MIG instance)
  int migIndex = -1;     // the MIG slot, for an instance
  std::string uuid;      // empty when it could not be read
  std::string parentUuid;
  std::optional<bool> migEnabled;
  std::optional<int> computeMode;  // a GPU's nvmlComputeMode_t; unknown for an instance or when unsupported
  std::optional<MemoryRecord> memory;
  std::optional<std::vector<ProcessRecord>> processes;
  std::vector<NativeError> errors;
};

class NvmlDevicesWorker : public PromiseWorker {
 public:
  explicit NvmlDevicesWorker(Napi::Env env) : PromiseWorker(env, "vramfit:nvmlDevices") {}

 private:
  const NvmlApi& api() const { return Nvml::Get().api(); }

  // Records a failed call on the entry; true when the call succeeded.
  bool Ok(DeviceRecord& record, nvmlReturn_t result, const char* call) {
    if (result == NVML_SUCCESS) return true;
    record.errors.push_back(NvmlError(api(), result, call));
    return false;
  }

  void Run() override {
    const NvmlApi& nvml = Nvml::Get().api();
    unsigned count = 0;
    CheckNvml(nvml, nvml.nvmlDeviceGetCount_v2(&count), "nvmlDeviceGetCount_v2");
    for (unsigned index = 0; index < count; ++index) {
      DeviceRecord gpu;
      gpu.index = static_cast<int>(index);
      nvmlDevice_t handle = nullptr;
      if (!Ok(gpu, nvml.nvmlDeviceGetHandleByIndex_v2(index, &handle), "nvmlDeviceGetHandleByIndex_v2") ||
          !Describe(handle, gpu)) {
        devices_.push_back(gpu);
        continue;
      }
      std::vector<DeviceRecord> instances = MigInstances(handle, gpu);
      devices_.push_back(gpu);
      for (const DeviceRecord& instance : instances) devices_.push_back(instance);  // NativeError: no assignment
    }
  }

  // UUID, memory, processes. False when even the UUID could not be read (nothing can match it).
  bool Describe(nvmlDevice_t handle, DeviceRecord& record) {
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
    if (!Ok(record, api().nvmlDeviceGetUUID(handle, uuid, sizeof uuid), "nvmlDeviceGetUUID")) return false;
    record.uuid = uuid;
    ReadMemory(handle, record);
    ReadProcesses(handle, record);
    if (record.migIndex < 0) ReadComputeMode(handle, record);
    return true;
  }

  // Whether a new context may be created at all (exclusive-process, prohibited), known before
  // trying. NOT_SUPPORTED (an integrated GPU) is no error: the mode stays unknown.
  void ReadComputeMode(nvmlDevice_t handle, DeviceRecord& record) {
    const NvmlApi& nvml = api();
    if (nvml.nvmlDeviceGetComputeMode == nullptr) return;
    nvmlComputeMode_t mode = NVML_COMPUTEMODE_DEFAULT;
    nvmlReturn_t result = nvml.nvmlDeviceGetComputeMode(handle, &mode);
    if (result == NVML_ERROR_NOT_SUPPORTED) return;
    if (Ok(record, result, "nvmlDeviceGetComputeMode")) record.computeMode = mode;
  }

  static Napi::Value ComputeMode(Napi::Env env, const std::optional<int>& mode) {
    if (!mode) return env.Null();
    switch (*mode) {
      case NVML_COMPUTEMODE_DEFAULT: return Napi::String::New(env, "default");
      case 1: return Napi::String::New(env, "exclusive-thread");  // removed from NVML; never expected
      case NVML_COMPUTEMODE_PROHIBITED: return Napi::String::New(env, "prohibited");
      case NVML_COMPUTEMODE_EXCLUSIVE_PROCESS: return Napi::String::New(env, "exclusive-process");
      default: return env.Null();
    }
  }

  // nvmlDeviceGetMemoryInfo_v2 with the versioned struct; the v1 call when the library lacks v2
  // or refuses its version (ARGUMENT_VERSION_MISMATCH, FUNCTION_NOT_FOUND). NOT_SUPPORTED (an
  // integrated GPU) is the answer itself: v1 would say the same.
  void ReadMemory(nvmlDevice_t handle, DeviceRecord& record) {
    const NvmlApi& nvml = api();
    if (nvml.nvmlDeviceGetMemoryInfo_v2 != nullptr) {
      nvmlMemory_v2_t memory = {};
      memory.version = nvmlMemory_v2;
      nvmlReturn_t result = nvml.nvmlDeviceGetMemoryInfo_v2(handle, &memory);
      if (result == NVML_SUCCESS) {
        record.memory = MemoryRecord{"nvmlDeviceGetMemoryInfo_v2", memory.total, memory.reserved, memory.free,
                                     memory.used};
        return;
      }
      if (result != NVML_ERROR_ARGUMENT_VERSION_MISMATCH && result != NVML_ERROR_FUNCTION_NOT_FOUND) {
        Ok(record, result, "nvmlDeviceGetMemoryInfo_v2");
        return;
      }
    }
    nvmlMemory_t memory = {};
    if (Ok(record, nvml.nvmlDeviceGetMemoryInfo(handle, &memory), "nvmlDeviceGetMemoryInfo")) {
      record.memory = MemoryRecord{"nvmlDeviceGetMemoryInfo", memory.total, std::nullopt, memory.free, memory.used};
    }
  }

  // The processes with a compute context on the device: the newest entry point the library has.
  // The list can grow between the size query and the fetch, so it asks again (a few times).
  void ReadProcesses(nvmlDevice_t handle, DeviceRecord& record) {
    const NvmlApi& nvml = api();
    bool v1 = nvml.nvmlDeviceGetComputeRunningProcesses_v3 == nullptr &&
              nvml.nvmlDeviceGetComputeRunningProcesses_v2 == nullptr;
    if (v1 && nvml.nvmlDeviceGetComputeRunningProcesses == nullptr) return;  // unknown: processes stays null
    const char* call = nvml.nvmlDeviceGetComputeRunningProcesses_v3   ? "nvmlDeviceGetComputeRunningProcesses_v3"
                       : nvml.nvmlDeviceGetComputeRunningProcesses_v2 ? "nvmlDeviceGetComputeRunningProcesses_v2"
                                                                      : "nvmlDeviceGetComputeRunningProcesses";
    auto query = [&](unsigned* count, nvmlProcessInfo_v2_t* v2, nvmlProcessInfo_v1_t* v1Infos) {
      if (nvml.nvmlDeviceGetComputeRunningProcesses_v3) return nvml.nvmlDeviceGetComputeRunningProcesses_v3(handle, count, v2);
      if (nvml.nvmlDeviceGetComputeRunningProcesses_v2) return nvml.nvmlDeviceGetComputeRunningProcesses_v2(handle, count, v2);
      return nvml.nvmlDeviceGetComputeRunningProcesses(handle, count, v1Infos);
    };
    unsigned count = 0;
    nvmlReturn_t result = query(&count, nullptr, nullptr);
    for (int attempt = 0; result == NVML_ERROR_INSUFFICIENT_SIZE && attempt < 4; ++attempt) {
      unsigned capacity = count + 8;
      std::vector<nvmlProcessInfo_v2_t> v2Infos(v1 ? 0 : capacity);
      std::vector<nvmlProcessInfo_v1_t> v1Infos(v1 ? capacity : 0);
      count = capacity;
      result = query(&count, v2Infos.data(), v1Infos.data());
      if (result != NVML_SUCCESS) continue;
      std::vector<ProcessRecord> list;
      for (unsigned i = 0; i < count && i < capacity; ++i) {
        ProcessRecord process;
        if (v1) {
          process.pid = v1Infos[i].pid;
          process.usedBytes = v1Infos[i].usedGpuMemory;
        } else {
          process.pid = v2Infos[i].pid;
          process.usedBytes = v2Infos[i].usedGpuMemory;
          process.gpuInstanceId = v2Infos[i].gpuInstanceId;
          process.computeInstanceId = v2Infos[i].computeInstanceId;
        }
        list.push_back(process);
      }
      record.processes = list;
      return;
    }
    if (Ok(record, result, call)) record.processes = std::vector<ProcessRecord>{};  // none
  }

  // With MIG enabled, each instance is its own device, reached through the GPU; slots without an
  // instance answer NOT_FOUND and are skipped. A library without the MIG functions predates MIG.
  std::vector<DeviceRecord> MigInstances(nvmlDevice_t handle, DeviceRecord& gpu) {
    const NvmlApi& nvml = api();
    std::vector<DeviceRecord> instances;
    if (!nvml.nvmlDeviceGetMigMode || !nvml.nvmlDeviceGetMaxMigDeviceCount || !nvml.nvmlDeviceGetMigDeviceHandleByIndex) {
      gpu.migEnabled = false;
      return instances;
    }
    unsigned current = 0, pending = 0;
    nvmlReturn_t result = nvml.nvmlDeviceGetMigMode(handle, &current, &pending);
    if (result == NVML_ERROR_NOT_SUPPORTED) {
      gpu.migEnabled = false;  // not a MIG-capable GPU
      return instances;
    }
    if (!Ok(gpu, result, "nvmlDeviceGetMigMode")) return instances;  // migEnabled stays unknown
    gpu.migEnabled = current == NVML_DEVICE_MIG_ENABLE;
    if (!*gpu.migEnabled) return instances;
    unsigned slots = 0;
    if (!Ok(gpu, nvml.nvmlDeviceGetMaxMigDeviceCount(handle, &slots), "nvmlDeviceGetMaxMigDeviceCount")) {
      gpu.migEnabled.reset();
      return instances;
    }
    for (unsigned slot = 0; slot < slots; ++slot) {
      DeviceRecord instance;
      instance.index = gpu.index;
      instance.migIndex = static_cast<int>(slot);
      instance.parentUuid = gpu.uuid;
      nvmlDevice_t migHandle = nullptr;
      nvmlReturn_t found = nvml.nvmlDeviceGetMigDeviceHandleByIndex(handle, slot, &migHandle);
      if (found == NVML_ERROR_NOT_FOUND) continue;
      if (Ok(instance, found, "nvmlDeviceGetMigDeviceHandleByIndex")) Describe(migHandle, instance);
      instances.push_back(instance);
    }
    return instances;
  }

  static Napi::Value Bytes(Napi::Env env, unsigned long long bytes) {
    if (bytes == NVML_VALUE_NOT_AVAILABLE) return env.Null();
    return Napi::Number::New(env, static_cast<double>(bytes));
  }

  static Napi::Value InstanceId(Napi::Env env, unsigned id) {
    return id == 0xFFFFFFFFu ? env.Null() : Napi::Number::New(env, id);
  }

  Napi::Value Result(Napi::Env env) override {
    Napi::Array list = Napi::Array::New(env, devices_.size());
    for (uint32_t i = 0; i < devices_.size(); ++i) {
      const DeviceRecord& record = devices_[i];
      Napi::Object device = Napi::Object::New(env);
      device.Set("index", record.index);
      device.Set("migIndex", record.migIndex < 0 ? env.Null() : Napi::Number::New(env, record.migIndex));
      device.Set("uuid", record.uuid.empty() ? env.Null() : Napi::String::New(env, record.uuid));
      device.Set("parentUuid", record.parentUuid.empty() ? env.Null() : Napi::String::New(env, record.parentUuid));
      device.Set("migEnabled", record.migEnabled ? Napi::Boolean::New(env, *record.migEnabled) : env.Null());
      device.Set("computeMode", ComputeMode(env, record.computeMode));
      if (record.memory) {
        Napi::Object memory = Napi::Object::New(env);
        memory.Set("call", record.memory->call);
        memory.Set("totalBytes", Bytes(env, record.memory->totalBytes));
        memory.Set("reservedBytes", record.memory->reservedBytes ? Bytes(env, *record.memory->reservedBytes) : env.Null());
        memory.Set("freeBytes", Bytes(env, record.memory->freeBytes));
        memory.Set("usedBytes", Bytes(env, record.memory->usedBytes));
        device.Set("memory", memory);
      } else {
        device.Set("memory", env.Null());
      }
      if (record.processes) {
        Napi::Array processes = Napi::Array::New(env, record.processes->size());
        for (uint32_t j = 0; j < record.processes->size(); ++j) {
          const ProcessRecord& process = (*record.processes)[j];
          Napi::Object entry = Napi::Object::New(env);
          entry.Set("pid", process.pid);
          entry.Set("usedBytes", Bytes(env, process.usedBytes));
          entry.Set("gpuInstanceId", InstanceId(env, process.gpuInstanceId));
          entry.Set("computeInstanceId", InstanceId(env, process.computeInstanceId));
          processes.Set(j, entry);
        }
        device.Set("processes", processes);
      } else {
        device.Set("processes", env.Null());
      }
      Napi::Array errors = Napi::Array::New(env, record.errors.size());
      for (uint32_t j = 0; j < record.errors.size(); ++j) errors.Set(j, ToJsError(env, record.errors[j]));
      device.Set("errors", errors);
      list.Set(i, device);
    }
    return list;
  }

  std::vector<DeviceRecord> devices_;
};

}  // namespace

Napi::Value NvmlDevices(const Napi::CallbackInfo& info) {
  return StartWorker(info.Env(), [&] {
    Nvml::Get();  // rejects ERR_NVML_NOT_LOADED here, on the JS thread
    return new NvmlDevicesWorker(info.Env());
  });
}

}  // namespace vramfit
