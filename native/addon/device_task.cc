// Running a task on its device's thread and settling its promise on the JS thread.
#include "device_task.h"

#include <exception>
#include <string>

#include "../cuda/sticky_errors.h"
#include "driver.h"

namespace vramfit {

DeviceTask::DeviceTask(Napi::Env env, const char* name)
    : deferred_(Napi::Promise::Deferred::New(env)), name_(name) {}

Napi::Promise DeviceTask::Start(int ordinal) {
  return Start(std::vector<int>{ordinal});
}

Napi::Promise DeviceTask::Start(const std::vector<int>& ordinals) {
  return Start(ordinals, false);
}

Napi::Promise DeviceTask::StartEach(const std::vector<int>& ordinals) {
  return Start(ordinals, true);
}

Napi::Promise DeviceTask::Start(const std::vector<int>& ordinals, bool each) {
  Driver& driver = Driver::Get();
  for (int ordinal : ordinals) driver.CheckOrdinal(ordinal);
  Napi::Env env = deferred_.Env();
  // The thread-safe function keeps the event loop alive until the task has settled: a process
  // cannot run out of work (and exit) while a probe still holds device memory.
  settle_ = Napi::ThreadSafeFunction::New(env, Napi::Function::New(env, [](const Napi::CallbackInfo&) {}),
                                          name_, 0, 1);
  Napi::Promise promise = deferred_.Promise();
  remaining_ = ordinals.size();
  each_ = each;
  errors_ = std::vector<std::optional<NativeError>>(ordinals.size());
  for (size_t index = 0; index < ordinals.size(); ++index) {
    const int ordinal = ordinals[index];
    driver.threads().Post(ordinal, [this, ordinal, index] { Execute(ordinal, index); });
  }
  return promise;
}

namespace {

// After a sticky error every later call in the context fails the same way (cuda.h), and the
// probe's frees failed with it: vramfit drops its retain, so that the driver destroys the context
// and the memory in it when no one else in the process holds it, and the next call retains a new
// one. Runs after Run() has unwound, so the device is not locked. Returns the error to report.
NativeError ReleaseBrokenContext(const NativeError& error, int ordinal) {
  if (!error.cudaCode || !IsStickyError(*error.cudaCode)) return error;
  DeviceContexts& contexts = Driver::Get().contexts();
  std::unique_lock<std::mutex> device = contexts.Lock(ordinal);
  std::string outcome = "vramfit released its context";
  try {
    if (!contexts.Release(ordinal)) outcome = "vramfit held no context";
  } catch (const NativeError& failed) {
    outcome = std::string("releasing the context failed too: ") + failed.what();
  }
  return NativeError(error.code,
                     std::string(error.what()) + "; a sticky error leaves the context unusable, so " + outcome +
                         " (if the next call fails the same way, the process must be restarted)",
                     error.cudaCode, error.call, error.nvmlCode);
}

}  // namespace

void DeviceTask::Execute(int ordinal, size_t index) {
  try {
    Run(ordinal);
  } catch (const NativeError& error) {
    NativeError reported = ReleaseBrokenContext(error, ordinal);
    std::lock_guard<std::mutex> lock(mutex_);
    if (each_) errors_[index].emplace(reported);
    else if (!error_ && !failure_) error_.emplace(reported);
  } catch (const std::exception& error) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!error_ && !failure_) failure_ = error.what();
  }
  if (remaining_.fetch_sub(1) != 1) return;  // another device's run is still going; it settles
  Napi::ThreadSafeFunction settle = settle_;  // the task may be deleted on the JS thread from here on
  napi_status status = settle.BlockingCall(this, [](Napi::Env env, Napi::Function, DeviceTask* task) {
    Settle(env, task);
  });
  settle.Release();
  // The environment is gone (napi_closing): nobody is waiting for this promise any more.
  if (status != napi_ok) delete this;
}

void DeviceTask::Settle(Napi::Env env, DeviceTask* task) {
  Napi::HandleScope scope(env);
  try {
    if (task->error_) {
      task->deferred_.Reject(ToJsError(env, *task->error_));
    } else if (task->failure_) {
      task->deferred_.Reject(Napi::Error::New(env, *task->failure_).Value());
    } else {
      task->deferred_.Resolve(task->Result(env));
    }
  } catch (const Napi::Error& error) {
    task->deferred_.Reject(error.Value());
  }
  task->ReleaseJs(env);
  delete task;
}

}  // namespace vramfit
