// One worker's hold on one device: its lock, and its primary context current on this thread.
#ifndef VRAMFIT_DEVICE_SESSION_H
#define VRAMFIT_DEVICE_SESSION_H

#include <mutex>

#include "driver.h"

namespace vramfit {

// The current context is per thread, and a worker runs on whichever libuv pool thread is free,
// so each worker makes the context current itself. The destructor restores the thread's previous
// context: the pool threads are shared with other addons.
class DeviceSession {
 public:
  // Throws NativeError (ERR_INVALID_DEVICE, or the failing driver call).
  DeviceSession(Driver& driver, int ordinal);
  ~DeviceSession();
  DeviceSession(const DeviceSession&) = delete;
  DeviceSession& operator=(const DeviceSession&) = delete;

 private:
  const DriverApi& api_;
  std::unique_lock<std::mutex> lock_;
  CUcontext previous_ = nullptr;
};

}  // namespace vramfit

#endif  // VRAMFIT_DEVICE_SESSION_H
