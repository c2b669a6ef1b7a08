// dlopen/dlsym of NVML: like the driver, no link-time dependency and no toolkit to build.
#include "nvml_library.h"

#include <dlfcn.h>

#include "native_error.h"

namespace vramfit {

NvmlLibrary::NvmlLibrary(const std::string& path) {
  handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle_ == nullptr) {
    const char* reason = dlerror();
    throw NativeError("ERR_NVML_NOT_FOUND", "NVML not found: " + std::string(reason ? reason : path));
  }
#define VRAMFIT_NVML_BIND(name, params) api_.name = reinterpret_cast<PFN_##name>(dlsym(handle_, #name));
  NVML_FUNCTIONS(VRAMFIT_NVML_BIND)
#undef VRAMFIT_NVML_BIND
  api_.nvmlErrorString = reinterpret_cast<PFN_nvmlErrorString>(dlsym(handle_, "nvmlErrorString"));
  const char* missing = nullptr;
#define VRAMFIT_NVML_REQUIRE(name, params) \
  if (missing == nullptr && api_.name == nullptr) missing = #name;
  NVML_REQUIRED_FUNCTIONS(VRAMFIT_NVML_REQUIRE)
#undef VRAMFIT_NVML_REQUIRE
  if (missing == nullptr && api_.nvmlErrorString == nullptr) missing = "nvmlErrorString";
  if (missing != nullptr) {
    dlclose(handle_);
    throw NativeError("ERR_NVML_SYMBOL", "NVML " + path + " lacks " + missing + ": it is too old for vramfit");
  }
}

NvmlLibrary::~NvmlLibrary() {
  dlclose(handle_);
}

}  // namespace vramfit
