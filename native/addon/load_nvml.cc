// loadNvml(path): dlopen, bind, nvmlInit_v2, and which optional functions this NVML has.
#include <string>

#include "addon_functions.h"
#include "arguments.h"
#include "nvml.h"
#include "promise_worker.h"

namespace vramfit {
namespace {

class LoadNvmlWorker : public PromiseWorker {
 public:
  LoadNvmlWorker(Napi::Env env, std::string path) : PromiseWorker(env, "vramfit:loadNvml"), path_(std::move(path)) {}

 private:
  void Run() override {
    Nvml& nvml = Nvml::Load(path_);
    const NvmlApi& api = nvml.api();
    driverVersion_ = nvml.driverVersion();
    memoryInfoV2_ = api.nvmlDeviceGetMemoryInfo_v2 != nullptr;
    processQuery_ = api.nvmlDeviceGetComputeRunningProcesses_v3   ? "nvmlDeviceGetComputeRunningProcesses_v3"
                    : api.nvmlDeviceGetComputeRunningProcesses_v2 ? "nvmlDeviceGetComputeRunningProcesses_v2"
                    : api.nvmlDeviceGetComputeRunningProcesses    ? "nvmlDeviceGetComputeRunningProcesses"
                                                                  : "";
    mig_ = api.nvmlDeviceGetMigMode && api.nvmlDeviceGetMaxMigDeviceCount && api.nvmlDeviceGetMigDeviceHandleByIndex;
  }

  Napi::Value Result(Napi::Env env) override {
    Napi::Object info = Napi::Object::New(env);
    info.Set("libraryPath", path_);
    info.Set("driverVersion", driverVersion_.empty() ? env.Null() : Napi::String::New(env, driverVersion_));
    info.Set("memoryInfoV2", memoryInfoV2_);
    info.Set("processQuery", processQuery_.empty() ? env.Null() : Napi::String::New(env, processQuery_));
    info.Set("mig", mig_);
    return info;
  }

  std::string path_;
  std::string driverVersion_;
  bool memoryInfoV2_ = false;
  std::string processQuery_;
  bool mig_ = false;
};

}  // namespace

Napi::Value LoadNvml(const Napi::CallbackInfo& info) {
  return StartWorker(info.Env(), [&] { return new LoadNvmlWorker(info.Env(), LibraryPathArgument(info[0], "NVML")); });
}

}  // namespace vramfit
