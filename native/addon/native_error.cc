// Builds NativeErrors, including the driver's own name and description of a CUresult.
#include "native_error.h"

#include <utility>

#include "driver_library.h"

namespace vramfit {

NativeError::NativeError(std::string code, const std::string& message, std::optional<int> cudaCode,
                         std::string call, std::optional<int> nvmlCode)
    : std::runtime_error(message),
      code(std::move(code)),
      cudaCode(cudaCode),
      call(std::move(call)),
      nvmlCode(nvmlCode) {}

NativeError InvalidArgument(const std::string& message) {
  return NativeError("ERR_INVALID_ARGUMENT", message);
}

NativeError CudaError(const DriverApi& api, CUresult result, const char* call) {
  const char* name = nullptr;
  const char* description = nullptr;
  // Both fail for a CUresult this driver does not know; the number alone still identifies it.
  if (api.cuGetErrorName(result, &name) != CUDA_SUCCESS) name = nullptr;
  if (api.cuGetErrorString(result, &description) != CUDA_SUCCESS || description == nullptr) {
    description = "unrecognized error";
  }
  const std::string number = std::to_string(result);
  const std::string prefix = "CUDA_ERROR_";
  std::string code = "ERR_CUDA_" + number;
  std::string detail = "CUresult " + number;
  if (name != nullptr) {
    std::string fullName = name;
    if (fullName.rfind(prefix, 0) == 0) code = "ERR_CUDA_" + fullName.substr(prefix.size());
    detail = fullName + " = " + number;
  }
  return NativeError(code, std::string(call) + " failed: " + description + " (" + detail + ")", result, call);
}

void CheckCuda(const DriverApi& api, CUresult result, const char* call) {
  if (result != CUDA_SUCCESS) throw CudaError(api, result, call);
}

}  // namespace vramfit
