// Loading NVML once per process, and turning nvmlReturn_t into NativeErrors.
#include "nvml.h"

#include <mutex>
#include <utility>

namespace vramfit {
namespace {

std::mutex& gMutex = *new std::mutex;  // never destroyed, like the driver's
Nvml* gNvml = nullptr;

// nvmlReturn_t names (nvml.h); their descriptions come from the library's nvmlErrorString.
const char* ReturnName(nvmlReturn_t result) {
  switch (result) {
    case 1: return "UNINITIALIZED";
    case 2: return "INVALID_ARGUMENT";
    case 3: return "NOT_SUPPORTED";
    case 4: return "NO_PERMISSION";
    case 5: return "ALREADY_INITIALIZED";
    case 6: return "NOT_FOUND";
    case 7: return "INSUFFICIENT_SIZE";
    case 8: return "INSUFFICIENT_POWER";
    case 9: return "DRIVER_NOT_LOADED";
    case 10: return "TIMEOUT";
    case 11: return "IRQ_ISSUE";
    case 12: return "LIBRARY_NOT_FOUND";
    case 13: return "FUNCTION_NOT_FOUND";
    case 14: return "CORRUPTED_INFOROM";
    case 15: return "GPU_IS_LOST";
    case 16: return "RESET_REQUIRED";
    case 17: return "OPERATING_SYSTEM";
    case 18: return "LIB_RM_VERSION_MISMATCH";
    case 19: return "IN_USE";
    case 20: return "MEMORY";
    case 21: return "NO_DATA";
    case 22: return "VGPU_ECC_NOT_SUPPORTED";
    case 23: return "INSUFFICIENT_RESOURCES";
    case 24: return "FREQ_NOT_SUPPORTED";
    case 25: return "ARGUMENT_VERSION_MISMATCH";
    case 26: return "DEPRECATED";
    case 27: return "NOT_READY";
    case 28: return "GPU_NOT_FOUND";
    case 29: return "INVALID_STATE";
    case 999: return "UNKNOWN";
    default: return nullptr;
  }
}

}  // namespace

NativeError NvmlError(const NvmlApi& api, nvmlReturn_t result, const char* call) {
  const char* description = api.nvmlErrorString ? api.nvmlErrorString(result) : nullptr;
  const char* name = ReturnName(result);
  std::string number = std::to_string(result);
  std::string code = name ? std::string("ERR_NVML_") + name : "ERR_NVML_" + number;
  std::string detail = name ? std::string("NVML_ERROR_") + name + " = " + number : "nvmlReturn_t " + number;
  return NativeError(code, std::string(call) + " failed: " + (description ? description : "unrecognized error") +
                               " (" + detail + ")",
                     std::nullopt, call, result);
}

void CheckNvml(const NvmlApi& api, nvmlReturn_t result, const char* call) {
  if (result != NVML_SUCCESS) throw NvmlError(api, result, call);
}

Nvml::Nvml(std::unique_ptr<NvmlLibrary> library, std::string path, std::string driverVersion)
    : library_(std::move(library)), path_(std::move(path)), driverVersion_(std::move(driverVersion)) {}

Nvml& Nvml::Load(const std::string& path) {
  std::lock_guard<std::mutex> lock(gMutex);
  if (gNvml != nullptr) {
    if (gNvml->path_ == path) return *gNvml;
    throw NativeError("ERR_INVALID_ARGUMENT", "loadNvml: NVML is already loaded from " + gNvml->path_ +
                                                  "; a process loads one, so " + path + " cannot be loaded too");
  }
  auto library = std::make_unique<NvmlLibrary>(path);
  const NvmlApi& api = library->api();
  CheckNvml(api, api.nvmlInit_v2(), "nvmlInit_v2");
  // Only informative: a library that cannot say its version still answers memory queries.
  char version[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = {};
  std::string driverVersion;
  if (api.nvmlSystemGetDriverVersion(version, sizeof version) == NVML_SUCCESS) driverVersion = version;
  gNvml = new Nvml(std::move(library), path, driverVersion);  // for the process's life
  return *gNvml;
}

Nvml& Nvml::Get() {
  std::lock_guard<std::mutex> lock(gMutex);
  if (gNvml == nullptr) throw NativeError("ERR_NVML_NOT_LOADED", "NVML is not loaded: call loadNvml() first");
  return *gNvml;
}

}  // namespace vramfit
