// replayStepInto(order, bytes, capacity, maxSplit, maxRounding, divisions, figures, segments): src/fit/cachingAllocator.ts's replay at a capacity, natively (step_replay.h).
//
// test/native/replayStep.test.ts checks that both replays give the same figures and the same
// segment log (the driver calls in order, asked for with `segments`: what a device probe
// replays). It exists for speed: a fresh process runs the TypeScript replay's loop cold, several
// milliseconds for 10,000 events. Synchronous and pure (no driver, no device): it runs on the JS thread.
//
// The figures go into the caller's Float64Array rather than into a new object: a fresh process's
// first replay spent 35–85 µs setting the seven properties of one (map transitions and string
// internalizing, measured with timers around each part), as long as the rest of the call.
#include <algorithm>

#include "addon_functions.h"
#include "step_replay.h"

namespace vramfit {
namespace {

// The elements of a typed array of the given type, or false (one Node-API call per array).
template <typename T>
bool TypedArrayOf(napi_env env, napi_value value, napi_typedarray_type type, T** data, size_t* length) {
  bool isTypedArray = false;
  if (napi_is_typedarray(env, value, &isTypedArray) != napi_ok || !isTypedArray) return false;
  napi_typedarray_type actual;
  void* elements = nullptr;
  if (napi_get_typedarray_info(env, value, &actual, length, &elements, nullptr, nullptr) != napi_ok || actual != type) return false;
  *data = static_cast<T*>(elements);
  return true;
}

// The figures' places in `figures` (src/fit/cachingAllocator.ts reads them in this order).
enum Figure { kFits, kReservedPeak, kAllocatedPeak, kMallocs, kFrees, kRetries, kFailedAt, kFigures };

}  // namespace

Napi::Value ReplayStepInto(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const char* usage = "replayStepInto(order: Int32Array, bytes: Float64Array, capacity, maxSplit, maxRounding, divisions: Float64Array, figures: Float64Array(7), segments: boolean)";
  if (info.Length() < 8 || !info[2].IsNumber() || !info[3].IsNumber() || !info[4].IsNumber()) throw Napi::TypeError::New(env, usage);
  int32_t* order = nullptr;
  double* bytes = nullptr;
  double* divisions = nullptr;
  double* figures = nullptr;
  size_t events = 0;
  size_t tensors = 0;
  size_t divisionCount = 0;
  size_t figureCount = 0;
  if (!TypedArrayOf(env, info[0], napi_int32_array, &order, &events) || !TypedArrayOf(env, info[1], napi_float64_array, &bytes, &tensors) ||
      !TypedArrayOf(env, info[5], napi_float64_array, &divisions, &divisionCount) || !TypedArrayOf(env, info[6], napi_float64_array, &figures, &figureCount) ||
      divisionCount == 0 || figureCount < kFigures) {
    throw Napi::TypeError::New(env, usage);
  }
  // Infinity crosses Node-API as a double: no limit, unlimited max_split_size.
  const bool segments = info[7].ToBoolean().Value();
  StepReplay replay(info[2].As<Napi::Number>().DoubleValue(), info[3].As<Napi::Number>().DoubleValue(), info[4].As<Napi::Number>().DoubleValue(), divisions, divisionCount, segments);
  const int64_t failedAt = replay.Run(order, events, bytes, tensors);
  figures[kFits] = failedAt < 0 ? 1 : 0;
  figures[kReservedPeak] = replay.reservedPeak;
  figures[kAllocatedPeak] = replay.allocatedPeak;
  figures[kMallocs] = replay.mallocs;
  figures[kFrees] = replay.frees;
  figures[kRetries] = replay.retries;
  figures[kFailedAt] = static_cast<double>(failedAt);
  if (!segments) return env.Undefined();
  Napi::Float64Array log = Napi::Float64Array::New(env, replay.log.size());
  std::copy(replay.log.begin(), replay.log.end(), log.Data());
  return log;
}

}  // namespace vramfit
