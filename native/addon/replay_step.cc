// replayInto(order, bytes, io): src/fit/cachingAllocator.ts's replay at a capacity, natively (step_replay.h, which it hands the arguments as a ReplayConfig).
//
// test/native/replayStep.test.ts checks that both replays give the same figures and the same
// segment log (the driver calls in order, asked for in `io`: what a device probe replays). It
// exists for speed: a fresh process runs the TypeScript replay's loop cold, several milliseconds
// for 10,000 events. Synchronous and pure (no driver, no device): it runs on the JS thread.
//
// A fresh process's first replay is what scripts/replay-speed.mjs times, and there the call's
// edges cost as much as a third of the replay: each Node-API function is bound on its first call
// (lazy binding, a few µs each) and each JS value read through it costs a call. So every input
// but the two arrays comes in one Float64Array, `io`, which the figures then overwrite: three
// typed arrays, one kind of read (an earlier form took eight arguments of five kinds, and wrote
// the figures into a separate array: the object of seven properties it replaced took 35–85 µs).
//   io in:  [capacity, max_split_size, max_non_split_rounding, segments (1/0), n, n divisions…]
//   io out: [fits (1/0), reserved peak, allocated peak, cudaMallocs, cudaFrees, retries, failedAt]
// Infinity: no limit (capacity), unlimited max_split_size. With segments it returns the segment
// log as a new Float64Array, else undefined.
#include <algorithm>

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

// io's places (src/fit/cachingAllocator.ts writes and reads them in this order).
enum Input { kCapacity, kMaxSplit, kMaxRounding, kSegments, kDivisionCount, kDivisions };
enum Figure { kFits, kReservedPeak, kAllocatedPeak, kMallocs, kFrees, kRetries, kFailedAt, kFigures };

// The configuration io holds, or false where it holds none.
bool ConfigOf(const double* io, size_t length, ReplayConfig* config) {
  if (length < kDivisions || length < kFigures) return false;
  const double count = io[kDivisionCount];
  if (!(count >= 1 && count <= kMaxDivisions && count == static_cast<double>(static_cast<size_t>(count)))) return false;
  config->divisionCount = static_cast<size_t>(count);
  if (length < kDivisions + config->divisionCount) return false;
  config->capacity = io[kCapacity];
  config->maxSplit = io[kMaxSplit];
  config->maxRounding = io[kMaxRounding];
  config->segments = io[kSegments] != 0;
  // A loop, not std::copy: that would be a call to memmove, one more symbol to bind.
  for (size_t k = 0; k < config->divisionCount; k++) config->divisions[k] = io[kDivisions + k];
  return true;
}

}  // namespace

Napi::Value ReplayInto(const Napi::CallbackInfo& info) {
  napi_env env = info.Env();
  int32_t* order = nullptr;
  double* bytes = nullptr;
  double* io = nullptr;
  size_t events = 0;
  size_t tensors = 0;
  size_t ioLength = 0;
  ReplayConfig config;
  if (info.Length() < 3 || !TypedArrayOf(env, info[0], napi_int32_array, &order, &events) || !TypedArrayOf(env, info[1], napi_float64_array, &bytes, &tensors) ||
      !TypedArrayOf(env, info[2], napi_float64_array, &io, &ioLength) || !ConfigOf(io, ioLength, &config)) {
    throw Napi::TypeError::New(env, "replayInto(order: Int32Array, bytes: Float64Array, io: Float64Array [capacity, maxSplit, maxRounding, segments, n, ...n divisions (1 to 16)], at least 7 long)");
  }
  StepReplay replay(config);
  const int64_t failedAt = replay.Run(order, events, bytes, tensors);
  io[kFits] = failedAt < 0 ? 1 : 0;
  io[kReservedPeak] = replay.reservedPeak;
  io[kAllocatedPeak] = replay.allocatedPeak;
  io[kMallocs] = replay.mallocs;
  io[kFrees] = replay.frees;
  io[kRetries] = replay.retries;
  io[kFailedAt] = static_cast<double>(failedAt);
  if (!config.segments) return Napi::Value();  // undefined
  Napi::Float64Array log = Napi::Float64Array::New(env, replay.log.size());
  std::copy(replay.log.begin(), replay.log.end(), log.Data());
  return log;
}

}  // namespace vramfit
