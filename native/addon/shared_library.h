// A library opened at run time: dlopen on construction, dlclose on destruction, typed dlsym.
#ifndef VRAMFIT_SHARED_LIBRARY_H
#define VRAMFIT_SHARED_LIBRARY_H

#include <dlfcn.h>

#include <string>

#include "native_error.h"

namespace vramfit {

class SharedLibrary {
 public:
  // RTLD_LOCAL: the library's symbols must not satisfy other libraries' lookups (a toolkit stub
  // or a second libcuda would otherwise mix). RTLD_NOW: a broken library fails here, not mid-probe.
  // Throws NativeError(notFoundCode, "<what> not found: <dlerror>").
  SharedLibrary(const std::string& path, const char* notFoundCode, const std::string& what)
      : handle_(dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
    if (handle_ == nullptr) {
      const char* reason = dlerror();
      throw NativeError(notFoundCode, what + " not found: " + std::string(reason ? reason : path));
    }
  }
  ~SharedLibrary() { dlclose(handle_); }
  SharedLibrary(const SharedLibrary&) = delete;
  SharedLibrary& operator=(const SharedLibrary&) = delete;

  // The exported function `name`, or nullptr when the library lacks it.
  template <typename Function>
  Function Symbol(const char* name) const {
    return reinterpret_cast<Function>(dlsym(handle_, name));
  }

 private:
  void* handle_;
};

}  // namespace vramfit

#endif  // VRAMFIT_SHARED_LIBRARY_H
