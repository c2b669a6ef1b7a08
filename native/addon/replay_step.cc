// replayInto and replayExpandableInto(order, bytes, io): src/fit/cachingAllocator.ts's and src/fit/expandableSegments.ts's replays at a capacity, natively (step_replay.h, expandable_replay.h).
//
// test/native/replayStep.test.ts and replayExpandable.test.ts check that each gives the figures
// and the log of driver calls of its TypeScript replay (the segment log asked for in `io`: what a
// device probe replays; the map log for expandable segments). They exist for speed: a fresh
// process runs a TypeScript replay's loop cold, several milliseconds for 10,000 events (tens for
// expandable segments). Synchronous and pure (no driver, no device): they run on the JS thread.
//
// A fresh process's first replay is what scripts/replay-speed.mjs times, and there the call's
// edges cost as much as a third of the replay: each Node-API function is bound on its first call
// (lazy binding, a few µs each) and each JS value read through it costs a call. So every input
// but the two arrays comes in one Float64Array, `io`, which the figures then overwrite: three
// typed arrays, one kind of read (an earlier form took eight arguments of five kinds, and wrote
// the figures into a separate array: the object of seven properties it replaced took 35–85 µs).
//   io in:  [capacity, max_split_size, max_non_split_rounding, log (0: none, 1: driver calls,
//            2: pages, expandable segments only), large_segment_size, n, n roundup_power2_divisions…]
//   io out: [fits (1/0), reserved peak, allocated peak, cudaMallocs, cudaFrees, retries, failedAt,
//            and where io is longer, the caching allocator's least refused reserve (below)]
// That last figure, `refused`, is the least reserved + segment an allocation was refused at
// (Infinity: none; NaN from the expandable replay, which does not give it). The replay is the same
// at every capacity in [reserved peak, refused): each allocation compares its reserve with the
// capacity, and those comparisons come out the same (src/fit/allocator.ts shares replays so). It
// overwrites the second division, read before the replay.
// Infinity: no limit (capacity), unlimited max_split_size. With segments it returns the log as a
// new Float64Array, else undefined. With expandable segments cudaMallocs counts maps, cudaFrees
// unmaps, and the capacity bounds the pages mapped; its page log is expandable_replay.h's.
#include <algorithm>
#include <limits>
#include <string>

#include "addon_functions.h"
#include "expandable_replay.h"
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
enum Input { kCapacity, kMaxSplit, kMaxRounding, kSegments, kLargeSegment, kDivisionCount, kDivisions };
enum Figure { kFits, kReservedPeak, kAllocatedPeak, kMallocs, kFrees, kRetries, kFailedAt, kFigures };
// Not required of io's length: written only where io holds it.
constexpr size_t kRefused = kFigures;

// The configuration io holds, or false where it holds none.
bool ConfigOf(const double* io, size_t length, ReplayConfig* config) {
  if (length < kDivisions || length < kFigures) return false;
  const double count = io[kDivisionCount];
  if (!(count >= 1 && count <= kMaxDivisions && count == static_cast<double>(static_cast<size_t>(count)))) return false;
  config->divisionCount = static_cast<size_t>(count);
  if (length < kDivisions + config->divisionCount || !(io[kLargeSegment] > 0)) return false;
  config->capacity = io[kCapacity];
  config->maxSplit = io[kMaxSplit];
  config->maxRounding = io[kMaxRounding];
  config->segments = io[kSegments] != 0;
  config->pages = io[kSegments] == 2;
  config->largeSegment = io[kLargeSegment];
  // A loop, not std::copy: that would be a call to memmove, one more symbol to bind.
  for (size_t k = 0; k < config->divisionCount; k++) config->divisions[k] = io[kDivisions + k];
  return true;
}

// The arguments of either replay, or a TypeError naming the function.
struct ReplayArguments {
  int32_t* order = nullptr;
  double* bytes = nullptr;
  double* io = nullptr;
  size_t events = 0;
  size_t tensors = 0;
  size_t ioLength = 0;
  ReplayConfig config;
};

ReplayArguments ArgumentsOf(const Napi::CallbackInfo& info, const char* name) {
  napi_env env = info.Env();
  ReplayArguments a;
  if (info.Length() < 3 || !TypedArrayOf(env, info[0], napi_int32_array, &a.order, &a.events) || !TypedArrayOf(env, info[1], napi_float64_array, &a.bytes, &a.tensors) ||
      !TypedArrayOf(env, info[2], napi_float64_array, &a.io, &a.ioLength) || !ConfigOf(a.io, a.ioLength, &a.config)) {
    throw Napi::TypeError::New(env, std::string(name) + "(order: Int32Array, bytes: Float64Array, io: Float64Array [capacity, maxSplit, maxRounding, segments, largeSegment, n, ...n divisions (1 to 16)], at least 7 long)");
  }
  return a;
}

// The figures into io, and the log as a Float64Array where one was asked for (else undefined).
template <typename Replay>
Napi::Value Answer(Napi::Env env, const ReplayArguments& a, const Replay& replay, double mallocs, double frees, int64_t failedAt, double refused) {
  double* io = a.io;
  io[kFits] = failedAt < 0 ? 1 : 0;
  io[kReservedPeak] = replay.reservedPeak;
  io[kAllocatedPeak] = replay.allocatedPeak;
  io[kMallocs] = mallocs;
  io[kFrees] = frees;
  io[kRetries] = replay.retries;
  io[kFailedAt] = static_cast<double>(failedAt);
  if (a.ioLength > kRefused) io[kRefused] = refused;
  if (!a.config.segments) return Napi::Value();  // undefined
  Napi::Float64Array log = Napi::Float64Array::New(env, replay.log.size());
  std::copy(replay.log.begin(), replay.log.end(), log.Data());
  return log;
}

}  // namespace

Napi::Value ReplayInto(const Napi::CallbackInfo& info) {
  const ReplayArguments a = ArgumentsOf(info, "replayInto");
  StepReplay replay(a.config);
  const int64_t failedAt = replay.Run(a.order, a.events, a.bytes, a.tensors);
  return Answer(info.Env(), a, replay, replay.mallocs, replay.frees, failedAt, replay.refused);
}

Napi::Value ReplayExpandableInto(const Napi::CallbackInfo& info) {
  const ReplayArguments a = ArgumentsOf(info, "replayExpandableInto");
  ExpandableReplay replay(a.config);
  const int64_t failedAt = replay.Run(a.order, a.events, a.bytes, a.tensors);
  return Answer(info.Env(), a, replay, replay.maps, replay.unmaps, failedAt, std::numeric_limits<double>::quiet_NaN());
}

}  // namespace vramfit
