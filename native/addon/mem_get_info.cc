// memGetInfo(ordinal): free and total bytes in the device's primary context.
#include <memory>

#include "addon_functions.h"
#include "arguments.h"
#include "device_session.h"
#include "device_task.h"
#include "native_error.h"

namespace vramfit {
namespace {

class MemGetInfoTask : public DeviceTask {
 public:
  MemGetInfoTask(Napi::Env env, int ordinal) : DeviceTask(env, "vramfit:memGetInfo"), ordinal_(ordinal) {}

 private:
  void Run(int) override {
    Driver& driver = Driver::Get();
    // The session's device lock also keeps a concurrent probe's transient allocations out of
    // the reading: free memory is what the process has when vramfit holds nothing.
    DeviceSession session(driver, ordinal_);
    CheckCuda(driver.api(), driver.api().cuMemGetInfo_v2(&freeBytes_, &totalBytes_), "cuMemGetInfo_v2");
  }

  Napi::Value Result(Napi::Env env) override {
    Napi::Object info = Napi::Object::New(env);
    info.Set("freeBytes", static_cast<double>(freeBytes_));
    info.Set("totalBytes", static_cast<double>(totalBytes_));
    return info;
  }

  int ordinal_;
  size_t freeBytes_ = 0;
  size_t totalBytes_ = 0;
};

}  // namespace

Napi::Value MemGetInfo(const Napi::CallbackInfo& info) {
  return StartDeviceTask(info.Env(), [&] {
    int ordinal = OrdinalArgument(info[0]);
    auto task = std::make_unique<MemGetInfoTask>(info.Env(), ordinal);
    Napi::Promise promise = task->Start(ordinal);
    task.release();  // it deletes itself once settled
    return promise;
  });
}

}  // namespace vramfit
