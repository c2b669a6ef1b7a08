// devices(): what the driver says about each device. Creates no context.
#include <cstdio>
#include <string>
#include <vector>

#include "addon_functions.h"
#include "driver.h"
#include "native_error.h"
#include "promise_worker.h"

namespace vramfit {
namespace {

struct DeviceRecord {
  int ordinal = 0;
  std::string name;
  std::string uuid;
  std::string pciBusId;
  size_t totalBytes = 0;
  int ccMajor = 0;
  int ccMinor = 0;
  int multiprocessorCount = 0;
  bool integrated = false;
  int computeMode = CU_COMPUTEMODE_DEFAULT;
};

// CUcomputemode as NativeComputeMode in src/native/addonTypes.ts; nullptr for a value cuda.h lacks.
const char* ComputeModeName(int mode) {
  switch (mode) {
    case CU_COMPUTEMODE_DEFAULT: return "default";
    case 1: return "exclusive-thread";  // CU_COMPUTEMODE_EXCLUSIVE, removed in CUDA 8
    case CU_COMPUTEMODE_PROHIBITED: return "prohibited";
    case CU_COMPUTEMODE_EXCLUSIVE_PROCESS: return "exclusive-process";
    default: return nullptr;
  }
}

// nvidia-smi's form: GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx, lower-case hex; MIG- for a MIG
// instance, which is how nvidia-smi -L and CUDA_VISIBLE_DEVICES name it.
std::string FormatUuid(const CUuuid& uuid, bool mig) {
  std::string text = mig ? "MIG-" : "GPU-";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) text += '-';
    char hex[3];
    std::snprintf(hex, sizeof hex, "%02x", static_cast<unsigned char>(uuid.bytes[i]));
    text += hex;
  }
  return text;
}

class ListDevicesWorker : public PromiseWorker {
 public:
  explicit ListDevicesWorker(Napi::Env env) : PromiseWorker(env, "vramfit:devices") {}

 private:
  void Run() override {
    Driver& driver = Driver::Get();
    const DriverApi& api = driver.api();
    if (driver.deviceCount() == 0) {
      throw NativeError("ERR_NO_DEVICE", "no CUDA device: the driver at " + driver.path() + " sees none");
    }
    const char* uuidCall = driver.uuidV2() ? "cuDeviceGetUuid_v2" : "cuDeviceGetUuid";
    for (int ordinal = 0; ordinal < driver.deviceCount(); ++ordinal) {
      DeviceRecord record;
      record.ordinal = ordinal;
      CUdevice device = driver.Device(ordinal);
      char name[256] = {};
      CheckCuda(api, api.cuDeviceGetName(name, sizeof name, device), "cuDeviceGetName");
      record.name = name;
      CUuuid uuid = {};
      CheckCuda(api, api.deviceGetUuid(&uuid, device), uuidCall);
      // The driver names a MIG instance "<GPU> MIG <profile>" (e.g. "NVIDIA A100-SXM4-40GB MIG 3g.20gb"),
      // and cuDeviceGetUuid_v2 gives the instance's own UUID; the older call gives the GPU's.
      bool mig = driver.uuidV2() && std::string(name).find(" MIG ") != std::string::npos;
      record.uuid = FormatUuid(uuid, mig);
      char pciBusId[64] = {};
      CheckCuda(api, api.cuDeviceGetPCIBusId(pciBusId, sizeof pciBusId, device), "cuDeviceGetPCIBusId");
      record.pciBusId = pciBusId;
      CheckCuda(api, api.cuDeviceTotalMem_v2(&record.totalBytes, device), "cuDeviceTotalMem_v2");
      int integrated = 0;
      const struct {
        CUdevice_attribute attribute;
        int* value;
      } attributes[] = {
          {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &record.ccMajor},
          {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &record.ccMinor},
          {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &record.multiprocessorCount},
          {CU_DEVICE_ATTRIBUTE_INTEGRATED, &integrated},
          {CU_DEVICE_ATTRIBUTE_COMPUTE_MODE, &record.computeMode},
      };
      for (const auto& entry : attributes) {
        CheckCuda(api, api.cuDeviceGetAttribute(entry.value, entry.attribute, device), "cuDeviceGetAttribute");
      }
      record.integrated = integrated != 0;
      devices_.push_back(record);
    }
  }

  Napi::Value Result(Napi::Env env) override {
    Napi::Array list = Napi::Array::New(env, devices_.size());
    for (uint32_t i = 0; i < devices_.size(); ++i) {
      const DeviceRecord& record = devices_[i];
      Napi::Object device = Napi::Object::New(env);
      device.Set("ordinal", record.ordinal);
      device.Set("name", record.name);
      device.Set("uuid", record.uuid);
      device.Set("pciBusId", record.pciBusId);
      device.Set("totalBytes", static_cast<double>(record.totalBytes));
      Napi::Object capability = Napi::Object::New(env);
      capability.Set("major", record.ccMajor);
      capability.Set("minor", record.ccMinor);
      device.Set("computeCapability", capability);
      device.Set("multiprocessorCount", record.multiprocessorCount);
      device.Set("integrated", record.integrated);
      const char* mode = ComputeModeName(record.computeMode);
      device.Set("computeMode", mode ? Napi::Value(Napi::String::New(env, mode)) : env.Null());
      list.Set(i, device);
    }
    return list;
  }

  std::vector<DeviceRecord> devices_;
};

}  // namespace

Napi::Value ListDevices(const Napi::CallbackInfo& info) {
  return StartWorker(info.Env(), [&] { return new ListDevicesWorker(info.Env()); });
}

}  // namespace vramfit
