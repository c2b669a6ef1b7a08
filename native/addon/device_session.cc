// Entering and leaving a device on a worker thread.
#include "device_session.h"

#include "native_error.h"

namespace vramfit {

DeviceSession::DeviceSession(Driver& driver, int ordinal) : api_(driver.api()) {
  CUdevice device = driver.Device(ordinal);
  lock_ = driver.contexts().Lock(ordinal);
  CUcontext context = driver.contexts().Primary(ordinal, device);
  CheckCuda(api_, api_.cuCtxGetCurrent(&previous_), "cuCtxGetCurrent");
  CheckCuda(api_, api_.cuCtxSetCurrent(context), "cuCtxSetCurrent");
}

DeviceSession::~DeviceSession() {
  // Best effort: a destructor cannot report, and the worker's own result is already decided.
  api_.cuCtxSetCurrent(previous_);
}

}  // namespace vramfit
