// tryLockFile(fd): a non-blocking exclusive flock, for vramfit's per-device cross-process lock.
//
// Synchronous on purpose: LOCK_NB never waits, so the JS side polls with timers, which keeps the
// wait bounded, cancellable by an AbortSignal, and off every thread pool. Closing the file
// descriptor (or the process dying) releases the lock.
#include <sys/file.h>

#include <cerrno>
#include <cmath>
#include <cstring>

#include "addon_functions.h"
#include "js_error.h"
#include "native_error.h"

namespace vramfit {

Napi::Value TryLockFile(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  double fd = info[0].IsNumber() ? info[0].As<Napi::Number>().DoubleValue() : -1;
  if (!(fd >= 0 && fd <= 2147483647 && std::trunc(fd) == fd)) {
    throw Napi::Error(env, ToJsError(env, InvalidArgument("tryLockFile: expected a file descriptor, got " +
                                                          info[0].ToString().Utf8Value())));
  }
  for (;;) {
    if (flock(static_cast<int>(fd), LOCK_EX | LOCK_NB) == 0) return Napi::Boolean::New(env, true);
    if (errno == EWOULDBLOCK) return Napi::Boolean::New(env, false);
    if (errno != EINTR) {
      throw Napi::Error(env, ToJsError(env, NativeError("ERR_LOCK", std::string("flock failed: ") + std::strerror(errno))));
    }
  }
}

}  // namespace vramfit
