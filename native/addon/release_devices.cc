// releaseDevice(ordinal), releaseDevices(): give back vramfit's primary contexts, and the device
// memory they take, so that the job vramfit sized gets all of it.
//
// Each release runs on the device's own thread, behind everything already queued there: a probe
// in flight (or queued before the call) finishes first and frees its memory, and nothing else
// touches the device while its context goes. The next call on the device retains it again.
#include <algorithm>
#include <memory>
#include <mutex>
#include <vector>

#include "addon_functions.h"
#include "arguments.h"
#include "device_task.h"
#include "driver.h"

namespace vramfit {
namespace {

class ReleaseTask : public DeviceTask {
 public:
  // `all`: resolve with the ordinals released (releaseDevices); else with a boolean (releaseDevice).
  ReleaseTask(Napi::Env env, bool all) : DeviceTask(env, "vramfit:release"), all_(all) {}

 private:
  void Run(int ordinal) override {
    DeviceContexts& contexts = Driver::Get().contexts();
    std::unique_lock<std::mutex> device = contexts.Lock(ordinal);
    if (!contexts.Release(ordinal)) return;
    std::lock_guard<std::mutex> lock(mutex_);  // several devices' threads report here at once
    released_.push_back(ordinal);
  }

  Napi::Value Result(Napi::Env env) override {
    if (!all_) return Napi::Boolean::New(env, !released_.empty());
    std::sort(released_.begin(), released_.end());
    Napi::Array list = Napi::Array::New(env, released_.size());
    for (uint32_t i = 0; i < released_.size(); ++i) list.Set(i, released_[i]);
    return list;
  }

  bool all_;
  std::mutex mutex_;
  std::vector<int> released_;
};

}  // namespace

Napi::Value ReleaseDevice(const Napi::CallbackInfo& info) {
  return StartDeviceTask(info.Env(), [&] {
    int ordinal = OrdinalArgument(info[0]);
    auto task = std::make_unique<ReleaseTask>(info.Env(), false);
    Napi::Promise promise = task->Start(ordinal);
    task.release();  // it deletes itself once settled
    return promise;
  });
}

Napi::Value ReleaseDevices(const Napi::CallbackInfo& info) {
  return StartDeviceTask(info.Env(), [&]() -> Napi::Value {
    Driver* driver = Driver::IfLoaded();
    std::vector<int> used;  // a device whose thread never ran holds no context and has no work queued
    for (int ordinal = 0; driver != nullptr && ordinal < driver->deviceCount(); ++ordinal) {
      if (driver->threads().Started(ordinal)) used.push_back(ordinal);
    }
    if (used.empty()) {  // callable unconditionally (a finally, Symbol.asyncDispose): nothing to do
      Napi::Promise::Deferred deferred = Napi::Promise::Deferred::New(info.Env());
      deferred.Resolve(Napi::Array::New(info.Env()));
      return deferred.Promise();
    }
    auto task = std::make_unique<ReleaseTask>(info.Env(), true);
    Napi::Promise promise = task->Start(used);
    task.release();
    return promise;
  });
}

}  // namespace vramfit
