// The caching allocator's replay of a step at a capacity (replay_step.cc's core, free of Node-API): src/fit/cachingAllocator.ts's rules, natively.
//
// The same rules, in the same order, as replayAtCapacity in src/fit/cachingAllocator.ts (which
// cites PyTorch's c10/cuda/CUDACachingAllocator.cpp for each); test/native/replayStep.test.ts
// checks that both give the same figures and the same segment log.
//
// Built for a fresh process's one replay (issue 23: 10,000 events in at most 1 ms, the call's
// edges included): the blocks live in one arena of plain records indexed by integers (malloc'd
// once per replay, grown by doubling, nothing allocated per event), the pools are free_pool.h's
// size classes threaded through those records, and the loop is compiled twice, once for the
// default configuration (no max_split_size, no roundup_power2_divisions: neither tested per
// event) and once for any other; large_segment_size is the segment of a 1-10 MiB request, as in
// cachingAllocator.ts' segmentSize. Memory comes from operator new and delete only, and nothing
// else of libc or libstdc++ is called without a segment log: each symbol an addon calls first is
// bound on that call (lazy binding), inside a fresh process's first replay.
#ifndef VRAMFIT_STEP_REPLAY_H
#define VRAMFIT_STEP_REPLAY_H

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <new>
#include <vector>

#include "free_pool.h"
#include "replay_config.h"

namespace vramfit {

class StepReplay {
 public:
  explicit StepReplay(const ReplayConfig& config) : config_(config) {
    plainRounding_ = true;
    for (size_t k = 0; k < config_.divisionCount; k++) plainRounding_ = plainRounding_ && config_.divisions[k] <= 1;
  }
  ~StepReplay() {
    ::operator delete(blocks_);
    ::operator delete(live_);
  }
  StepReplay(const StepReplay&) = delete;
  StepReplay& operator=(const StepReplay&) = delete;

  const ReplayConfig& config() const { return config_; }

  // Replays the step (once per StepReplay); returns the index of the allocation that ran out of memory, or -1.
  int64_t Run(const int32_t* order, size_t events, const double* bytes, size_t tensors) {
    // live[t]: tensor t's block + 1, 0 when it has none.
    // Each allocation makes at most two blocks (a segment and the rest of a split), and the spare
    // blocks are reused first: room for that many, up to 3,000 (120 KB, below glibc's mmap
    // threshold, so from the heap, whose pages are often touched already: a fresh mmap of room for
    // all of them page-faulted for each page used, 10 more faults on the random 10,000-event step).
    // From operator new, which the addon's own start binds (lazy binding): calloc, malloc and free
    // were three more symbols bound inside a fresh process's first replay, ~5 us each
    // (LD_BIND_NOW=1 took the addon's first call from 42 to 23 us), operator delete is one.
    capacity_ = static_cast<int32_t>(std::min<size_t>(2 * tensors + 2, 3000));
    live_ = static_cast<int32_t*>(::operator new((tensors + 1) * sizeof(int32_t)));
    Clear(live_, tensors + 1);
    blocks_ = static_cast<Block*>(::operator new(capacity_ * sizeof(Block)));
    const bool plain = plainRounding_ && !std::isfinite(config_.maxSplit);
    return plain ? Loop<true>(order, events, bytes, tensors) : Loop<false>(order, events, bytes, tensors);
  }

  double reservedPeak = 0;
  double allocatedPeak = 0;
  double mallocs = 0;
  double frees = 0;
  double retries = 0;
  // The least reserve an allocation was refused at (reserved + segment > capacity; Infinity: none).
  // Every capacity in [reservedPeak, refused) makes the same choices, so gets this replay.
  double refused = std::numeric_limits<double>::infinity();
  // With `segments`: +bytes for each cudaMalloc, -(k + 1) for the cudaFree of the k-th; a replay
  // that does not fit ends with the cudaMalloc that failed (cachingAllocator.ts's segmentLog).
  std::vector<double> log;

 private:
  template <bool kPlain>
  int64_t Loop(const int32_t* order, size_t events, const double* bytes, size_t tensors) {
    int32_t* const live = live_;
    for (size_t k = 0; k < events; k++) {
      const int32_t code = order[k];
      if (code < 0) {
        const size_t tensor = static_cast<size_t>(~code);
        if (tensor >= tensors) continue;
        const int32_t id = live[tensor] - 1;
        if (id < 0) continue;
        live[tensor] = 0;
        Free(id);
        continue;
      }
      if (static_cast<size_t>(code) >= tensors) continue;
      const double request = bytes[code];
      if (!(request > 0)) continue;
      const int32_t id = Malloc<kPlain>(request);
      if (id < 0) return static_cast<int64_t>(k);
      live[code] = id + 1;
    }
    return -1;
  }

  double SegmentSize(double size) const {
    if (size <= kSmallSize) return kSmallBuffer;
    if (size < kMinLargeAlloc) return config_.largeSegment;
    return CeilPositive(size / kRoundLarge) * kRoundLarge;
  }

  // A block from the spare ones (those merged away or released), or a new one at the arena's end:
  // the blocks in use stay few and close together, as cachingAllocator.ts's `spare`.
  int32_t NewBlock(double address, double size, int32_t segment, bool small) {
    int32_t id = spare_;
    if (id >= 0) spare_ = blocks_[id].poolNext;
    else {
      if (made_ == capacity_) Grow();
      id = made_++;
    }
    Block& b = blocks_[id];
    b.address = address;
    b.size = size;
    b.prev = -1;
    b.next = -1;
    b.segment = segment;
    b.allocated = 0;
    b.small = small;
    return id;
  }

  void Grow() {
    Block* more = static_cast<Block*>(::operator new(2 * static_cast<size_t>(capacity_) * sizeof(Block)));
    std::copy(blocks_, blocks_ + made_, more);
    ::operator delete(blocks_);
    blocks_ = more;
    capacity_ *= 2;
  }

  // Zeros, by a loop GCC leaves a loop (a memset would be one more symbol to bind).
  __attribute__((optimize("no-tree-loop-distribute-patterns"))) static void Clear(int32_t* values, size_t count) {
    for (size_t k = 0; k < count; k++) values[k] = 0;
  }

  void DropBlock(int32_t id) {
    blocks_[id].poolNext = spare_;
    spare_ = id;
  }

  int32_t AllocBlock(double segmentBytes, bool small) {
    if (reserved_ + segmentBytes > config_.capacity) {
      refused = std::min(refused, reserved_ + segmentBytes);
      return -1;
    }
    const int32_t id = NewBlock(nextAddress_, segmentBytes, static_cast<int32_t>(mallocs), small);
    if (config_.segments) log.push_back(segmentBytes);
    nextAddress_ += segmentBytes;
    mallocs += 1;
    reserved_ += segmentBytes;
    reservedPeak = std::max(reservedPeak, reserved_);
    return id;
  }

  void LogFree(int32_t id) {
    if (config_.segments) log.push_back(-(blocks_[id].segment + 1.0));
  }

  // release_block: cudaFree a cached block that is a whole segment.
  void Release(FreePool<Block>& pool, int32_t id) {
    pool.Remove(blocks_, id);
    LogFree(id);
    reserved_ -= blocks_[id].size;
    frees += 1;
    DropBlock(id);
  }

  bool ReleaseAvailable(FreePool<Block>& pool, double size) {
    if (!std::isfinite(config_.maxSplit)) return false;
    const double key = size < config_.maxSplit ? config_.maxSplit : size;
    const int32_t found = pool.FirstAtLeast(blocks_, key);
    if (found >= 0) {
      Release(pool, found);
      return true;
    }
    double released = 0;
    for (int32_t last = pool.Largest(blocks_); last >= 0; last = pool.Largest(blocks_)) {
      const double s = blocks_[last].size;
      if (released >= key || s < config_.maxSplit) break;
      released += s;
      Release(pool, last);
    }
    return released >= key;
  }

  void ReleaseCached() {
    for (FreePool<Block>* pool : {&large_, &small_}) {
      pool->RemoveIf(blocks_, [this](int32_t id) {
        const Block& b = blocks_[id];
        if (b.prev != -1 || b.next != -1) return false;
        LogFree(id);
        reserved_ -= b.size;
        frees += 1;
        return true;
      }, [this](int32_t id) { DropBlock(id); });
    }
  }

  void Free(int32_t id) {
    Block* const blocks = blocks_;
    Block& b = blocks[id];
    FreePool<Block>& pool = b.small ? small_ : large_;
    allocated_ -= b.size;
    b.allocated = 0;
    const int32_t before = b.prev;
    if (before >= 0 && !blocks[before].allocated) {
      const Block& p = blocks[before];
      pool.Remove(blocks, before);
      b.address = p.address;
      b.size += p.size;
      b.prev = p.prev;
      if (b.prev >= 0) blocks[b.prev].next = id;
      DropBlock(before);
    }
    const int32_t after = b.next;
    if (after >= 0 && !blocks[after].allocated) {
      const Block& n = blocks[after];
      pool.Remove(blocks, after);
      b.size += n.size;
      b.next = n.next;
      if (b.next >= 0) blocks[b.next].prev = id;
      DropBlock(after);
    }
    pool.Insert(blocks, id);
  }

  template <bool kPlain>
  int32_t Malloc(double request) {
    const double size = kPlain || plainRounding_ ? (request < kMinBlockSize ? kMinBlockSize : CeilPositive(request / kMinBlockSize) * kMinBlockSize) : RoundSize(config_, request);
    const bool small = size <= kSmallSize;
    FreePool<Block>& pool = small ? small_ : large_;
    int32_t id = pool.FirstAtLeast(blocks_, size);
    if (!kPlain && id >= 0) {
      const double s = blocks_[id].size;
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
    Block* const blocks = blocks_;  // NewBlock below may move the arena: reread after it
    const double remaining = blocks[id].size - size;
    if (small ? remaining >= kMinBlockSize : ((kPlain || size < config_.maxSplit) && remaining > kSmallSize)) {
      // should_split: the request takes the front, a new block; the rest keeps the block it was
      // cut from, and with it, where its key allows, that block's place in the pool.
      const int32_t rest = id;
      id = NewBlock(blocks[rest].address, size, blocks[rest].segment, small);
      Block* const moved = blocks_;
      Block& b = moved[id];
      Block& r = moved[rest];
      b.prev = r.prev;
      b.next = rest;
      if (r.prev >= 0) moved[r.prev].next = id;
      r.prev = id;
      if (cached) pool.Shrink(moved, rest, remaining, r.address + size);
      else {
        r.size = remaining;
        r.address += size;
        pool.Insert(moved, rest);
      }
    } else if (cached) {
      pool.Remove(blocks, id);
    }
    Block& b = blocks_[id];
    b.allocated = 1;
    allocated_ += b.size;
    allocatedPeak = std::max(allocatedPeak, allocated_);  // maxsd: a new peak is a coin flip
    return id;
  }

  const ReplayConfig config_;  // as given
  bool plainRounding_;
  Block* blocks_ = nullptr;  // the arena: made_ records used of capacity_
  int32_t* live_ = nullptr;
  int32_t made_ = 0;
  int32_t capacity_ = 0;
  int32_t spare_ = -1;  // the first spare block, linked by poolNext
  FreePool<Block> small_;
  FreePool<Block> large_;
  double reserved_ = 0;
  double allocated_ = 0;
  double nextAddress_ = 0;
};

}  // namespace vramfit

#endif  // VRAMFIT_STEP_REPLAY_H
