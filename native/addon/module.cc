// Module initialization: per-environment state, exports, and the teardown hook.
#include <napi.h>

#include "addon_functions.h"
#include "addon_state.h"
#include "driver.h"
#include "js_error.h"

namespace vramfit {

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  env.SetInstanceData(new AddonState());
  Driver::AddEnvironment();
  // The primary contexts are released when the last environment using them goes away.
  env.AddCleanupHook([] { Driver::RemoveEnvironment(); });
  exports.Set("setErrorClass", Napi::Function::New(env, SetErrorClass, "setErrorClass"));
  exports.Set("loadDriver", Napi::Function::New(env, LoadDriver, "loadDriver"));
  exports.Set("devices", Napi::Function::New(env, ListDevices, "devices"));
  exports.Set("memGetInfo", Napi::Function::New(env, MemGetInfo, "memGetInfo"));
  exports.Set("memGetInfoEach", Napi::Function::New(env, MemGetInfoEach, "memGetInfoEach"));
  exports.Set("probe", Napi::Function::New(env, Probe, "probe"));
  exports.Set("probeEach", Napi::Function::New(env, ProbeEach, "probeEach"));
  exports.Set("releaseDevice", Napi::Function::New(env, ReleaseDevice, "releaseDevice"));
  exports.Set("releaseDevices", Napi::Function::New(env, ReleaseDevices, "releaseDevices"));
  exports.Set("loadNvml", Napi::Function::New(env, LoadNvml, "loadNvml"));
  exports.Set("nvmlDevices", Napi::Function::New(env, NvmlDevices, "nvmlDevices"));
  exports.Set("nvmlAbi", Napi::Function::New(env, NvmlAbi, "nvmlAbi"));
  exports.Set("tryLockFile", Napi::Function::New(env, TryLockFile, "tryLockFile"));
  exports.Set("replayInto", Napi::Function::New(env, ReplayInto, "replayInto"));
  exports.Set("replayExpandableInto", Napi::Function::New(env, ReplayExpandableInto, "replayExpandableInto"));
  return exports;
}

}  // namespace vramfit

// The macro pastes the name into an identifier, so it takes an unqualified one.
using vramfit::Init;
NODE_API_MODULE(vramfit, Init)
