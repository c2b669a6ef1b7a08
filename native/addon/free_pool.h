// The cached free blocks of one pool in PyTorch's BlockPool order (size, then address), for step_replay.h and expandable_replay.h: best fit without searching or moving arrays.
//
// The blocks live in one arena (step_replay.h), indexed by integers; a pool threads its blocks
// through their poolPrev/poolNext (nothing allocated per insertion, removal in O(1)). Blocks are
// grouped in size classes, 64 per power of two (the top six bits after the leading one, as TLSF
// does); a class keeps its blocks in a list sorted by (size, address), and the classes partition
// that order, so the first block at least as large as a request is in the request's class or is
// the head of the next occupied class, which two levels of bit masks find. 64 classes rather than
// 16 per power of two: the lists are shorter (a walk along one was the replay's costliest branch),
// 6-10 % off the loop (scripts/replay-speed.mjs's random step in a C++ driver, best of 400).
// Every operation takes the arena's base pointer: the arena moves as it grows.
#ifndef VRAMFIT_FREE_POOL_H
#define VRAMFIT_FREE_POOL_H

#include <cstdint>
#include <cstring>

namespace vramfit {

// One block of a segment (step_replay.h): the caching allocator's Block, by index. 40 bytes.
struct Block {
  double address;
  double size;
  int32_t prev;      // the neighbours within the segment, -1: none
  int32_t next;
  int32_t poolPrev;  // the neighbours in its pool's class list while cached (free), -1: none;
  int32_t poolNext;  // poolNext also links the spare blocks
  int32_t segment;   // the number of the cudaMalloc that made its segment (segment log)
  uint8_t allocated;
  uint8_t small;
  int16_t sizeClass;  // its pool's class while cached (FreePool::Insert sets it, Remove reads it)
};

// B: a block record with size, address, poolPrev, poolNext and sizeClass (Block here, PageBlock in
// expandable_replay.h).
template <typename B>
class FreePool {
 public:
  // Every class starts empty: its head -1, so a lookup reads the head without first testing the
  // class's bit (a branch mispredicted ~2,000 times a replay of the random 10,000-event step).
  // 8-byte stores in a loop rather than memset, which would be one more libc symbol bound inside
  // a fresh process's first replay (the optimize attribute keeps GCC from making it a memset).
  __attribute__((optimize("no-tree-loop-distribute-patterns"))) FreePool() {
    uint64_t* const words = reinterpret_cast<uint64_t*>(head_);
    for (size_t k = 0; k < kClasses / 2; k++) words[k] = ~uint64_t{0};  // two heads a word
  }
  FreePool(const FreePool&) = delete;
  FreePool& operator=(const FreePool&) = delete;

  // The first block at least `size` large (the lowest address among equals), or -1.
  int32_t FirstAtLeast(const B* blocks, double size) const {
    const int c = ClassOf(size);
    for (int32_t id = head_[c]; id >= 0; id = blocks[id].poolNext) {
      if (blocks[id].size >= size) return id;
    }
    const int above = NextOccupied(c + 1);
    return above < 0 ? -1 : head_[above];
  }

  // The block after a cached block in the pool's order, or -1 (BlockPool's iterator, ++).
  int32_t After(const B* blocks, int32_t id) const {
    const B& b = blocks[id];
    if (b.poolNext >= 0) return b.poolNext;
    const int above = NextOccupied(b.sizeClass + 1);
    return above < 0 ? -1 : head_[above];
  }

  // Appends every cached block to `ids`, in the pool's order.
  template <typename Ids>
  void AppendAll(const B* blocks, Ids* ids) const {
    for (uint64_t words = summary_; words != 0; words &= words - 1) {
      const int word = __builtin_ctzll(words);
      for (uint64_t left = occupied_[word]; left != 0; left &= left - 1) {
        for (int32_t id = head_[word * 64 + __builtin_ctzll(left)]; id >= 0; id = blocks[id].poolNext) ids->push_back(id);
      }
    }
  }

  // The largest block, or -1: the last of the highest occupied class (only the out-of-memory path
  // with max_split_size asks, so no tail is kept for it).
  int32_t Largest(const B* blocks) const {
    if (summary_ == 0) return -1;
    const int word = 63 - __builtin_clzll(summary_);
    int32_t last = head_[word * 64 + 63 - __builtin_clzll(occupied_[word])];
    while (blocks[last].poolNext >= 0) last = blocks[last].poolNext;
    return last;
  }

  // Caches a block (its size and address are its key until it is removed).
  void Insert(B* blocks, int32_t id) {
    B& b = blocks[id];
    const int c = ClassOf(b.size);
    b.sizeClass = static_cast<int16_t>(c);
    int32_t after = -1;
    int32_t before = head_[c];
    while (before >= 0 && Precedes(blocks[before], b.size, b.address)) {
      after = before;
      before = blocks[before].poolNext;
    }
    b.poolPrev = after;
    b.poolNext = before;
    if (after >= 0) blocks[after].poolNext = id;
    else head_[c] = id;
    if (before >= 0) blocks[before].poolPrev = id;
    occupied_[c >> 6] |= uint64_t{1} << (c & 63);
    summary_ |= uint64_t{1} << (c >> 6);
  }

  // Takes a cached block out of the pool. (Without branches on its neighbours, a scratch slot
  // taking a missing one's link, the random step's loop was ~4 % faster and ResNet-152's ~10 %
  // slower, whose pools a branch predictor learns: scripts/replay-speed.mjs --loop, -O3.)
  void Remove(B* blocks, int32_t id) {
    const B& b = blocks[id];
    if (b.poolNext >= 0) blocks[b.poolNext].poolPrev = b.poolPrev;
    if (b.poolPrev >= 0) {
      blocks[b.poolPrev].poolNext = b.poolNext;
      return;
    }
    const int c = b.sizeClass;
    head_[c] = b.poolNext;
    if (b.poolNext < 0) {
      uint64_t& word = occupied_[c >> 6];
      word &= ~(uint64_t{1} << (c & 63));
      if (word == 0) summary_ &= ~(uint64_t{1} << (c >> 6));
    }
  }

  // A cached block's new key (smaller: the rest of a split): it stays where it is when its class
  // and the block before it allow, else it moves. (For the rest of a best fit the block before it
  // always allows: it was smaller than the request, and a rest in the same class is larger.)
  void Shrink(B* blocks, int32_t id, double size, double address) {
    B& b = blocks[id];
    if (ClassOf(size) == b.sizeClass && (b.poolPrev < 0 || Precedes(blocks[b.poolPrev], size, address))) {
      b.size = size;
      b.address = address;
      return;
    }
    Remove(blocks, id);
    b.size = size;
    b.address = address;
    Insert(blocks, id);
  }

  // Removes, in the pool's order, every block `drop` says to (it is asked about each one once, in
  // order), and tells `removed` of each once it is out (the block is then the caller's again).
  template <typename Drop, typename Removed>
  void RemoveIf(B* blocks, Drop drop, Removed removed) {
    for (uint64_t words = summary_; words != 0; words &= words - 1) {
      const int word = __builtin_ctzll(words);
      for (uint64_t left = occupied_[word]; left != 0; left &= left - 1) {
        const int c = word * 64 + __builtin_ctzll(left);
        for (int32_t id = head_[c]; id >= 0;) {
          const int32_t next = blocks[id].poolNext;
          if (drop(id)) {
            Remove(blocks, id);
            removed(id);
          }
          id = next;
        }
      }
    }
  }

 private:
  static constexpr int kClassBits = 6;  // 2^6 classes per power of two
  // Powers of two from 2^9 (kMinBlockSize: no size is smaller) to 2^40 (1 TiB) have classes of
  // their own; larger sizes share the last class (ordered in its list all the same). 32 rather
  // than 64 powers: head_ is filled on every replay, and half as many of its pages are touched.
  static constexpr int kLowestPower = 9;
  static constexpr int kPowers = 32;
  static constexpr int kClasses = kPowers << kClassBits;

  // A class per (power of two, next kClassBits bits), read off the double's own bits: a positive
  // double's bit pattern is monotone in its value, so the classes partition the order (clamped at
  // both ends, they still do).
  static int ClassOf(double size) {
    uint64_t bits;
    std::memcpy(&bits, &size, sizeof bits);
    const int64_t c = static_cast<int64_t>(bits >> (52 - kClassBits)) - (int64_t{1023 + kLowestPower} << kClassBits);
    return c < 0 ? 0 : c >= kClasses ? kClasses - 1 : static_cast<int>(c);
  }

  // (size, address) order, the BlockPool set's comparator.
  static bool Precedes(const B& a, double size, double address) { return a.size < size || (a.size == size && a.address < address); }

  // The first occupied class at or after `from`, or -1.
  int NextOccupied(int from) const {
    if (from >= kClasses) return -1;
    const int word = from >> 6;
    const uint64_t here = occupied_[word] & (~uint64_t{0} << (from & 63));
    if (here != 0) return word * 64 + __builtin_ctzll(here);
    const uint64_t above = summary_ & ((~uint64_t{0} << word) << 1);  // two shifts: one by 64 is undefined
    if (above == 0) return -1;
    const int next = __builtin_ctzll(above);
    return next * 64 + __builtin_ctzll(occupied_[next]);
  }

  // Each class's first block, -1 where it has none (16 KB, filled by the constructor).
  alignas(8) int32_t head_[kClasses];
  uint64_t occupied_[kClasses / 64] = {};  // bit c: class c holds blocks
  uint64_t summary_ = 0;                   // bit w: occupied_[w] is not 0
};

}  // namespace vramfit

#endif  // VRAMFIT_FREE_POOL_H
