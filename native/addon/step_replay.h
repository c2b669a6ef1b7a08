// The caching allocator's replay of a step at a capacity (replay_step.cc's core, free of Node-API): src/fit/cachingAllocator.ts's rules, natively.
//
// The same rules, in the same order, as replayAtCapacity in src/fit/cachingAllocator.ts (which
// cites PyTorch's c10/cuda/CUDACachingAllocator.cpp for each); test/native/replayStep.test.ts
// checks that both give the same figures and the same segment log.
#ifndef VRAMFIT_STEP_REPLAY_H
#define VRAMFIT_STEP_REPLAY_H

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "free_pool.h"

namespace vramfit {

constexpr double kMinBlockSize = 512;
constexpr double kSmallSize = 1048576;
constexpr double kSmallBuffer = 2097152;
constexpr double kLargeBuffer = 20971520;
constexpr double kMinLargeAlloc = 10485760;
constexpr double kRoundLarge = 2097152;

// What a replay is asked (replay_step.cc reads it from its arguments, and the replay keeps it as
// given): the device's capacity for the job's segments and PYTORCH_CUDA_ALLOC_CONF's settings.
// Infinity: no limit (capacity), unlimited max_split_size (maxSplit).
struct ReplayConfig {
  double capacity = 0;
  double maxSplit = 0;
  double maxRounding = 0;           // max_non_split_rounding
  std::vector<double> divisions;    // roundup_power2_divisions, at least one
  bool segments = false;            // keep the segment log (`log`)
};

class StepReplay {
 public:
  explicit StepReplay(ReplayConfig config)
      : config_(std::move(config)),
        plainRounding_(std::all_of(config_.divisions.begin(), config_.divisions.end(), [](double n) { return n <= 1; })) {}

  const ReplayConfig& config() const { return config_; }

  // Returns the index of the allocation that ran out of memory, or -1.
  int64_t Run(const int32_t* order, size_t events, const double* bytes, size_t tensors) {
    std::vector<int32_t> live(tensors, -1);
    blocks_.reserve(std::min<size_t>(2 * tensors + 2, 3000));
    for (size_t k = 0; k < events; k++) {
      const int32_t code = order[k];
      if (code < 0) {
        const size_t tensor = static_cast<size_t>(~code);
        if (tensor >= tensors || live[tensor] < 0) continue;
        Free(live[tensor]);
        live[tensor] = -1;
        continue;
      }
      if (static_cast<size_t>(code) >= tensors) continue;
      const double request = bytes[code];
      if (!(request > 0)) continue;
      const int32_t id = Malloc(request);
      if (id < 0) return static_cast<int64_t>(k);
      live[code] = id;
    }
    return -1;
  }

  double reservedPeak = 0;
  double allocatedPeak = 0;
  double mallocs = 0;
  double frees = 0;
  double retries = 0;
  // With `segments`: +bytes for each cudaMalloc, -(k + 1) for the cudaFree of the k-th; a replay
  // that does not fit ends with the cudaMalloc that failed (cachingAllocator.ts's segmentLog).
  std::vector<double> log;

 private:
  double RoundSize(double request) const {
    if (request < kMinBlockSize) return kMinBlockSize;
    if (!plainRounding_) {
      // floor(log2(request)) and 2^that by frexp/ldexp, exact for whole numbers below 2^53: log2 and exp2
      // bind to GLIBC_2.29 symbols, above the prebuild's glibc 2.28 floor (docs/install.md).
      int exponent = 0;
      std::frexp(request, &exponent);
      const double log2 = exponent - 1;
      const double index = std::min(std::max(0.0, log2 - 20), static_cast<double>(config_.divisions.size() - 1));
      const double n = config_.divisions[static_cast<size_t>(index)];
      if (n > 1 && request > kMinBlockSize * n) {
        const double floor = std::ldexp(1.0, exponent - 1);
        if (floor == request) return request;
        const double step = floor / n;
        if (step < 1) return floor * 2;
        return std::ceil(request / step) * step;
      }
    }
    return std::ceil(request / kMinBlockSize) * kMinBlockSize;
  }

  static double SegmentSize(double size) {
    if (size <= kSmallSize) return kSmallBuffer;
    if (size < kMinLargeAlloc) return kLargeBuffer;
    return std::ceil(size / kRoundLarge) * kRoundLarge;
  }

  // A block from the spare ones (those merged away or released), or a new one: the blocks in use
  // stay few and close together, as cachingAllocator.ts's `spare`.
  int32_t NewBlock(double address, double size, int32_t segment, bool small) {
    int32_t id = spare_;
    if (id >= 0) spare_ = blocks_[static_cast<size_t>(id)].poolNext;
    else {
      id = static_cast<int32_t>(blocks_.size());
      blocks_.emplace_back();
    }
    blocks_[static_cast<size_t>(id)] = Block{address, size, -1, -1, -1, -1, segment, false, small};
    return id;
  }

  void DropBlock(int32_t id) {
    blocks_[static_cast<size_t>(id)].poolNext = spare_;
    spare_ = id;
  }

  int32_t AllocBlock(double segmentBytes, bool small) {
    if (reserved_ + segmentBytes > config_.capacity) return -1;
    const int32_t id = NewBlock(nextAddress_, segmentBytes, static_cast<int32_t>(mallocs), small);
    if (config_.segments) log.push_back(segmentBytes);
    nextAddress_ += segmentBytes;
    mallocs += 1;
    reserved_ += segmentBytes;
    reservedPeak = std::max(reservedPeak, reserved_);
    return id;
  }

  void LogFree(int32_t id) {
    if (config_.segments) log.push_back(-(blocks_[static_cast<size_t>(id)].segment + 1.0));
  }

  // release_block: cudaFree a cached block that is a whole segment.
  void Release(FreePool& pool, int32_t id) {
    pool.Remove(id);
    LogFree(id);
    reserved_ -= blocks_[static_cast<size_t>(id)].size;
    frees += 1;
    DropBlock(id);
  }

  bool ReleaseAvailable(FreePool& pool, double size) {
    if (!std::isfinite(config_.maxSplit)) return false;
    const double key = size < config_.maxSplit ? config_.maxSplit : size;
    const int32_t found = pool.FirstAtLeast(key);
    if (found >= 0) {
      Release(pool, found);
      return true;
    }
    double released = 0;
    for (int32_t last = pool.Largest(); last >= 0; last = pool.Largest()) {
      const double s = blocks_[static_cast<size_t>(last)].size;
      if (released >= key || s < config_.maxSplit) break;
      released += s;
      Release(pool, last);
    }
    return released >= key;
  }

  void ReleaseCached() {
    for (FreePool* pool : {&large_, &small_}) {
      pool->RemoveIf([this](int32_t id) {
        const Block& b = blocks_[static_cast<size_t>(id)];
        if (b.prev != -1 || b.next != -1) return false;
        LogFree(id);
        reserved_ -= b.size;
        frees += 1;
        return true;
      }, [this](int32_t id) { DropBlock(id); });
    }
  }

  void Free(int32_t id) {
    Block* b = &blocks_[static_cast<size_t>(id)];
    FreePool& pool = b->small ? small_ : large_;
    allocated_ -= b->size;
    b->allocated = false;
    const int32_t before = b->prev;
    if (before >= 0 && !blocks_[static_cast<size_t>(before)].allocated) {
      const Block& p = blocks_[static_cast<size_t>(before)];
      pool.Remove(before);
      b->address = p.address;
      b->size += p.size;
      b->prev = p.prev;
      if (b->prev >= 0) blocks_[static_cast<size_t>(b->prev)].next = id;
      DropBlock(before);
    }
    const int32_t after = b->next;
    if (after >= 0 && !blocks_[static_cast<size_t>(after)].allocated) {
      const Block& n = blocks_[static_cast<size_t>(after)];
      pool.Remove(after);
      b->size += n.size;
      b->next = n.next;
      if (b->next >= 0) blocks_[static_cast<size_t>(b->next)].prev = id;
      DropBlock(after);
    }
    pool.Insert(id);
  }

  int32_t Malloc(double request) {
    const double size = plainRounding_ ? (request < kMinBlockSize ? kMinBlockSize : std::ceil(request / kMinBlockSize) * kMinBlockSize) : RoundSize(request);
    const bool small = size <= kSmallSize;
    FreePool& pool = small ? small_ : large_;
    int32_t id = pool.FirstAtLeast(size);
    if (id >= 0) {
      const double s = blocks_[static_cast<size_t>(id)].size;
      if ((size < config_.maxSplit && s >= config_.maxSplit) || (size >= config_.maxSplit && s >= size + config_.maxRounding)) id = -1;
    }
    const bool cached = id >= 0;
    if (!cached) {
      const double segmentBytes = SegmentSize(size);
      id = AllocBlock(segmentBytes, small);
      if (id < 0 && ReleaseAvailable(pool, size)) id = AllocBlock(segmentBytes, small);
      if (id < 0) {
        ReleaseCached();
        retries += 1;
        id = AllocBlock(segmentBytes, small);
      }
      if (id < 0) {
        if (config_.segments) log.push_back(segmentBytes);
        return -1;
      }
    }
    const double remaining = blocks_[static_cast<size_t>(id)].size - size;
    if (small ? remaining >= kMinBlockSize : (size < config_.maxSplit && remaining > kSmallSize)) {
      // should_split: the request takes the front, a new block; the rest keeps the block it was
      // cut from, and with it, where its key allows, that block's place in the pool.
      const int32_t rest = id;
      id = NewBlock(blocks_[static_cast<size_t>(rest)].address, size, blocks_[static_cast<size_t>(rest)].segment, small);
      Block& b = blocks_[static_cast<size_t>(id)];
      Block& r = blocks_[static_cast<size_t>(rest)];
      b.prev = r.prev;
      b.next = rest;
      if (r.prev >= 0) blocks_[static_cast<size_t>(r.prev)].next = id;
      r.prev = id;
      if (cached) pool.Shrink(rest, remaining, r.address + size);
      else {
        r.size = remaining;
        r.address += size;
        pool.Insert(rest);
      }
    } else if (cached) {
      pool.Remove(id);
    }
    Block& b = blocks_[static_cast<size_t>(id)];
    b.allocated = true;
    allocated_ += b.size;
    allocatedPeak = std::max(allocatedPeak, allocated_);
    return id;
  }

  const ReplayConfig config_;
  const bool plainRounding_;
  std::vector<Block> blocks_;
  int32_t spare_ = -1;  // the first spare block, linked by poolNext
  FreePool small_{blocks_};
  FreePool large_{blocks_};
  double reserved_ = 0;
  double allocated_ = 0;
  double nextAddress_ = 0;
};

}  // namespace vramfit

#endif  // VRAMFIT_STEP_REPLAY_H
