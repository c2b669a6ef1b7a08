// What a native replay is asked (replay_step.cc reads it from its io array), and PyTorch's request rounding both replays share (step_replay.h, expandable_replay.h).
//
// Constants and round_size from c10/cuda/CUDACachingAllocator.cpp, as src/fit/cachingAllocator.ts
// cites them; the TypeScript and native replays must round alike (test/native/replayStep.test.ts).
#ifndef VRAMFIT_REPLAY_CONFIG_H
#define VRAMFIT_REPLAY_CONFIG_H

#include <cmath>
#include <cstddef>
#include <cstdint>

namespace vramfit {

constexpr double kMinBlockSize = 512;
constexpr double kSmallSize = 1048576;
constexpr double kSmallBuffer = 2097152;
constexpr double kLargeBuffer = 20971520;
constexpr double kMinLargeAlloc = 10485760;
constexpr double kRoundLarge = 2097152;

// roundup_power2_divisions' entries at most (PyTorch's kRoundUpPowerOfTwoIntervals).
constexpr size_t kMaxDivisions = 16;

// The device's capacity for the job's memory and PYTORCH_CUDA_ALLOC_CONF's settings, kept as given.
// Infinity: no limit (capacity), unlimited max_split_size (maxSplit).
struct ReplayConfig {
  double capacity = 0;
  double maxSplit = 0;
  double maxRounding = 0;                // max_non_split_rounding
  double largeSegment = kLargeBuffer;    // large_segment_size: a 1-10 MiB request's segment; the large pool's page with expandable segments
  double divisions[kMaxDivisions] = {};  // roundup_power2_divisions, divisionCount of them
  size_t divisionCount = 1;              // at least one
  bool segments = false;                 // keep a log: of driver calls, or with `pages` ...
  bool pages = false;                    // ... (expandable segments) of pages mapped and unmapped
};

// ceil for a non-negative double, inline (std::ceil may be a libm call where SSE4.1 is not assumed).
inline double CeilPositive(double x) {
  if (!(x < 4503599627370496.0)) return x;  // 2^52: already whole (or NaN/Infinity)
  const double whole = static_cast<double>(static_cast<int64_t>(x));
  return whole < x ? whole + 1 : whole;
}

// round_size: a multiple of kMinBlockSize, or with roundup_power2_divisions the next of n equal
// divisions of the request's power-of-two interval (roundup_power2_next_division).
inline double RoundSize(const ReplayConfig& config, double request) {
  if (request < kMinBlockSize) return kMinBlockSize;
  // floor(log2(request)) and 2^that by frexp/ldexp, exact for whole numbers below 2^53: log2 and exp2
  // bind to GLIBC_2.29 symbols, above the prebuild's glibc 2.28 floor (docs/install.md).
  int exponent = 0;
  std::frexp(request, &exponent);
  const double log2 = exponent - 1;
  const double top = static_cast<double>(config.divisionCount - 1);
  const double index = log2 - 20 < 0 ? 0 : log2 - 20 > top ? top : log2 - 20;
  const double n = config.divisions[static_cast<size_t>(index)];
  if (n > 1 && request > kMinBlockSize * n) {
    const double floor = std::ldexp(1.0, exponent - 1);
    if (floor == request) return request;
    const double step = floor / n;
    if (step < 1) return floor * 2;
    return CeilPositive(request / step) * step;
  }
  return CeilPositive(request / kMinBlockSize) * kMinBlockSize;
}

}  // namespace vramfit

#endif  // VRAMFIT_REPLAY_CONFIG_H
