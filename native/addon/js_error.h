// Turning NativeErrors into instances of the JS error class (better-sqlite3's pattern).
#ifndef VRAMFIT_JS_ERROR_H
#define VRAMFIT_JS_ERROR_H

#include <napi.h>

#include "native_error.h"

namespace vramfit {

// setErrorClass(VramfitError): stores the class that every rejection is an instance of.
void SetErrorClass(const Napi::CallbackInfo& info);

// `new VramfitError(code, message, {cudaCode, call})`; before setErrorClass, a plain Error with
// the same fields, so nothing is lost when the order of calls is wrong.
Napi::Value ToJsError(Napi::Env env, const NativeError& error);

Napi::Promise RejectedPromise(Napi::Env env, const NativeError& error);

}  // namespace vramfit

#endif  // VRAMFIT_JS_ERROR_H
