// memGetInfo(ordinal): free and total bytes in the device's primary context.
#include "addon_functions.h"
#include "arguments.h"
#include "device_session.h"
#include "native_error.h"
#include "promise_worker.h"

namespace vramfit {
namespace {

class MemGetInfoWorker : public PromiseWorker {
 public:
  MemGetInfoWorker(Napi::Env env, int ordinal) : PromiseWorker(env, "vramfit:memGetInfo"), ordinal_(ordinal) {}

 private:
  void Run() override {
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
  return StartWorker(info.Env(), [&] { return new MemGetInfoWorker(info.Env(), OrdinalArgument(info[0])); });
}

}  // namespace vramfit
