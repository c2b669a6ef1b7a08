// The base of every driver call from JS: an AsyncWorker that settles a Promise.
#ifndef VRAMFIT_PROMISE_WORKER_H
#define VRAMFIT_PROMISE_WORKER_H

#include <napi.h>

#include <optional>

#include "js_error.h"
#include "native_error.h"

namespace vramfit {

// Run() does the blocking driver work on a libuv pool thread and must not call Node-API;
// Result() builds the JS value on the JS thread. A NativeError thrown by Run() rejects the
// promise with the JS error class; nothing escapes as an uncaught exception.
class PromiseWorker : public Napi::AsyncWorker {
 public:
  Napi::Promise Start();

 protected:
  PromiseWorker(Napi::Env env, const char* name);
  virtual void Run() = 0;
  virtual Napi::Value Result(Napi::Env env) = 0;

 private:
  void Execute() final;
  void OnOK() final;
  void OnError(const Napi::Error& error) final;

  Napi::Promise::Deferred deferred_;
  std::optional<NativeError> error_;
};

// Validates arguments on the JS thread (inside `make`) and starts the worker it returns. Bad
// arguments reject the promise rather than throw, so callers handle every failure one way.
template <typename Make>
Napi::Value StartWorker(Napi::Env env, Make make) {
  try {
    return make()->Start();
  } catch (const NativeError& error) {
    return RejectedPromise(env, error);
  } catch (const Napi::Error& error) {  // a JS exception while reading the arguments
    Napi::Promise::Deferred deferred = Napi::Promise::Deferred::New(env);
    deferred.Reject(error.Value());
    return deferred.Promise();
  }
}

}  // namespace vramfit

#endif  // VRAMFIT_PROMISE_WORKER_H
