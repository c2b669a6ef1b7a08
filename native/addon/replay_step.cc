// replayStepInto(order, bytes, capacity, maxSplit, maxRounding, divisions, figures, segments): src/fit/cachingAllocator.ts's replay at a capacity, natively (step_replay.h, which it hands the arguments as a ReplayConfig).
//
// test/native/replayStep.test.ts checks that both replays give the same figures and the same
// segment log (the driver calls in order, asked for with `segments`: what a device probe
// replays). It exists for speed: a fresh process runs the TypeScript replay's loop cold, several
// milliseconds for 10,000 events. Synchronous and pure (no driver, no device): it runs on the JS thread.
//
// A fresh process's first replay is what scripts/replay-speed.mjs times, and there the call's
// edges cost as much as the replay (timers around each part): so the figures go into the caller's
// Float64Array rather than into a new object (whose seven properties took 35–85 µs), the
// arguments are read with plain Node-API calls, as few kinds as will do (the first call of each
// kind resolves its symbol, a few µs), and `divisions` is the configuration's own array (making
// a Float64Array of it took 20–30 µs).
#include <algorithm>
#include <utility>
#include <vector>

#include "addon_functions.h"
#include "step_replay.h"

namespace vramfit {
namespace {

// The elements of a typed array of the given type, or false.
template <typename T>
bool TypedArrayOf(napi_env env, napi_value value, napi_typedarray_type type, T** data, size_t* length) {
  napi_typedarray_type actual;
  void* elements = nullptr;
  if (napi_get_typedarray_info(env, value, &actual, length, &elements, nullptr, nullptr) != napi_ok || actual != type) return false;
  *data = static_cast<T*>(elements);
  return true;
}

// An array of numbers, or false.
bool NumbersOf(napi_env env, napi_value value, std::vector<double>* numbers) {
  uint32_t length = 0;
  if (napi_get_array_length(env, value, &length) != napi_ok) return false;
  numbers->resize(length);
  for (uint32_t k = 0; k < length; k++) {
    napi_value element;
    if (napi_get_element(env, value, k, &element) != napi_ok || napi_get_value_double(env, element, &(*numbers)[k]) != napi_ok) return false;
  }
  return true;
}

// The figures' places in `figures` (src/fit/cachingAllocator.ts reads them in this order).
enum Figure { kFits, kReservedPeak, kAllocatedPeak, kMallocs, kFrees, kRetries, kFailedAt, kFigures };

}  // namespace

Napi::Value ReplayStepInto(const Napi::CallbackInfo& info) {
  napi_env env = info.Env();
  int32_t* order = nullptr;
  double* bytes = nullptr;
  double* figures = nullptr;
  size_t events = 0;
  size_t tensors = 0;
  size_t figureCount = 0;
  ReplayConfig config;
  // Infinity crosses Node-API as a double: no limit, unlimited max_split_size.
  if (info.Length() < 8 || !TypedArrayOf(env, info[0], napi_int32_array, &order, &events) || !TypedArrayOf(env, info[1], napi_float64_array, &bytes, &tensors) ||
      napi_get_value_double(env, info[2], &config.capacity) != napi_ok || napi_get_value_double(env, info[3], &config.maxSplit) != napi_ok ||
      napi_get_value_double(env, info[4], &config.maxRounding) != napi_ok || !NumbersOf(env, info[5], &config.divisions) || config.divisions.empty() ||
      !TypedArrayOf(env, info[6], napi_float64_array, &figures, &figureCount) || figureCount < kFigures || napi_get_value_bool(env, info[7], &config.segments) != napi_ok) {
    throw Napi::TypeError::New(info.Env(), "replayStepInto(order: Int32Array, bytes: Float64Array, capacity: number, maxSplit: number, maxRounding: number, divisions: number[], figures: Float64Array(7), segments: boolean)");
  }
  StepReplay replay(std::move(config));
  const int64_t failedAt = replay.Run(order, events, bytes, tensors);
  figures[kFits] = failedAt < 0 ? 1 : 0;
  figures[kReservedPeak] = replay.reservedPeak;
  figures[kAllocatedPeak] = replay.allocatedPeak;
  figures[kMallocs] = replay.mallocs;
  figures[kFrees] = replay.frees;
  figures[kRetries] = replay.retries;
  figures[kFailedAt] = static_cast<double>(failedAt);
  if (!replay.config().segments) return Napi::Value();  // undefined
  Napi::Float64Array log = Napi::Float64Array::New(info.Env(), replay.log.size());
  std::copy(replay.log.begin(), replay.log.end(), log.Data());
  return log;
}

}  // namespace vramfit
