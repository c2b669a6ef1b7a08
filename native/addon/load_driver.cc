// loadDriver(path): dlopen, bind, cuInit, version.
#include <string>

#include "addon_functions.h"
#include "arguments.h"
#include "driver.h"
#include "promise_worker.h"

namespace vramfit {
namespace {

class LoadDriverWorker : public PromiseWorker {
 public:
  LoadDriverWorker(Napi::Env env, std::string path)
      : PromiseWorker(env, "vramfit:loadDriver"), path_(std::move(path)) {}

 private:
  void Run() override {
    Driver& driver = Driver::Load(path_);
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
  int version_ = 0;
  bool uuidV2_ = false;
};

}  // namespace

Napi::Value LoadDriver(const Napi::CallbackInfo& info) {
  return StartWorker(info.Env(), [&] { return new LoadDriverWorker(info.Env(), LibraryPathArgument(info[0])); });
}

}  // namespace vramfit
