// Each device's primary context and lock, shared by every worker that touches the device.
#ifndef VRAMFIT_DEVICE_CONTEXTS_H
#define VRAMFIT_DEVICE_CONTEXTS_H

#include <mutex>
#include <vector>

#include "driver_library.h"

namespace vramfit {

class DeviceContexts {
 public:
  DeviceContexts(const DriverApi& api, int deviceCount);

  // Serializes work on one device: a probe must not see another probe's allocations.
  std::unique_lock<std::mutex> Lock(int ordinal);

  // The device's primary context, retained on first use and kept until Release: it is the context
  // the CUDA runtime, PyTorch or onnxruntime use in this process too, so vramfit creates no second
  // one. Call with Lock(ordinal) held. Throws NativeError when the retain fails (retried next time):
  // ERR_DEVICE_EXCLUSIVE_PROCESS or ERR_DEVICE_PROHIBITED when the compute mode forbids the context.
  CUcontext Primary(int ordinal, CUdevice device);

  // Releases vramfit's one retain of the device's primary context (cuDevicePrimaryCtxRelease_v2),
  // if it holds one: the driver destroys the context, and the memory it took, once no one else in
  // the process holds it. The next Primary() retains it again. Call with Lock(ordinal) held.
  // True when a retain was released. Throws NativeError when the release fails; the context then
  // counts as still retained, so a later Release tries again.
  bool Release(int ordinal);

  // Releases every retained context, waiting for each device's running work first; failures are
  // ignored (for teardown).
  void ReleaseAll();

 private:
  struct Slot {
    std::mutex mutex;
    CUcontext context = nullptr;  // retained while non-null
    CUdevice device = 0;
  };

  const DriverApi& api_;
  std::vector<Slot> slots_;
};

}  // namespace vramfit

#endif  // VRAMFIT_DEVICE_CONTEXTS_H
