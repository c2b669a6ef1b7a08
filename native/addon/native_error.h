// The C++ side of VramfitError: thrown on any thread, turned into the JS class on the JS thread.
#ifndef VRAMFIT_NATIVE_ERROR_H
#define VRAMFIT_NATIVE_ERROR_H

#include <optional>
#include <stdexcept>
#include <string>

#include "../cuda/cuda_driver_api.h"

namespace vramfit {

struct DriverApi;

// Carries exactly the fields of VramfitError. It holds no Node-API value, so a worker thread
// can throw it; the JS object is built later, in OnOK, on the JS thread.
class NativeError : public std::runtime_error {
 public:
  NativeError(std::string code, const std::string& message, std::optional<int> cudaCode = std::nullopt,
              std::string call = "", std::optional<int> nvmlCode = std::nullopt);

  const std::string code;
  const std::optional<int> cudaCode;
  const std::string call;  // the driver or NVML function that failed; empty when none did
  const std::optional<int> nvmlCode;
};

NativeError InvalidArgument(const std::string& message);

// A failed driver call as ERR_CUDA_<NAME>: "cuMemAlloc_v2 failed: out of memory (CUDA_ERROR_OUT_OF_MEMORY = 2)".
NativeError CudaError(const DriverApi& api, CUresult result, const char* call);

// Throws CudaError unless the call succeeded.
void CheckCuda(const DriverApi& api, CUresult result, const char* call);

}  // namespace vramfit

#endif  // VRAMFIT_NATIVE_ERROR_H
