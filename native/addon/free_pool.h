// A pool of cached free blocks in PyTorch's BlockPool order (size, then address) for replay_step.cc: best fit without searching or moving arrays.
//
// The pool is threaded through the blocks themselves (poolPrev/poolNext: no allocation per
// insertion, removal in O(1) without a search). Blocks are grouped in size classes, 16 per power
// of two (the top four bits after the leading one, as TLSF does); a class keeps its blocks in a
// list sorted by (size, address), and the classes partition that order, so the first block at
// least as large as a request is in the request's class or is the head of the next occupied
// class, which two words of bit masks find. Classes are narrow, so their lists are short (2.8
// blocks on average at a search over scripts/replay-speed.mjs's random step). This replaced one
// sorted array per power of two, whose binary searches and moves were most of a replay's time
// (perf over that step).
#ifndef VRAMFIT_FREE_POOL_H
#define VRAMFIT_FREE_POOL_H

#include <cstdint>
#include <cstring>
#include <vector>

namespace vramfit {

// One block of a segment (replay_step.cc): the caching allocator's Block, by index.
struct Block {
  double address;
  double size;
  int32_t prev;      // the neighbours within the segment, -1: none
  int32_t next;
  int32_t poolPrev;  // the neighbours in its pool's class list while cached (free), -1: none;
  int32_t poolNext;  // poolNext also links the spare blocks
  int32_t segment;   // the number of the cudaMalloc that made its segment (segment log)
  bool allocated;
  bool small;
};

class FreePool {
 public:
  explicit FreePool(std::vector<Block>& blocks) : blocks_(blocks) {
    for (int c = 0; c < kClasses; c++) head_[c] = -1;
  }
  FreePool(const FreePool&) = delete;
  FreePool& operator=(const FreePool&) = delete;

  // The first block at least `size` large (the lowest address among equals), or -1.
  int32_t FirstAtLeast(double size) const {
    const int c = ClassOf(size);
    for (int32_t id = head_[c]; id >= 0; id = blocks_[Index(id)].poolNext) {
      if (blocks_[Index(id)].size >= size) return id;
    }
    const int above = NextOccupied(c + 1);
    return above < 0 ? -1 : head_[above];
  }

  // The largest block, or -1: the last of the highest occupied class (only the out-of-memory path
  // with max_split_size asks, so no tail is kept for it).
  int32_t Largest() const {
    if (summary_ == 0) return -1;
    const int word = 63 - __builtin_clzll(summary_);
    int32_t last = head_[word * 64 + 63 - __builtin_clzll(occupied_[word])];
    while (blocks_[Index(last)].poolNext >= 0) last = blocks_[Index(last)].poolNext;
    return last;
  }

  // Caches a block (its size and address are its key until it is removed).
  void Insert(int32_t id) {
    Block& b = blocks_[Index(id)];
    const int c = ClassOf(b.size);
    int32_t after = -1;
    int32_t before = head_[c];
    while (before >= 0 && Precedes(blocks_[Index(before)], b.size, b.address)) {
      after = before;
      before = blocks_[Index(before)].poolNext;
    }
    b.poolPrev = after;
    b.poolNext = before;
    if (after >= 0) blocks_[Index(after)].poolNext = id;
    else head_[c] = id;
    if (before >= 0) blocks_[Index(before)].poolPrev = id;
    occupied_[c >> 6] |= uint64_t{1} << (c & 63);
    summary_ |= uint64_t{1} << (c >> 6);
  }

  // Takes a cached block out of the pool.
  void Remove(int32_t id) {
    const Block& b = blocks_[Index(id)];
    const int c = ClassOf(b.size);
    if (b.poolPrev >= 0) blocks_[Index(b.poolPrev)].poolNext = b.poolNext;
    else head_[c] = b.poolNext;
    if (b.poolNext >= 0) blocks_[Index(b.poolNext)].poolPrev = b.poolPrev;
    if (head_[c] < 0) {
      uint64_t& word = occupied_[c >> 6];
      word &= ~(uint64_t{1} << (c & 63));
      if (word == 0) summary_ &= ~(uint64_t{1} << (c >> 6));
    }
  }

  // A cached block's new key (smaller: the rest of a split): it stays where it is when its class
  // and the block before it allow, else it moves. (For the rest of a best fit the block before it
  // always allows: it was smaller than the request, and a rest in the same class is larger.)
  void Shrink(int32_t id, double size, double address) {
    Block& b = blocks_[Index(id)];
    if (ClassOf(size) == ClassOf(b.size) && (b.poolPrev < 0 || Precedes(blocks_[Index(b.poolPrev)], size, address))) {
      b.size = size;
      b.address = address;
      return;
    }
    Remove(id);
    b.size = size;
    b.address = address;
    Insert(id);
  }

  // Removes, in the pool's order, every block `drop` says to (it is asked about each one once, in
  // order), and tells `removed` of each once it is out (the block is then the caller's again).
  template <typename Drop, typename Removed>
  void RemoveIf(Drop drop, Removed removed) {
    for (uint64_t words = summary_; words != 0; words &= words - 1) {
      const int word = __builtin_ctzll(words);
      for (uint64_t left = occupied_[word]; left != 0; left &= left - 1) {
        const int c = word * 64 + __builtin_ctzll(left);
        for (int32_t id = head_[c]; id >= 0;) {
          const int32_t next = blocks_[Index(id)].poolNext;
          if (drop(id)) {
            Remove(id);
            removed(id);
          }
          id = next;
        }
      }
    }
  }

 private:
  static constexpr int kClassBits = 4;  // 2^4 classes per power of two
  static constexpr int kClasses = 64 << kClassBits;

  static size_t Index(int32_t id) { return static_cast<size_t>(id); }

  // A class per (power of two, next kClassBits bits), read off the double's own bits: a positive
  // double's bit pattern is monotone in its value, so the classes partition the order. Sizes below
  // 1 byte share the first class and those at or above 2^64 the last (none occur: sizes are ≥ 512 B).
  static int ClassOf(double size) {
    uint64_t bits;
    std::memcpy(&bits, &size, sizeof bits);
    const int64_t c = static_cast<int64_t>(bits >> (52 - kClassBits)) - (int64_t{1023} << kClassBits);
    return c < 0 ? 0 : c >= kClasses ? kClasses - 1 : static_cast<int>(c);
  }

  // (size, address) order, the BlockPool set's comparator.
  static bool Precedes(const Block& a, double size, double address) { return a.size < size || (a.size == size && a.address < address); }

  // The first occupied class at or after `from`, or -1.
  int NextOccupied(int from) const {
    if (from >= kClasses) return -1;
    const int word = from >> 6;
    const uint64_t here = occupied_[word] & (~uint64_t{0} << (from & 63));
    if (here != 0) return word * 64 + __builtin_ctzll(here);
    const uint64_t above = summary_ & (~uint64_t{0} << (word + 1));  // word + 1 ≤ 16: a defined shift
    if (above == 0) return -1;
    const int next = __builtin_ctzll(above);
    return next * 64 + __builtin_ctzll(occupied_[next]);
  }

  std::vector<Block>& blocks_;
  int32_t head_[kClasses];  // each class's first block, -1: none
  uint64_t occupied_[kClasses / 64] = {};  // bit c: class c holds blocks
  uint64_t summary_ = 0;                   // bit w: occupied_[w] is not 0
};

}  // namespace vramfit

#endif  // VRAMFIT_FREE_POOL_H
