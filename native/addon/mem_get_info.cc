// memGetInfo(ordinal): free and total bytes in the device's primary context.
#include <algorithm>
#include <memory>
#include <vector>

#include "addon_functions.h"
#include "arguments.h"
#include "device_session.h"
#include "device_task.h"
#include "js_error.h"
#include "native_error.h"

namespace vramfit {
namespace {

// memGetInfo (one device: its reading or its error) or memGetInfoEach (several at once, each
// device's reading or error in their order).
class MemGetInfoTask : public DeviceTask {
 public:
  MemGetInfoTask(Napi::Env env, std::vector<int> ordinals, bool each)
      : DeviceTask(env, "vramfit:memGetInfo"), ordinals_(std::move(ordinals)), readings_(ordinals_.size()), each_(each) {}

 private:
  struct Reading {
    size_t freeBytes = 0;
    size_t totalBytes = 0;
  };

  void Run(int ordinal) override {
    Driver& driver = Driver::Get();
    Reading& reading = readings_[std::find(ordinals_.begin(), ordinals_.end(), ordinal) - ordinals_.begin()];
    // The session's device lock also keeps a concurrent probe's transient allocations out of
    // the reading: free memory is what the process has when vramfit holds nothing.
    DeviceSession session(driver, ordinal);
    CheckCuda(driver.api(), driver.api().cuMemGetInfo_v2(&reading.freeBytes, &reading.totalBytes), "cuMemGetInfo_v2");
  }

  static Napi::Value Info(Napi::Env env, const Reading& reading) {
    Napi::Object info = Napi::Object::New(env);
    info.Set("freeBytes", static_cast<double>(reading.freeBytes));
    info.Set("totalBytes", static_cast<double>(reading.totalBytes));
    return info;
  }

  Napi::Value Result(Napi::Env env) override {
    if (!each_) return Info(env, readings_.front());
    Napi::Array infos = Napi::Array::New(env, readings_.size());
    for (size_t i = 0; i < readings_.size(); ++i) infos.Set(i, ErrorAt(i) ? ToJsError(env, *ErrorAt(i)) : Info(env, readings_[i]));
    return infos;
  }

  std::vector<int> ordinals_;
  std::vector<Reading> readings_;
  bool each_;
};

}  // namespace

Napi::Value MemGetInfo(const Napi::CallbackInfo& info) {
  return StartDeviceTask(info.Env(), [&] {
    int ordinal = OrdinalArgument(info[0]);
    auto task = std::make_unique<MemGetInfoTask>(info.Env(), std::vector<int>{ordinal}, false);
    Napi::Promise promise = task->Start(ordinal);
    task.release();  // it deletes itself once settled
    return promise;
  });
}

Napi::Value MemGetInfoEach(const Napi::CallbackInfo& info) {
  return StartDeviceTask(info.Env(), [&] {
    std::vector<int> ordinals = OrdinalsArgument(info[0]);
    auto task = std::make_unique<MemGetInfoTask>(info.Env(), ordinals, true);
    Napi::Promise promise = task->StartEach(ordinals);
    task.release();  // it deletes itself once settled
    return promise;
  });
}

}  // namespace vramfit
