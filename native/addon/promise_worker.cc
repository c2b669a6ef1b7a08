// Settling a worker's promise.
#include "promise_worker.h"

namespace vramfit {

PromiseWorker::PromiseWorker(Napi::Env env, const char* name)
    : Napi::AsyncWorker(env, name), deferred_(Napi::Promise::Deferred::New(env)) {}

Napi::Promise PromiseWorker::Start() {
  Napi::Promise promise = deferred_.Promise();
  Queue();  // from here on the worker owns itself and is deleted after OnOK/OnError
  return promise;
}

void PromiseWorker::Execute() {
  try {
    Run();
  } catch (const NativeError& error) {
    error_.emplace(error);
  } catch (const std::exception& error) {
    SetError(error.what());  // e.g. bad_alloc: surfaces as a plain Error in OnError
  }
}

void PromiseWorker::OnOK() {
  try {
    if (error_) {
      deferred_.Reject(ToJsError(Env(), *error_));
    } else {
      deferred_.Resolve(Result(Env()));
    }
  } catch (const Napi::Error& error) {  // the error class's constructor itself threw
    deferred_.Reject(error.Value());
  }
}

void PromiseWorker::OnError(const Napi::Error& error) {
  deferred_.Reject(error.Value());
}

}  // namespace vramfit
