// Opening a CUDA driver library at run time and binding the functions vramfit calls.
#ifndef VRAMFIT_DRIVER_LIBRARY_H
#define VRAMFIT_DRIVER_LIBRARY_H

#include <string>

#include "../cuda/cuda_driver_api.h"
#include "shared_library.h"

namespace vramfit {

// The driver's functions, bound by their exported (versioned) names.
struct DriverApi {
#define VRAMFIT_API_MEMBER(name, params) PFN_##name name = nullptr;
  CUDA_DRIVER_FUNCTIONS(VRAMFIT_API_MEMBER)
#undef VRAMFIT_API_MEMBER
  // cuDeviceGetUuid_v2 where the driver has it (CUDA 11.4+), else cuDeviceGetUuid; same signature.
  PFN_cuDeviceGetUuid_v2 deviceGetUuid = nullptr;
};

// Every function of the virtual-memory API is bound (a driver of CUDA 10.2 or later): the probe maps
// pages with it; without it, cuMemAlloc.
inline bool HasVirtualMemory(const DriverApi& api) {
  bool all = true;
#define VRAMFIT_BOUND(name, params) all = all && api.name != nullptr;
  CUDA_DRIVER_VIRTUAL_MEMORY_FUNCTIONS(VRAMFIT_BOUND)
#undef VRAMFIT_BOUND
  return all;
}

// An open driver library with its functions bound; closed when it goes (SharedLibrary).
class DriverLibrary {
 public:
  // dlopen(path, RTLD_NOW | RTLD_LOCAL), then dlsym of every function. Throws NativeError:
  // ERR_DRIVER_NOT_FOUND with dlerror's text, or ERR_DRIVER_SYMBOL naming the missing function.
  explicit DriverLibrary(const std::string& path);

  const DriverApi& api() const { return api_; }
  bool uuidV2() const { return api_.cuDeviceGetUuid_v2 != nullptr; }

 private:
  SharedLibrary library_;  // first: constructed before, and closed after, everything bound from it
  DriverApi api_;
};

}  // namespace vramfit

#endif  // VRAMFIT_DRIVER_LIBRARY_H
