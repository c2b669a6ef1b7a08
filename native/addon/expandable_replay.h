// The caching allocator's replay of a step with expandable segments at a capacity (replay_step.cc's second core, free of Node-API): src/fit/expandableSegments.ts's rules, natively.
//
// The same rules, in the same order and with the same double arithmetic, as replay() in
// src/fit/expandableSegments.ts, which cites PyTorch's c10/cuda/CUDACachingAllocator.cpp for each
// (Note [Expandable Segments], get_free_block's walk past blocks before unmapped space,
// try_allocate_expandable_block, map_block, unmap_block, release_cached_blocks);
// test/native/replayExpandable.test.ts checks that both give the same figures and map log. It
// exists for speed: the TypeScript replay, objects per block, took ~40 ms on its first call in a
// fresh process. Blocks are plain records in one vector indexed by integers; the cached free
// blocks are free_pool.h's size classes, the unmapped ones (few: each pool's tail of address
// space, and the holes the out-of-memory path unmaps) a vector sorted by address.
#ifndef VRAMFIT_EXPANDABLE_REPLAY_H
#define VRAMFIT_EXPANDABLE_REPLAY_H

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "free_pool.h"
#include "replay_config.h"

namespace vramfit {

// One piece of an expandable segment: allocated, cached free (mapped), or unmapped address space.
struct PageBlock {
  double address;
  double size;
  int32_t prev;      // the neighbours within the segment, -1: none
  int32_t next;
  int32_t poolPrev;  // the neighbours in its pool's class list while cached; poolNext also links the spare blocks
  int32_t poolNext;
  uint8_t allocated;
  uint8_t mapped;
  int16_t sizeClass;  // FreePool's
};

class ExpandableReplay {
 public:
  explicit ExpandableReplay(const ReplayConfig& config) : config_(config), small_(kSmallBuffer), large_(config.largeSegment) {}

  // Replays the step (once per ExpandableReplay); returns the index of the allocation that ran out of memory, or -1.
  int64_t Run(const int32_t* order, size_t events, const double* bytes, size_t tensors) {
    std::vector<int32_t> live(tensors, -1);
    blocks_.reserve(std::min<size_t>(2 * tensors + 8, 4096));
    for (size_t k = 0; k < events; k++) {
      const int32_t code = order[k];
      if (code < 0) {
        // free → free_block: merge with free mapped neighbours, then cache.
        const size_t tensor = static_cast<size_t>(~code);
        if (tensor >= tensors || live[tensor] < 0) continue;
        const int32_t id = live[tensor];
        live[tensor] = -1;
        Pool& pool = blocks_[id].size <= kSmallSize ? small_ : large_;  // an allocated block's size tells its pool
        blocks_[id].allocated = 0;
        allocated_ -= blocks_[id].size;
        Merge(pool, id, blocks_[id].prev);
        Merge(pool, id, blocks_[id].next);
        pool.free.Insert(blocks_.data(), id);
        continue;
      }
      if (static_cast<size_t>(code) >= tensors || bytes[code] <= 0) continue;
      const double size = RoundSize(config_, bytes[code]);
      Pool& pool = size <= kSmallSize ? small_ : large_;
      int32_t id = FreeBlock(pool, size);
      if (id < 0) id = AllocateExpandable(pool, size);
      if (id < 0) {
        // release_available_cached_blocks releases no expandable block: straight to release_cached_blocks.
        ReleaseCached();
        retries += 1;
        id = AllocateExpandable(pool, size);
      }
      if (id < 0) return static_cast<int64_t>(k);
      // should_split with expandable segments, then alloc_found_block: the request keeps the front.
      if (blocks_[id].size - size >= kMinBlockSize) {
        const int32_t rest = NewBlock(blocks_[id].address + size, blocks_[id].size - size, true);
        Splice(rest, id, blocks_[id].next);
        pool.free.Insert(blocks_.data(), rest);
        blocks_[id].size = size;
      }
      blocks_[id].allocated = 1;
      allocated_ += blocks_[id].size;
      if (allocated_ > allocatedPeak) allocatedPeak = allocated_;
      live[code] = id;
    }
    return -1;
  }

  double reservedPeak = 0;
  double allocatedPeak = 0;
  double maps = 0;    // map_block calls (num_device_alloc)
  double unmaps = 0;  // unmap_block calls that unmapped pages (num_device_free)
  double retries = 0;
  // With `segments`: +bytes for each map_block, -bytes for each unmap_block, in order
  // (expandableSegments.ts's mapLog). With `pages` instead, what a probe replays
  // (expandableProbeSteps): 0 where a map_block begins, then +bytes for each page it maps; -(k + 1)
  // for each page an unmap_block gives back, k its number among the pages mapped.
  std::vector<double> log;

 private:
  // The address space the emulation gives each pool's segment (expandableSegments.ts' SEGMENT_ADDRESS_SPACE).
  static constexpr double kSegmentAddressSpace = 1125899906842624.0;  // 2^50

  // One pool and its expandable segment.
  struct Pool {
    explicit Pool(double page) : pageBytes(page) {}
    FreePool<PageBlock> free;
    std::vector<int32_t> unmapped;  // by address
    double pageBytes;
    double base = 0;      // the segment's first address
    double nextBase = 0;  // where the next segment's address space begins
    // With the page log: by page number within the segment, the page's number among those mapped
    // (a later segment's pages take the numbers' places, as in expandableSegments.ts' pageIndex).
    std::vector<double> pageIndex;
  };

  double PageDown(const Pool& pool, double address) const { return std::floor((address - pool.base) / pool.pageBytes); }
  double PageUp(const Pool& pool, double address) const { return std::ceil((address - pool.base) / pool.pageBytes); }
  double PageAddress(const Pool& pool, double page) const { return pool.base + page * pool.pageBytes; }

  int32_t NewBlock(double address, double size, bool mapped) {
    int32_t id = spare_;
    if (id >= 0) spare_ = blocks_[id].poolNext;
    else {
      id = static_cast<int32_t>(blocks_.size());
      blocks_.emplace_back();
    }
    blocks_[id] = PageBlock{address, size, -1, -1, -1, -1, 0, static_cast<uint8_t>(mapped), 0};
    return id;
  }

  void DropBlock(int32_t id) {
    blocks_[id].poolNext = spare_;
    spare_ = id;
  }

  void InsertUnmapped(Pool& pool, int32_t id) {
    size_t k = pool.unmapped.size();
    while (k > 0 && blocks_[pool.unmapped[k - 1]].address > blocks_[id].address) k--;
    pool.unmapped.insert(pool.unmapped.begin() + static_cast<std::ptrdiff_t>(k), id);
  }

  void RemoveUnmapped(Pool& pool, int32_t id) {
    pool.unmapped.erase(std::find(pool.unmapped.begin(), pool.unmapped.end(), id));
  }

  // A block placed between prev and next.
  void Splice(int32_t id, int32_t prev, int32_t next) {
    blocks_[id].prev = prev;
    blocks_[id].next = next;
    if (prev >= 0) blocks_[prev].next = id;
    if (next >= 0) blocks_[next].prev = id;
  }

  // expandable_size: a free block's size, with the unmapped space right after it.
  double ExpandableSize(int32_t id) const {
    const int32_t next = blocks_[id].next;
    return blocks_[id].size + (next >= 0 && !blocks_[next].mapped ? blocks_[next].size : 0);
  }

  // try_merge_blocks: dst (in no set) takes in src when it is free and mapped as dst is.
  void Merge(Pool& pool, int32_t dst, int32_t src) {
    if (src < 0 || blocks_[src].allocated || blocks_[src].mapped != blocks_[dst].mapped) return;
    if (blocks_[src].mapped) pool.free.Remove(blocks_.data(), src);
    else RemoveUnmapped(pool, src);
    PageBlock& d = blocks_[dst];
    const PageBlock& s = blocks_[src];
    if (d.prev == src) {
      d.address = s.address;
      d.prev = s.prev;
      if (d.prev >= 0) blocks_[d.prev].next = dst;
    } else {
      d.next = s.next;
      if (d.next >= 0) blocks_[d.next].prev = dst;
    }
    d.size += s.size;
    DropBlock(src);
  }

  // get_free_block, with expandable segments' walk past blocks that border unmapped space.
  int32_t FreeBlock(Pool& pool, double size) {
    int32_t found = pool.free.FirstAtLeast(blocks_.data(), size);
    if (found < 0) return -1;
    for (int32_t next = pool.free.After(blocks_.data(), found); next >= 0 && ExpandableSize(next) < ExpandableSize(found); next = pool.free.After(blocks_.data(), found)) found = next;
    const double s = blocks_[found].size;
    if ((size < config_.maxSplit && s >= config_.maxSplit) || (size >= config_.maxSplit && s >= size + config_.maxRounding)) return -1;
    pool.free.Remove(blocks_.data(), found);
    return found;
  }

  // map_block: maps the pages that hold the first `size` bytes of an unmapped block; false when the device cannot back them.
  bool MapBlock(Pool& pool, int32_t id, double size) {
    const double mapStart = blocks_[id].address;
    const double mappedBytes = PageAddress(pool, PageUp(pool, mapStart + size)) - mapStart;
    if (reserved_ + mappedBytes > config_.capacity) return false;
    RemoveUnmapped(pool, id);
    blocks_[id].mapped = 1;
    if (mappedBytes < blocks_[id].size) {
      const int32_t rest = NewBlock(blocks_[id].address + mappedBytes, blocks_[id].size - mappedBytes, false);
      Splice(rest, id, blocks_[id].next);
      InsertUnmapped(pool, rest);
      blocks_[id].size = mappedBytes;
    }
    Merge(pool, id, blocks_[id].prev);
    Merge(pool, id, blocks_[id].next);
    pool.free.Insert(blocks_.data(), id);
    reserved_ += mappedBytes;
    if (reserved_ > reservedPeak) reservedPeak = reserved_;
    maps += 1;
    if (config_.pages) {
      log.push_back(0);
      const double first = PageDown(pool, mapStart);
      for (double page = first, end = first + mappedBytes / pool.pageBytes; page < end; page++) {
        const size_t at = static_cast<size_t>(page);
        if (pool.pageIndex.size() <= at) pool.pageIndex.resize(at + 1, -1);
        pool.pageIndex[at] = pagesMapped_++;
        log.push_back(pool.pageBytes);
      }
    } else if (config_.segments) {
      log.push_back(mappedBytes);
    }
    return true;
  }

  // A new segment: all of it one unmapped block (find_expandable_block's last resort).
  int32_t NewSegment(Pool& pool) {
    pool.base = pool.nextBase;
    pool.nextBase += kSegmentAddressSpace;
    const int32_t id = NewBlock(pool.base, kSegmentAddressSpace, false);
    InsertUnmapped(pool, id);
    return id;
  }

  // find_expandable_block: the lowest unmapped block, or the free block before it, with room for `size` bytes.
  int32_t ExpandableBlock(Pool& pool, double size) {
    for (const int32_t unmapped : pool.unmapped) {
      const int32_t before = blocks_[unmapped].prev;
      const int32_t start = before >= 0 && !blocks_[before].allocated ? before : unmapped;
      double room = 0;
      for (int32_t b = start; room < size && b >= 0 && !blocks_[b].allocated; b = blocks_[b].next) room += blocks_[b].size;
      if (room >= size) return start;
    }
    return NewSegment(pool);
  }

  // try_allocate_expandable_block: maps what the request lacks; -1 when the device is full.
  int32_t AllocateExpandable(Pool& pool, double size) {
    int32_t candidate = ExpandableBlock(pool, size);
    if (!blocks_[candidate].mapped && !MapBlock(pool, candidate, std::min(blocks_[candidate].size, size))) return -1;
    while (blocks_[candidate].size < size) {
      const int32_t next = blocks_[candidate].next;
      if (!MapBlock(pool, next, std::min(size - blocks_[candidate].size, blocks_[next].size))) return -1;
      candidate = next;  // it took in the candidate (map_block's merge with its prev)
    }
    pool.free.Remove(blocks_.data(), candidate);
    return candidate;
  }

  // unmap_block: gives back the whole pages inside a cached free block.
  void UnmapBlock(Pool& pool, int32_t id) {
    const double first = PageUp(pool, blocks_[id].address);
    const double last = PageDown(pool, blocks_[id].address + blocks_[id].size);
    if (first >= last) return;
    pool.free.Remove(blocks_.data(), id);
    const double start = PageAddress(pool, first);
    const double size = PageAddress(pool, last) - start;
    const double before = start - blocks_[id].address;
    if (before > 0) {
      const int32_t front = NewBlock(blocks_[id].address, before, true);
      Splice(front, blocks_[id].prev, id);
      pool.free.Insert(blocks_.data(), front);
    }
    const double after = blocks_[id].size - before - size;
    if (after > 0) {
      const int32_t back = NewBlock(start + size, after, true);
      Splice(back, id, blocks_[id].next);
      pool.free.Insert(blocks_.data(), back);
    }
    blocks_[id].address = start;
    blocks_[id].size = size;
    blocks_[id].mapped = 0;
    Merge(pool, id, blocks_[id].prev);
    Merge(pool, id, blocks_[id].next);
    InsertUnmapped(pool, id);
    reserved_ -= size;
    unmaps += 1;
    if (config_.pages) {
      for (double page = first; page < last; page++) log.push_back(-(pool.pageIndex[static_cast<size_t>(page)] + 1.0));
    } else if (config_.segments) {
      log.push_back(-size);
    }
  }

  // release_cached_blocks → release_blocks, large pool first: unmap every cached free block's whole
  // pages, in the pool's order as it was; drop a segment left wholly unmapped. (A block merged away
  // here was unmapped already: never one still to visit, so the ids listed stay valid.)
  void ReleaseCached() {
    for (Pool* pool : {&large_, &small_}) {
      cached_.clear();
      pool->free.AppendAll(blocks_.data(), &cached_);
      for (const int32_t id : cached_) {
        UnmapBlock(*pool, id);
        const PageBlock& b = blocks_[id];
        if (b.prev < 0 && b.next < 0 && !b.mapped) {  // release_expandable_segment
          RemoveUnmapped(*pool, id);
          DropBlock(id);
        }
      }
    }
  }

  const ReplayConfig config_;  // as given
  std::vector<PageBlock> blocks_;
  int32_t spare_ = -1;  // the first spare block, linked by poolNext
  Pool small_;
  Pool large_;
  std::vector<int32_t> cached_;  // ReleaseCached's list
  double reserved_ = 0;
  double allocated_ = 0;
  double pagesMapped_ = 0;  // with the page log
};

}  // namespace vramfit

#endif  // VRAMFIT_EXPANDABLE_REPLAY_H
