// The ledger's two homes: process memory, or a flock-protected file shared between processes.
//
// A process that dies holding memory keeps it in a shared file (the real driver would reclaim it):
// that is what lets a test see what a killed vramfit left behind.
#include "accounting.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace cudasim {
namespace {

// getpid(), a system call each time in glibc, asked once per process: every charge and uncharge
// looks up this process's slot (thousands per probe). A forked child asks again.
std::atomic<int> gPid{0};

int CurrentPid() {
  int pid = gPid.load(std::memory_order_relaxed);
  if (pid == 0) {
    // Registered on the first reading only (a std::call_once on every one cost a thread-local
    // lookup per charge); the handler outlives a fork, so a child's first reading finds it there.
    static const int registered = pthread_atfork(nullptr, nullptr, [] { gPid.store(0, std::memory_order_relaxed); });
    (void)registered;
    gPid.store(pid = static_cast<int>(getpid()), std::memory_order_relaxed);
  }
  return pid;
}

constexpr uint64_t kMagic = 0x32455441544d4953ull;  // "SIMSTATE2" of sorts: slots record contexts
constexpr int kSlots = 64;

struct Image {
  uint64_t magic;
  uint64_t identity;
  struct Slot {
    int32_t pid;  // 0: free
    uint32_t padding;
    uint64_t contexts;  // bit p: this process has a context on pool p (kMaxPools is 64)
    uint64_t bytes[kMaxPools];
  } slots[kSlots];
};

class Ledger : public Accounting {
 public:
  Ledger(uint64_t identity, std::string path, int fd) : identity_(identity), path_(std::move(path)), fd_(fd) {
    std::memset(&image_, 0, sizeof image_);
    image_.magic = kMagic;
    image_.identity = identity;
  }

  bool Check(std::string& error) {
    bool ok = true;
    Transact(kNoPool, [&](Image& image) {
      if (image.magic != kMagic || image.identity != identity_) {
        error = "CUDASIM_STATE " + path_ + " was made for another simulated machine (CUDASIM_DEVICES, " +
                "CUDASIM_GRANULARITY or CUDASIM_CONTEXT_BYTES differ); use a new file";
        ok = false;
      }
      return false;
    });
    return ok;
  }

  uint64_t identity() const { return identity_; }
  const std::string& path() const { return path_; }

 private:
  static constexpr int kNoPool = -1;

  // Runs `change` (bool(Image&)) on the current image; writes it back when `change` returns true.
  // A template, not a std::function: a charge is on every allocation's path. In memory it holds
  // `pool`'s lock too (kNoPool: none), which is all a charge on a pool where this process has a
  // context takes (OnOwnPool).
  template <typename Change>
  void Transact(int pool, Change&& change) {
    std::lock_guard<std::mutex> lock(mutex_);  // flock does not exclude this process's own threads
    if (fd_ < 0) {
      std::unique_lock<std::mutex> poolLock;
      if (pool != kNoPool) poolLock = std::unique_lock<std::mutex>(poolLocks_[pool].mutex);
      change(image_);
      return;
    }
    while (flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
    }
    Image image;
    ssize_t got = pread(fd_, &image, sizeof image, 0);
    if (got == 0) {
      std::memset(&image, 0, sizeof image);  // a new file: this process lays it out
      image.magic = kMagic;
      image.identity = identity_;
      if (pwrite(fd_, &image, sizeof image, 0) != static_cast<ssize_t>(sizeof image)) Fail("write");
    } else if (got != static_cast<ssize_t>(sizeof image)) {
      std::memset(&image, 0, sizeof image);  // too short: Check reports it as another machine's
    }
    if (change(image) && pwrite(fd_, &image, sizeof image, 0) != static_cast<ssize_t>(sizeof image)) Fail("write");
    flock(fd_, LOCK_UN);
  }

  void Fail(const char* what) {
    std::fprintf(stderr, "cudasim: cannot %s CUDASIM_STATE %s: %s\n", what, path_.c_str(), std::strerror(errno));
  }

  // A slot's pid and contexts change only inside Transact, but OnOwnPool reads them holding one
  // pool's lock alone: atomic accesses (relaxed: that pool's lock orders what matters).
  static int PidOf(const Image::Slot& slot) { return __atomic_load_n(&slot.pid, __ATOMIC_RELAXED); }
  static bool HasContext(const Image::Slot& slot, int pool) {
    return (__atomic_load_n(&slot.contexts, __ATOMIC_RELAXED) >> pool & 1) != 0;
  }

  // Inside Transact: this process's slot, made when `create` and there is none.
  Image::Slot* SlotOf(Image& image, bool create) {
    int pid = CurrentPid();
    for (Image::Slot& slot : image.slots) {
      if (slot.pid == pid) return &slot;
    }
    if (!create) return nullptr;
    for (Image::Slot& slot : image.slots) {
      if (slot.pid == 0) {
        std::memset(slot.bytes, 0, sizeof slot.bytes);
        __atomic_store_n(&slot.contexts, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&slot.pid, pid, __ATOMIC_RELAXED);
        if (fd_ < 0) ownSlot_.store(static_cast<int>(&slot - image.slots), std::memory_order_relaxed);
        return &slot;
      }
    }
    return nullptr;
  }

  // Inside Transact: frees this process's slot if it holds nothing (a process with no memory and
  // no context is not listed). Not while it has a context: so never under OnOwnPool's feet.
  void ReleaseIfEmpty(Image::Slot& slot) {
    if (slot.contexts != 0) return;
    for (uint64_t held : slot.bytes) {
      if (held != 0) return;
    }
    __atomic_store_n(&slot.pid, 0, __ATOMIC_RELAXED);
    if (fd_ < 0) ownSlot_.store(-1, std::memory_order_relaxed);
  }

  // In memory, a charge on a pool where this process has a context: under that pool's lock alone,
  // so the threads of different devices never wait on one another here (one shared lock made a
  // probe of eight devices at once cost 2.6x the CPU of eight probes one after another). The slot
  // cannot go meanwhile (not while it has a context), and that context's bit changes only under
  // this lock too (Open/CloseContext, through Transact). Runs `change(slot)` and returns true; false,
  // having done nothing, where the case is another (then Transact).
  template <typename Change>
  bool OnOwnPool(int pool, Change&& change) {
    if (fd_ >= 0) return false;
    std::lock_guard<std::mutex> lock(poolLocks_[pool].mutex);
    const int index = ownSlot_.load(std::memory_order_relaxed);
    if (index < 0) return false;
    Image::Slot& slot = image_.slots[index];
    if (PidOf(slot) != CurrentPid() || !HasContext(slot, pool)) return false;  // a forked child's copy; no context
    change(slot);
    return true;
  }

  // CUDASIM_MEMORY_LOG (`path`): one line per change; called inside Transact, so lines are in order.
  // `used` is asked for only when the line is written.
  template <typename Used>
  static void Log(const char* path, const char* what, int pool, uint64_t bytes, Used used) {
    if (path == nullptr || *path == '\0' || bytes == 0) return;
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return;
    char line[160];
    int length = std::snprintf(line, sizeof line, "%d %s pool=%d bytes=%llu used=%llu\n", static_cast<int>(getpid()),
                               what, pool, static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(used()));
    ssize_t written = write(fd, line, static_cast<size_t>(length));
    (void)written;
    close(fd);
  }

  static uint64_t Sum(const Image& image, int pool) {
    uint64_t total = 0;
    for (const Image::Slot& slot : image.slots) total += slot.pid != 0 ? slot.bytes[pool] : 0;
    return total;
  }

  // Every process's bytes on the pool. In memory, the image changes only through Add and Remove,
  // which keep each pool's total equal to Sum (a free slot holds nothing), so no charge scans the 64 slots;
  // a shared file is read anew by each transaction and summed.
  uint64_t Used(const Image& image, int pool) const { return fd_ < 0 ? poolLocks_[pool].total : Sum(image, pool); }

 public:
  bool Charge(int pool, uint64_t bytes, uint64_t capacity, const char* memoryLog) override {
    bool charged = false;
    const auto own = [&](Image::Slot& slot) {
      if ((charged = Fits(image_, pool, bytes, capacity))) Credit(image_, slot, pool, bytes, memoryLog);
    };
    if (OnOwnPool(pool, own)) return charged;
    Transact(pool, [&](Image& image) { return charged = Add(image, pool, bytes, capacity, false, memoryLog); });
    return charged;
  }

  void Uncharge(int pool, uint64_t bytes, const char* memoryLog) override {
    if (OnOwnPool(pool, [&](Image::Slot& slot) { Debit(image_, slot, pool, bytes, memoryLog); })) return;
    Transact(pool, [&](Image& image) { return Remove(image, pool, bytes, false, memoryLog); });
  }

  ContextOpened OpenContext(int pool, uint64_t bytes, uint64_t capacity, bool exclusive) override {
    ContextOpened opened = ContextOpened::kOutOfMemory;
    Transact(pool, [&](Image& image) {
      int pid = CurrentPid();
      for (const Image::Slot& other : image.slots) {
        if (exclusive && other.pid != 0 && other.pid != pid && (other.contexts >> pool & 1) != 0) {
          opened = ContextOpened::kBusy;
          return false;
        }
      }
      if (!Add(image, pool, bytes, capacity, true, MemoryLog())) return false;
      opened = ContextOpened::kOk;
      return true;
    });
    return opened;
  }

  void CloseContext(int pool, uint64_t bytes) override {
    Transact(pool, [&](Image& image) { return Remove(image, pool, bytes, true, MemoryLog()); });
  }

 private:
  // Whether every holder together stays within `capacity` with `bytes` more on the pool.
  bool Fits(const Image& image, int pool, uint64_t bytes, uint64_t capacity) const {
    uint64_t used = Used(image, pool);
    return used <= capacity && bytes <= capacity - used;
  }

  // Adds `bytes` to the slot's and the pool's, and logs it; with the pool's lock held.
  void Credit(const Image& image, Image::Slot& slot, int pool, uint64_t bytes, const char* memoryLog) {
    slot.bytes[pool] += bytes;
    if (fd_ < 0) poolLocks_[pool].total += bytes;
    Log(memoryLog, "charge", pool, bytes, [&] { return Used(image, pool); });
  }

  // Takes up to `bytes` from the slot's and the pool's, and logs it; with the pool's lock held.
  void Debit(const Image& image, Image::Slot& slot, int pool, uint64_t bytes, const char* memoryLog) {
    uint64_t taken = bytes < slot.bytes[pool] ? bytes : slot.bytes[pool];
    slot.bytes[pool] -= taken;
    if (fd_ < 0) poolLocks_[pool].total -= taken;
    Log(memoryLog, "uncharge", pool, taken, [&] { return Used(image, pool); });
  }

  // Inside Transact: charges `bytes` to this process (and records its context on the pool) unless
  // every holder together would then exceed `capacity`. True when the image changed.
  bool Add(Image& image, int pool, uint64_t bytes, uint64_t capacity, bool context, const char* memoryLog) {
    if (!Fits(image, pool, bytes, capacity)) return false;
    Image::Slot* slot = SlotOf(image, true);
    if (slot == nullptr) return false;  // 64 processes hold memory already: out of memory
    if (context) __atomic_fetch_or(&slot->contexts, 1ull << pool, __ATOMIC_RELAXED);
    Credit(image, *slot, pool, bytes, memoryLog);
    return true;
  }

  // Inside Transact: uncharges up to `bytes` of this process's (and drops its context on the pool).
  bool Remove(Image& image, int pool, uint64_t bytes, bool context, const char* memoryLog) {
    Image::Slot* slot = SlotOf(image, false);
    if (slot == nullptr) return false;
    Debit(image, *slot, pool, bytes, memoryLog);
    if (context) __atomic_fetch_and(&slot->contexts, ~(1ull << pool), __ATOMIC_RELAXED);
    ReleaseIfEmpty(*slot);
    return true;
  }

 public:
  uint64_t Charged(int pool) override {
    if (fd_ < 0) {  // in memory, the pool's total is the pool's lock's alone
      std::lock_guard<std::mutex> lock(poolLocks_[pool].mutex);
      return poolLocks_[pool].total;
    }
    uint64_t total = 0;
    Transact(pool, [&](Image& image) {
      total = Used(image, pool);
      return false;
    });
    return total;
  }

  std::vector<Holder> Holders(int pool) override {
    std::vector<Holder> holders;
    Transact(pool, [&](Image& image) {
      for (const Image::Slot& slot : image.slots) {
        if (slot.pid != 0 && (slot.bytes[pool] > 0 || (slot.contexts >> pool & 1) != 0)) {
          holders.push_back({slot.pid, slot.bytes[pool]});
        }
      }
      return false;
    });
    return holders;
  }

 private:
  uint64_t identity_;
  std::string path_;
  int fd_;  // -1: in memory
  std::mutex mutex_;
  Image image_;                      // the in-memory ledger
  // In memory, each pool's lock (the pool's bytes and total, and a context's bit on it, change only
  // under it) and its total (Sum(image_, pool), kept as it changes), on a cache line of their own.
  struct alignas(64) PoolLock {
    std::mutex mutex;
    uint64_t total = 0;
  };
  PoolLock poolLocks_[kMaxPools];
  std::atomic<int> ownSlot_{-1};
};

// Never destroyed: a driver call on a worker thread may outlive static destruction at exit.
std::mutex& gOpenMutex = *new std::mutex;
Ledger* gLedger = nullptr;

}  // namespace

Accounting* Accounting::Open(const Machine& machine, std::string& error) {
  std::lock_guard<std::mutex> lock(gOpenMutex);
  const std::string& path = machine.config.statePath;
  if (gLedger != nullptr) {
    if (gLedger->identity() == machine.identity && gLedger->path() == path) return gLedger;
    error = "the simulated driver and NVML of one process must see one machine: CUDASIM_* changed between their "
            "initializations";
    return nullptr;
  }
  int fd = -1;
  if (!path.empty()) {
    fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0) {
      error = "CUDASIM_STATE " + path + ": " + std::strerror(errno);
      return nullptr;
    }
  }
  auto* ledger = new Ledger(machine.identity, path, fd);
  if (!ledger->Check(error)) {
    if (fd >= 0) close(fd);
    delete ledger;
    return nullptr;
  }
  gLedger = ledger;  // for the process's life
  return gLedger;
}

}  // namespace cudasim
