// dlopen/dlsym of the CUDA driver. No link-time dependency: building needs no toolkit, and a
// machine without a GPU still loads the addon.
#include "driver_library.h"

#include "native_error.h"

namespace vramfit {
namespace {

NativeError MissingSymbol(const std::string& path, const char* name) {
  return NativeError("ERR_DRIVER_SYMBOL", "the CUDA driver " + path + " lacks " + name + ": it is too old for vramfit");
}

}  // namespace

// When the body throws, library_ is already constructed, so its destructor closes the library.
DriverLibrary::DriverLibrary(const std::string& path) : library_(path, "ERR_DRIVER_NOT_FOUND", "driver") {
#define VRAMFIT_BIND(name, params) api_.name = library_.Symbol<PFN_##name>(#name);
  CUDA_DRIVER_FUNCTIONS(VRAMFIT_BIND)
#undef VRAMFIT_BIND
#define VRAMFIT_REQUIRE(name, params) \
  if (api_.name == nullptr) throw MissingSymbol(path, #name);
  CUDA_DRIVER_REQUIRED_FUNCTIONS(VRAMFIT_REQUIRE)
#undef VRAMFIT_REQUIRE
  api_.deviceGetUuid = api_.cuDeviceGetUuid_v2 ? api_.cuDeviceGetUuid_v2 : api_.cuDeviceGetUuid;
  if (api_.deviceGetUuid == nullptr) throw MissingSymbol(path, "cuDeviceGetUuid_v2");
}

}  // namespace vramfit
