// Opening NVML (libnvidia-ml.so.1) at run time and binding the functions vramfit calls.
#ifndef VRAMFIT_NVML_LIBRARY_H
#define VRAMFIT_NVML_LIBRARY_H

#include <string>

#include "../nvml/nvml_api.h"
#include "shared_library.h"

namespace vramfit {

struct NvmlApi {
#define VRAMFIT_NVML_MEMBER(name, params) PFN_##name name = nullptr;
  NVML_FUNCTIONS(VRAMFIT_NVML_MEMBER)
#undef VRAMFIT_NVML_MEMBER
  PFN_nvmlErrorString nvmlErrorString = nullptr;
};

// An open NVML with its functions bound; closed when it goes (SharedLibrary).
class NvmlLibrary {
 public:
  // dlopen(path, RTLD_NOW | RTLD_LOCAL) and dlsym. Throws NativeError: ERR_NVML_NOT_FOUND with
  // dlerror's text, or ERR_NVML_SYMBOL naming the first required function missing.
  explicit NvmlLibrary(const std::string& path);

  const NvmlApi& api() const { return api_; }

 private:
  SharedLibrary library_;  // first: constructed before, and closed after, everything bound from it
  NvmlApi api_;
};

}  // namespace vramfit

#endif  // VRAMFIT_NVML_LIBRARY_H
