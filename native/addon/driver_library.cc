// dlopen/dlsym of the CUDA driver. No link-time dependency: building needs no toolkit, and a
// machine without a GPU still loads the addon.
#include "driver_library.h"

#include <dlfcn.h>

#include "native_error.h"

namespace vramfit {
namespace {

template <typename Function>
void Bind(void* handle, Function& slot, const char* name) {
  slot = reinterpret_cast<Function>(dlsym(handle, name));
}

NativeError MissingSymbol(const std::string& path, const char* name) {
  return NativeError("ERR_DRIVER_SYMBOL", "the CUDA driver " + path + " lacks " + name + ": it is too old for vramfit");
}

}  // namespace

DriverLibrary::DriverLibrary(const std::string& path) {
  // RTLD_LOCAL: the driver's symbols must not satisfy other libraries' lookups (a toolkit stub
  // or a second libcuda would otherwise mix). RTLD_NOW: a broken library fails here, not mid-probe.
  handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle_ == nullptr) {
    const char* reason = dlerror();
    throw NativeError("ERR_DRIVER_NOT_FOUND", "driver not found: " + std::string(reason ? reason : path));
  }
  try {
#define VRAMFIT_BIND(name, params) Bind(handle_, api_.name, #name);
    CUDA_DRIVER_FUNCTIONS(VRAMFIT_BIND)
#undef VRAMFIT_BIND
#define VRAMFIT_REQUIRE(name, params) \
  if (api_.name == nullptr) throw MissingSymbol(path, #name);
    CUDA_DRIVER_REQUIRED_FUNCTIONS(VRAMFIT_REQUIRE)
#undef VRAMFIT_REQUIRE
    api_.deviceGetUuid = api_.cuDeviceGetUuid_v2 ? api_.cuDeviceGetUuid_v2 : api_.cuDeviceGetUuid;
    if (api_.deviceGetUuid == nullptr) throw MissingSymbol(path, "cuDeviceGetUuid_v2");
  } catch (...) {
    dlclose(handle_);
    throw;
  }
}

DriverLibrary::~DriverLibrary() {
  dlclose(handle_);
}

}  // namespace vramfit
