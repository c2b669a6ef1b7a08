// replayStep(order, bytes, capacity, maxSplit, maxRounding, divisions[, segments]): src/fit/cachingAllocator.ts's replay at a capacity, natively.
//
// The same rules, in the same order, as replayAtCapacity in src/fit/cachingAllocator.ts (which
// cites PyTorch's c10/cuda/CUDACachingAllocator.cpp for each); test/native/replayStep.test.ts
// checks that both give the same figures and the same segment log (the driver calls in order,
// asked for with `segments`: what a device probe replays). It exists for speed: a fresh process runs the
// TypeScript replay's loop cold, several milliseconds for 10,000 events, where this takes a
// fraction of one. Synchronous and pure (no driver, no device): it runs on the JS thread.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "addon_functions.h"

namespace vramfit {
namespace {

constexpr double kMinBlockSize = 512;
constexpr double kSmallSize = 1048576;
constexpr double kSmallBuffer = 2097152;
constexpr double kLargeBuffer = 20971520;
constexpr double kMinLargeAlloc = 10485760;
constexpr double kRoundLarge = 2097152;

struct Block {
  double address;
  double size;
  int32_t prev;
  int32_t next;
  int32_t segment;  // the number of the cudaMalloc that made its segment (segment log)
  bool allocated;
  bool small;
};

// A pool of cached free blocks in (size, address) order, PyTorch's BlockPool set, kept as one
// sorted array per power of two of the size. The buckets partition the order, so a search reads
// only the few blocks of one bucket (then the first of the next occupied one, found in a bit
// mask), and an insertion or removal moves only them: a single sorted array's binary searches
// and moves were most of a replay's time (perf over scripts/replay-speed.mjs's random trace).
class Pool {
 public:
  struct Entry {
    double size;
    double address;
    int32_t id;
  };
  // Where an entry is; bucket < 0: past the end.
  struct Position {
    int bucket;
    size_t index;
    bool found() const { return bucket >= 0; }
  };

  // The first entry at or after (size, address).
  Position LowerBound(double size, double address) const {
    const int bucket = BucketOf(size);
    const std::vector<Entry>& entries = buckets_[bucket];
    const size_t index = Search(entries, size, address);
    if (index < entries.size()) return {bucket, index};
    const uint64_t above = bucket == 63 ? 0 : occupied_ & (~uint64_t{0} << (bucket + 1));
    if (above == 0) return {-1, 0};
    return {__builtin_ctzll(above), 0};
  }

  // The largest entry.
  Position Last() const {
    if (occupied_ == 0) return {-1, 0};
    const int bucket = 63 - __builtin_clzll(occupied_);
    return {bucket, buckets_[bucket].size() - 1};
  }

  const Entry& At(Position at) const { return buckets_[at.bucket][at.index]; }

  void Insert(const Entry& entry) {
    const int bucket = BucketOf(entry.size);
    std::vector<Entry>& entries = buckets_[bucket];
    entries.insert(entries.begin() + static_cast<std::ptrdiff_t>(Search(entries, entry.size, entry.address)), entry);
    occupied_ |= uint64_t{1} << bucket;
  }

  void Erase(Position at) {
    std::vector<Entry>& entries = buckets_[at.bucket];
    entries.erase(entries.begin() + static_cast<std::ptrdiff_t>(at.index));
    if (entries.empty()) occupied_ &= ~(uint64_t{1} << at.bucket);
  }

  // Removes the entry of this key (it is there).
  void Remove(double size, double address) {
    const int bucket = BucketOf(size);
    Erase({bucket, Search(buckets_[bucket], size, address)});
  }

  // Removes, in order, every entry `drop` says to (it is told each one once, in order).
  template <typename Drop>
  void RemoveIf(Drop drop) {
    for (uint64_t left = occupied_; left != 0; left &= left - 1) {
      const int bucket = __builtin_ctzll(left);
      std::vector<Entry>& entries = buckets_[bucket];
      size_t kept = 0;
      for (const Entry& e : entries) {
        if (!drop(e)) entries[kept++] = e;
      }
      entries.resize(kept);
      if (kept == 0) occupied_ &= ~(uint64_t{1} << bucket);
    }
  }

 private:
  // floor(log2(size)): sizes are whole numbers of bytes, at least 512 (a search key may be 0).
  static int BucketOf(double size) {
    const uint64_t bytes = static_cast<uint64_t>(size);
    return bytes == 0 ? 0 : 63 - __builtin_clzll(bytes);
  }

  // The first position in a bucket whose entry is at or after (size, address).
  static size_t Search(const std::vector<Entry>& entries, double size, double address) {
    size_t low = 0;
    size_t high = entries.size();
    while (low < high) {
      const size_t middle = (low + high) / 2;
      const Entry& e = entries[middle];
      if (e.size < size || (e.size == size && e.address < address)) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  std::vector<Entry> buckets_[64];
  uint64_t occupied_ = 0;  // bit b: bucket b holds entries
};

class Replay {
 public:
  Replay(double capacity, double maxSplit, double maxRounding, const double* divisions, size_t divisionCount, bool segments)
      : capacity_(capacity), maxSplit_(maxSplit), maxRounding_(maxRounding), divisions_(divisions, divisions + divisionCount), logging_(segments) {
    plainRounding_ = std::all_of(divisions_.begin(), divisions_.end(), [](double n) { return n <= 1; });
  }

  // Returns the index of the allocation that ran out of memory, or -1.
  int64_t Run(const int32_t* order, size_t events, const double* bytes, size_t tensors) {
    std::vector<int32_t> live(tensors, -1);
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
      const double index = std::min(std::max(0.0, log2 - 20), static_cast<double>(divisions_.size() - 1));
      const double n = divisions_[static_cast<size_t>(index)];
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

  void Insert(Pool& pool, int32_t id) {
    const Block& b = blocks_[static_cast<size_t>(id)];
    pool.Insert(Pool::Entry{b.size, b.address, id});
  }

  void Remove(Pool& pool, int32_t id) {
    const Block& b = blocks_[static_cast<size_t>(id)];
    pool.Remove(b.size, b.address);
  }

  int32_t NewBlock(double address, double size, int32_t segment, bool small) {
    blocks_.push_back(Block{address, size, -1, -1, segment, false, small});
    return static_cast<int32_t>(blocks_.size() - 1);
  }

  int32_t AllocBlock(double segmentBytes, bool small) {
    if (reserved_ + segmentBytes > capacity_) return -1;
    const int32_t id = NewBlock(nextAddress_, segmentBytes, static_cast<int32_t>(mallocs), small);
    if (logging_) log.push_back(segmentBytes);
    nextAddress_ += segmentBytes;
    mallocs += 1;
    reserved_ += segmentBytes;
    reservedPeak = std::max(reservedPeak, reserved_);
    return id;
  }

  void LogFree(int32_t id) {
    if (logging_) log.push_back(-(blocks_[static_cast<size_t>(id)].segment + 1.0));
  }

  void ReleaseAt(Pool& pool, Pool::Position at) {
    LogFree(pool.At(at).id);
    reserved_ -= pool.At(at).size;
    frees += 1;
    pool.Erase(at);
  }

  bool ReleaseAvailable(Pool& pool, double size) {
    if (!std::isfinite(maxSplit_)) return false;
    const double key = size < maxSplit_ ? maxSplit_ : size;
    const Pool::Position at = pool.LowerBound(key, 0);
    if (at.found()) {
      ReleaseAt(pool, at);
      return true;
    }
    double released = 0;
    for (Pool::Position last = pool.Last(); last.found(); last = pool.Last()) {
      const double s = pool.At(last).size;
      if (released >= key || s < maxSplit_) break;
      released += s;
      ReleaseAt(pool, last);
    }
    return released >= key;
  }

  void ReleaseCached() {
    for (Pool* pool : {&large_, &small_}) {
      pool->RemoveIf([this](const Pool::Entry& e) {
        const Block& b = blocks_[static_cast<size_t>(e.id)];
        if (b.prev != -1 || b.next != -1) return false;
        LogFree(e.id);
        reserved_ -= b.size;
        frees += 1;
        return true;
      });
    }
  }

  void Free(int32_t id) {
    Block* b = &blocks_[static_cast<size_t>(id)];
    Pool& pool = b->small ? small_ : large_;
    allocated_ -= b->size;
    b->allocated = false;
    const int32_t before = b->prev;
    if (before >= 0 && !blocks_[static_cast<size_t>(before)].allocated) {
      Block& p = blocks_[static_cast<size_t>(before)];
      Remove(pool, before);
      b->address = p.address;
      b->size += p.size;
      b->prev = p.prev;
      if (b->prev >= 0) blocks_[static_cast<size_t>(b->prev)].next = id;
    }
    const int32_t after = b->next;
    if (after >= 0 && !blocks_[static_cast<size_t>(after)].allocated) {
      Block& n = blocks_[static_cast<size_t>(after)];
      Remove(pool, after);
      b->size += n.size;
      b->next = n.next;
      if (b->next >= 0) blocks_[static_cast<size_t>(b->next)].prev = id;
    }
    Insert(pool, id);
  }

  int32_t Malloc(double request) {
    const double size = plainRounding_ ? (request < kMinBlockSize ? kMinBlockSize : std::ceil(request / kMinBlockSize) * kMinBlockSize) : RoundSize(request);
    const bool small = size <= kSmallSize;
    Pool& pool = small ? small_ : large_;
    int32_t id = -1;
    const Pool::Position at = pool.LowerBound(size, 0);
    if (at.found()) {
      const int32_t found = pool.At(at).id;
      const double s = pool.At(at).size;
      if (!((size < maxSplit_ && s >= maxSplit_) || (size >= maxSplit_ && s >= size + maxRounding_))) {
        id = found;
        pool.Erase(at);
      }
    }
    if (id < 0) {
      const double segmentBytes = SegmentSize(size);
      id = AllocBlock(segmentBytes, small);
      if (id < 0 && ReleaseAvailable(pool, size)) id = AllocBlock(segmentBytes, small);
      if (id < 0) {
        ReleaseCached();
        retries += 1;
        id = AllocBlock(segmentBytes, small);
      }
      if (id < 0) {
        if (logging_) log.push_back(segmentBytes);
        return -1;
      }
    }
    const double remaining = blocks_[static_cast<size_t>(id)].size - size;
    if (small ? remaining >= kMinBlockSize : (size < maxSplit_ && remaining > kSmallSize)) {
      const int32_t rest = NewBlock(blocks_[static_cast<size_t>(id)].address + size, remaining, blocks_[static_cast<size_t>(id)].segment, small);
      Block& b = blocks_[static_cast<size_t>(id)];
      Block& r = blocks_[static_cast<size_t>(rest)];
      r.prev = id;
      r.next = b.next;
      if (b.next >= 0) blocks_[static_cast<size_t>(b.next)].prev = rest;
      b.next = rest;
      b.size = size;
      Insert(pool, rest);
    }
    Block& b = blocks_[static_cast<size_t>(id)];
    b.allocated = true;
    allocated_ += b.size;
    allocatedPeak = std::max(allocatedPeak, allocated_);
    return id;
  }

  double capacity_;
  double maxSplit_;
  double maxRounding_;
  std::vector<double> divisions_;
  bool plainRounding_ = true;
  bool logging_;
  std::vector<Block> blocks_;
  Pool small_;
  Pool large_;
  double reserved_ = 0;
  double allocated_ = 0;
  double nextAddress_ = 0;
};

}  // namespace

Napi::Value ReplayStep(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 6 || !info[0].IsTypedArray() || !info[1].IsTypedArray() || !info[2].IsNumber() || !info[3].IsNumber() || !info[4].IsNumber() || !info[5].IsTypedArray()) {
    throw Napi::TypeError::New(env, "replayStep(order: Int32Array, bytes: Float64Array, capacity, maxSplit, maxRounding, divisions: Float64Array, segments?: boolean)");
  }
  const Napi::TypedArray orderArray = info[0].As<Napi::TypedArray>();
  const Napi::TypedArray bytesArray = info[1].As<Napi::TypedArray>();
  const Napi::TypedArray divisionsArray = info[5].As<Napi::TypedArray>();
  if (orderArray.TypedArrayType() != napi_int32_array || bytesArray.TypedArrayType() != napi_float64_array || divisionsArray.TypedArrayType() != napi_float64_array) {
    throw Napi::TypeError::New(env, "replayStep: order must be an Int32Array, bytes and divisions Float64Arrays");
  }
  const auto order = orderArray.As<Napi::Int32Array>();
  const auto bytes = bytesArray.As<Napi::Float64Array>();
  const auto divisions = divisionsArray.As<Napi::Float64Array>();
  if (divisions.ElementLength() == 0) throw Napi::TypeError::New(env, "replayStep: divisions must not be empty");
  // Infinity crosses Node-API as a double: no limit, unlimited max_split_size.
  const bool segments = info.Length() > 6 && info[6].ToBoolean().Value();
  Replay replay(info[2].As<Napi::Number>().DoubleValue(), info[3].As<Napi::Number>().DoubleValue(), info[4].As<Napi::Number>().DoubleValue(), divisions.Data(), divisions.ElementLength(), segments);
  const int64_t failedAt = replay.Run(order.Data(), order.ElementLength(), bytes.Data(), bytes.ElementLength());
  Napi::Object result = Napi::Object::New(env);
  result.Set("fits", failedAt < 0);
  result.Set("reservedPeakBytes", replay.reservedPeak);
  result.Set("allocatedPeakBytes", replay.allocatedPeak);
  result.Set("cudaMallocs", replay.mallocs);
  result.Set("cudaFrees", replay.frees);
  result.Set("allocRetries", replay.retries);
  result.Set("failedAt", static_cast<double>(failedAt));
  if (segments) {
    Napi::Float64Array log = Napi::Float64Array::New(env, replay.log.size());
    std::copy(replay.log.begin(), replay.log.end(), log.Data());
    result.Set("segmentLog", log);
  }
  return result;
}

}  // namespace vramfit
