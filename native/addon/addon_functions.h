// The functions the addon exports to JS (src/native/addonTypes.ts describes them).
#ifndef VRAMFIT_ADDON_FUNCTIONS_H
#define VRAMFIT_ADDON_FUNCTIONS_H

#include <napi.h>

namespace vramfit {

Napi::Value LoadDriver(const Napi::CallbackInfo& info);
Napi::Value ListDevices(const Napi::CallbackInfo& info);
Napi::Value MemGetInfo(const Napi::CallbackInfo& info);
Napi::Value MemGetInfoEach(const Napi::CallbackInfo& info);
Napi::Value Probe(const Napi::CallbackInfo& info);
Napi::Value ProbeEach(const Napi::CallbackInfo& info);
Napi::Value ReleaseDevice(const Napi::CallbackInfo& info);
Napi::Value ReleaseDevices(const Napi::CallbackInfo& info);
Napi::Value LoadNvml(const Napi::CallbackInfo& info);
Napi::Value NvmlDevices(const Napi::CallbackInfo& info);
Napi::Value NvmlAbi(const Napi::CallbackInfo& info);
Napi::Value TryLockFile(const Napi::CallbackInfo& info);
Napi::Value ReplayInto(const Napi::CallbackInfo& info);
Napi::Value ReplayExpandableInto(const Napi::CallbackInfo& info);

}  // namespace vramfit

#endif  // VRAMFIT_ADDON_FUNCTIONS_H
