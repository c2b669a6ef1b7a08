// Per-addon-instance state: one per Node environment (main thread, each worker thread).
#ifndef VRAMFIT_ADDON_STATE_H
#define VRAMFIT_ADDON_STATE_H

#include <napi.h>

namespace vramfit {

// Kept with env.SetInstanceData, never in statics: JS values belong to one environment, and
// each worker thread that loads the addon gets its own.
struct AddonState {
  Napi::FunctionReference errorClass;  // VramfitError, from setErrorClass; empty until then
};

inline AddonState& StateOf(Napi::Env env) {
  return *env.GetInstanceData<AddonState>();
}

}  // namespace vramfit

#endif  // VRAMFIT_ADDON_STATE_H
