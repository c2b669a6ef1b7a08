// loadDriver(path): dlopen, bind, cuInit, version.
#include <memory>
#include <string>

#include "addon_functions.h"
#include "arguments.h"
#include "driver.h"
#include "promise_worker.h"

namespace vramfit {
namespace {

class LoadDriverWorker : public PromiseWorker {
 public:
  LoadDriverWorker(Napi::Env env, std::string path, std::unique_ptr<DriverLibrary> library)
      : PromiseWorker(env, "vramfit:loadDriver"), path_(std::move(path)), library_(std::move(library)) {}

 private:
  void Run() override {
    Driver& driver = Driver::Load(path_, std::move(library_));
    version_ = driver.version();
    uuidV2_ = driver.uuidV2();
  }

  Napi::Value Result(Napi::Env env) override {
    Napi::Object info = Napi::Object::New(env);
    info.Set("version", version_);
    info.Set("libraryPath", path_);
    info.Set("uuidV2", uuidV2_);
    return info;
  }

  std::string path_;
  std::unique_ptr<DriverLibrary> library_;  // opened on the JS thread; null once a driver is loaded
  int version_ = 0;
  bool uuidV2_ = false;
};

}  // namespace

// The library is opened here, on the JS thread; only cuInit and the reads after it, which can
// take long on a real driver, go to libuv's pool. Where there is no driver (the analytic fallback's
// usual case) the promise is rejected at once: the failed dlopen takes ~0.1 ms, and the round trip
// through the pool (starting its threads, the worker's wake-up, the JS thread's) cost the CLI
// 0.3-7.8 ms of idle waiting on a loaded 2-core machine (--cpu-prof of `batch --model resnet152`,
// docs/benchmarks.md, sixth round). A real driver's dlopen blocks the JS thread instead of a pool
// thread, which the CLI awaited at once anyway. Once a driver is loaded nothing is opened here:
// Load answers the same path or refuses another, as before.
Napi::Value LoadDriver(const Napi::CallbackInfo& info) {
  return StartWorker(info.Env(), [&] {
    std::string path = LibraryPathArgument(info[0]);
    auto library = Driver::IfLoaded() == nullptr ? std::make_unique<DriverLibrary>(path) : nullptr;
    return new LoadDriverWorker(info.Env(), std::move(path), std::move(library));
  });
}

}  // namespace vramfit
