// Retaining and releasing primary contexts.
#include "device_contexts.h"

#include "native_error.h"

namespace vramfit {

DeviceContexts::DeviceContexts(const DriverApi& api, int deviceCount) : api_(api), slots_(deviceCount) {}

std::unique_lock<std::mutex> DeviceContexts::Lock(int ordinal) {
  return std::unique_lock<std::mutex>(slots_[ordinal].mutex);
}

CUcontext DeviceContexts::Primary(int ordinal, CUdevice device) {
  Slot& slot = slots_[ordinal];
  if (slot.context == nullptr) {
    CUcontext context = nullptr;
    CheckCuda(api_, api_.cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain");
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
