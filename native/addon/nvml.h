// The loaded NVML: one per process, initialized once, never shut down.
#ifndef VRAMFIT_NVML_H
#define VRAMFIT_NVML_H

#include <memory>
#include <optional>
#include <string>

#include "native_error.h"
#include "nvml_library.h"

namespace vramfit {

// Process-global for the reason Driver is: NVML's state is the process's, shared by every Node
// environment. NVML never creates a CUDA context, which is why vramfit asks it first.
class Nvml {
 public:
  // Opens the library and calls nvmlInit_v2, once per process; a later call with the same path
  // returns the loaded one, with another path throws. A failed load may be retried. Throws NativeError.
  static Nvml& Load(const std::string& path);
  // Throws ERR_NVML_NOT_LOADED before a successful Load.
  static Nvml& Get();

  const NvmlApi& api() const { return library_->api(); }
  const std::string& path() const { return path_; }
  // nvmlSystemGetDriverVersion, e.g. "550.54.15"; empty when NVML could not say.
  const std::string& driverVersion() const { return driverVersion_; }

 private:
  Nvml(std::unique_ptr<NvmlLibrary> library, std::string path, std::string driverVersion);

  std::unique_ptr<NvmlLibrary> library_;
  std::string path_;
  std::string driverVersion_;
};

// A failed NVML call as ERR_NVML_<NAME>, e.g. "nvmlDeviceGetMemoryInfo_v2 failed: Not Supported
// (NVML_ERROR_NOT_SUPPORTED = 3)", with nvmlCode and call.
NativeError NvmlError(const NvmlApi& api, nvmlReturn_t result, const char* call);
void CheckNvml(const NvmlApi& api, nvmlReturn_t result, const char* call);

}  // namespace vramfit

#endif  // VRAMFIT_NVML_H
