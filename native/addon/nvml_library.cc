// dlopen/dlsym of NVML: like the driver, no link-time dependency and no toolkit to build.
#include "nvml_library.h"

#include "native_error.h"

namespace vramfit {

// When the body throws, library_ is already constructed, so its destructor closes the library.
NvmlLibrary::NvmlLibrary(const std::string& path) : library_(path, "ERR_NVML_NOT_FOUND", "NVML") {
#define VRAMFIT_NVML_BIND(name, params) api_.name = library_.Symbol<PFN_##name>(#name);
  NVML_FUNCTIONS(VRAMFIT_NVML_BIND)
#undef VRAMFIT_NVML_BIND
  api_.nvmlErrorString = library_.Symbol<PFN_nvmlErrorString>("nvmlErrorString");
  const char* missing = nullptr;
#define VRAMFIT_NVML_REQUIRE(name, params) \
  if (missing == nullptr && api_.name == nullptr) missing = #name;
  NVML_REQUIRED_FUNCTIONS(VRAMFIT_NVML_REQUIRE)
#undef VRAMFIT_NVML_REQUIRE
  if (missing == nullptr && api_.nvmlErrorString == nullptr) missing = "nvmlErrorString";
  if (missing != nullptr) throw NativeError("ERR_NVML_SYMBOL", "NVML " + path + " lacks " + missing + ": it is too old for vramfit");
}

}  // namespace vramfit
