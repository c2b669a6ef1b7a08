// The base of every call that works on one device: Run() on that device's thread, the promise
// settled on the JS thread through a thread-safe function.
#ifndef VRAMFIT_DEVICE_TASK_H
#define VRAMFIT_DEVICE_TASK_H

#include <napi.h>

#include <atomic>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "native_error.h"

namespace vramfit {

// Like PromiseWorker, but on the device's own thread (DeviceThreads) rather than libuv's pool.
// The task owns itself once started: it is deleted after settling, or on the device thread when
// its environment is already gone (a worker thread that exited), in which case nothing settles.
class DeviceTask {
 public:
  virtual ~DeviceTask() = default;
  // Validates the ordinal (throws NativeError), queues the task and returns its promise.
  Napi::Promise Start(int ordinal);
  // Queues Run(ordinal) on each device's thread, behind the work already queued there; the
  // promise settles once every one has run, rejecting with the first error. Not empty.
  Napi::Promise Start(const std::vector<int>& ordinals);
  // The same, but a device's NativeError is its own: the promise resolves, and Result reports each
  // device's error (ErrorAt) beside the others' answers. Other exceptions still reject.
  Napi::Promise StartEach(const std::vector<int>& ordinals);

 protected:
  DeviceTask(Napi::Env env, const char* name);
  // On the device thread; must not call Node-API. A NativeError thrown here rejects the promise.
  // With several devices, the runs on different devices are concurrent.
  virtual void Run(int ordinal) = 0;
  // On the JS thread.
  virtual Napi::Value Result(Napi::Env env) = 0;
  // On the JS thread, after settling: drop references to JS values.
  virtual void ReleaseJs(Napi::Env) {}
  // After StartEach, in Result: the error of the run on ordinals[index], if it failed.
  const std::optional<NativeError>& ErrorAt(size_t index) const { return errors_.at(index); }

 private:
  Napi::Promise Start(const std::vector<int>& ordinals, bool each);
  void Execute(int ordinal, size_t index);
  static void Settle(Napi::Env env, DeviceTask* task);

  Napi::Promise::Deferred deferred_;
  Napi::ThreadSafeFunction settle_;
  std::string name_;
  std::atomic<size_t> remaining_{0};  // runs not finished yet; the last one settles
  std::mutex mutex_;                  // guards the two below while several runs may fail
  std::optional<NativeError> error_;
  std::optional<std::string> failure_;  // any other exception (e.g. bad_alloc): a plain Error
  bool each_ = false;                   // StartEach: errors_ holds each run's own error
  std::vector<std::optional<NativeError>> errors_;
};

// Starts a task built by `make` (on the JS thread), turning argument errors into a rejection.
template <typename Make>
Napi::Value StartDeviceTask(Napi::Env env, Make make);

}  // namespace vramfit

#include "js_error.h"

namespace vramfit {

template <typename Make>
Napi::Value StartDeviceTask(Napi::Env env, Make make) {
  try {
    return make();
  } catch (const NativeError& error) {
    return RejectedPromise(env, error);
  } catch (const Napi::Error& error) {
    Napi::Promise::Deferred deferred = Napi::Promise::Deferred::New(env);
    deferred.Reject(error.Value());
    return deferred.Promise();
  }
}

}  // namespace vramfit

#endif  // VRAMFIT_DEVICE_TASK_H
