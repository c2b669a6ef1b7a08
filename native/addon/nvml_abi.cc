// nvmlAbi(): the sizes and offsets of the NVML structs as this addon was compiled, so a test can
// hold them against the layouts nvml.h documents (native/nvml/nvml_api.h pins them too).
#include <cstddef>

#include "../nvml/nvml_api.h"
#include "addon_functions.h"

namespace vramfit {
namespace {

Napi::Object Layout(Napi::Env env, size_t size, std::initializer_list<std::pair<const char*, size_t>> fields) {
  Napi::Object layout = Napi::Object::New(env);
  layout.Set("size", static_cast<double>(size));
  Napi::Object offsets = Napi::Object::New(env);
  for (const auto& [name, offset] : fields) offsets.Set(name, static_cast<double>(offset));
  layout.Set("offsets", offsets);
  return layout;
}

}  // namespace

Napi::Value NvmlAbi(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object abi = Napi::Object::New(env);
  abi.Set("nvmlMemory_t", Layout(env, sizeof(nvmlMemory_t),
                                 {{"total", offsetof(nvmlMemory_t, total)},
                                  {"free", offsetof(nvmlMemory_t, free)},
                                  {"used", offsetof(nvmlMemory_t, used)}}));
  abi.Set("nvmlMemory_v2_t", Layout(env, sizeof(nvmlMemory_v2_t),
                                    {{"version", offsetof(nvmlMemory_v2_t, version)},
                                     {"total", offsetof(nvmlMemory_v2_t, total)},
                                     {"reserved", offsetof(nvmlMemory_v2_t, reserved)},
                                     {"free", offsetof(nvmlMemory_v2_t, free)},
                                     {"used", offsetof(nvmlMemory_v2_t, used)}}));
  abi.Set("nvmlProcessInfo_v1_t", Layout(env, sizeof(nvmlProcessInfo_v1_t),
                                         {{"pid", offsetof(nvmlProcessInfo_v1_t, pid)},
                                          {"usedGpuMemory", offsetof(nvmlProcessInfo_v1_t, usedGpuMemory)}}));
  abi.Set("nvmlProcessInfo_v2_t", Layout(env, sizeof(nvmlProcessInfo_v2_t),
                                         {{"pid", offsetof(nvmlProcessInfo_v2_t, pid)},
                                          {"usedGpuMemory", offsetof(nvmlProcessInfo_v2_t, usedGpuMemory)},
                                          {"gpuInstanceId", offsetof(nvmlProcessInfo_v2_t, gpuInstanceId)},
                                          {"computeInstanceId", offsetof(nvmlProcessInfo_v2_t, computeInstanceId)}}));
  abi.Set("nvmlMemory_v2", static_cast<double>(nvmlMemory_v2));
  return abi;
}

}  // namespace vramfit
