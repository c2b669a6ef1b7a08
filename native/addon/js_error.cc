// The one error class crossing the boundary, and how C++ builds its instances.
#include "js_error.h"

#include "addon_state.h"

namespace vramfit {

void SetErrorClass(const Napi::CallbackInfo& info) {
  if (!info[0].IsFunction()) {
    throw Napi::TypeError::New(info.Env(), "setErrorClass: expected the VramfitError class");
  }
  StateOf(info.Env()).errorClass = Napi::Persistent(info[0].As<Napi::Function>());
}

Napi::Value ToJsError(Napi::Env env, const NativeError& error) {
  AddonState& state = StateOf(env);
  Napi::Object fields = Napi::Object::New(env);  // the constructor's options, or the plain Error
  if (error.cudaCode) fields.Set("cudaCode", *error.cudaCode);
  if (error.nvmlCode) fields.Set("nvmlCode", *error.nvmlCode);
  if (!error.call.empty()) fields.Set("call", error.call);
  if (!state.errorClass.IsEmpty()) {
    return state.errorClass.New({Napi::String::New(env, error.code), Napi::String::New(env, error.what()), fields});
  }
  Napi::Object plain = Napi::Error::New(env, error.what()).Value();
  plain.Set("code", error.code);
  if (error.cudaCode) plain.Set("cudaCode", *error.cudaCode);
  if (error.nvmlCode) plain.Set("nvmlCode", *error.nvmlCode);
  if (!error.call.empty()) plain.Set("call", error.call);
  return plain;
}

Napi::Promise RejectedPromise(Napi::Env env, const NativeError& error) {
  Napi::Promise::Deferred deferred = Napi::Promise::Deferred::New(env);
  deferred.Reject(ToJsError(env, error));
  return deferred.Promise();
}

}  // namespace vramfit
