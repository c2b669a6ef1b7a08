// Retaining and releasing primary contexts.
#include "device_contexts.h"

#include <string>

#include "native_error.h"

namespace vramfit {

DeviceContexts::DeviceContexts(const DriverApi& api, int deviceCount) : api_(api), slots_(deviceCount) {}

std::unique_lock<std::mutex> DeviceContexts::Lock(int ordinal) {
  return std::unique_lock<std::mutex>(slots_[ordinal].mutex);
}

namespace {

// cuDevicePrimaryCtxRetain answers CUDA_ERROR_DEVICE_UNAVAILABLE when the compute mode forbids a
// new context (cuda.h: "often unavailable due to use of CU_COMPUTEMODE_EXCLUSIVE_PROCESS or
// CU_COMPUTEMODE_PROHIBITED"); the mode, read without a context, says which, so the error can name it.
NativeError RetainError(const DriverApi& api, CUresult result, int ordinal, CUdevice device) {
  NativeError cuda = CudaError(api, result, "cuDevicePrimaryCtxRetain");
  int mode = CU_COMPUTEMODE_DEFAULT;
  if (result != CUDA_ERROR_DEVICE_UNAVAILABLE ||
      api.cuDeviceGetAttribute(&mode, CU_DEVICE_ATTRIBUTE_COMPUTE_MODE, device) != CUDA_SUCCESS) {
    return cuda;
  }
  std::string name = "device " + std::to_string(ordinal);
  if (mode == CU_COMPUTEMODE_EXCLUSIVE_PROCESS) {
    return NativeError("ERR_DEVICE_EXCLUSIVE_PROCESS",
                       name + " is in exclusive-process compute mode and another process has a context on it, so "
                              "vramfit cannot create one (" + cuda.what() + ")",
                       result, "cuDevicePrimaryCtxRetain");
  }
  if (mode == CU_COMPUTEMODE_PROHIBITED) {
    return NativeError("ERR_DEVICE_PROHIBITED",
                       name + " is in prohibited compute mode: no process may create a context on it (" + cuda.what() + ")",
                       result, "cuDevicePrimaryCtxRetain");
  }
  return cuda;
}

}  // namespace

CUcontext DeviceContexts::Primary(int ordinal, CUdevice device) {
  Slot& slot = slots_[ordinal];
  if (slot.context == nullptr) {
    CUcontext context = nullptr;
    CUresult result = api_.cuDevicePrimaryCtxRetain(&context, device);
    if (result != CUDA_SUCCESS) throw RetainError(api_, result, ordinal, device);
    slot.context = context;
    slot.device = device;
  }
  return slot.context;
}

bool DeviceContexts::Release(int ordinal) {
  Slot& slot = slots_[ordinal];
  if (slot.context == nullptr) return false;
  CheckCuda(api_, api_.cuDevicePrimaryCtxRelease_v2(slot.device), "cuDevicePrimaryCtxRelease_v2");
  slot.context = nullptr;
  return true;
}

void DeviceContexts::ReleaseAll() {
  for (Slot& slot : slots_) {
    std::lock_guard<std::mutex> lock(slot.mutex);
    if (slot.context == nullptr) continue;
    // At teardown nobody is left to tell of a failure; the process is going away regardless.
    api_.cuDevicePrimaryCtxRelease_v2(slot.device);
    slot.context = nullptr;
  }
}

}  // namespace vramfit
