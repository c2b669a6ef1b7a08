// replayStep(order, bytes, capacity, maxSplit, maxRounding, divisions[, segments]): src/fit/cachingAllocator.ts's replay at a capacity, natively (step_replay.h).
//
// test/native/replayStep.test.ts checks that both replays give the same figures and the same
// segment log (the driver calls in order, asked for with `segments`: what a device probe
// replays). It exists for speed: a fresh process runs the TypeScript replay's loop cold, several
// milliseconds for 10,000 events. Synchronous and pure (no driver, no device): it runs on the JS thread.
#include <algorithm>

#include "addon_functions.h"
#include "step_replay.h"

namespace vramfit {

Napi::Value ReplayStep(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 6 || !info[0].IsTypedArray() || !info[1].IsTypedArray() || !info[2].IsNumber() || !info[3].IsNumber() || !info[4].IsNumber() || !info[5].IsTypedArray()) {
    throw Napi::TypeError::New(env, "replayStep(order: Int32Array, bytes: Float64Array, capacity, maxSplit, maxRounding, divisions: Float64Array, segments?: boolean)");
  }
  const Napi::TypedArray orderArray = info[0].As<Napi::TypedArray>();
  const Napi::TypedArray bytesArray = info[1].As<Napi::TypedArray>();
  const Napi::TypedArray divisionsArray = info[5].As<Napi::TypedArray>();
  if (orderArray.TypedArrayType() != napi_int32_array || bytesArray.TypedArrayType() != napi_float64_array || divisionsArray.TypedArrayType() != napi_float64_array) {
    throw Napi::TypeError::New(env, "replayStep: order must be an Int32Array, bytes and divisions Float64Arrays");
  }
  const auto order = orderArray.As<Napi::Int32Array>();
  const auto bytes = bytesArray.As<Napi::Float64Array>();
  const auto divisions = divisionsArray.As<Napi::Float64Array>();
  if (divisions.ElementLength() == 0) throw Napi::TypeError::New(env, "replayStep: divisions must not be empty");
  // Infinity crosses Node-API as a double: no limit, unlimited max_split_size.
  const bool segments = info.Length() > 6 && info[6].ToBoolean().Value();
  StepReplay replay(info[2].As<Napi::Number>().DoubleValue(), info[3].As<Napi::Number>().DoubleValue(), info[4].As<Napi::Number>().DoubleValue(), divisions.Data(), divisions.ElementLength(), segments);
  const int64_t failedAt = replay.Run(order.Data(), order.ElementLength(), bytes.Data(), bytes.ElementLength());
  Napi::Object result = Napi::Object::New(env);
  result.Set("fits", failedAt < 0);
  result.Set("reservedPeakBytes", replay.reservedPeak);
  result.Set("allocatedPeakBytes", replay.allocatedPeak);
  result.Set("cudaMallocs", replay.mallocs);
  result.Set("cudaFrees", replay.frees);
  result.Set("allocRetries", replay.retries);
  result.Set("failedAt", static_cast<double>(failedAt));
  if (segments) {
    Napi::Float64Array log = Napi::Float64Array::New(env, replay.log.size());
    std::copy(replay.log.begin(), replay.log.end(), log.Data());
    result.Set("segmentLog", log);
  }
  return result;
}

}  // namespace vramfit
