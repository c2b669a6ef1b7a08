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
    Transact([&](Image& image) {
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
  // Runs `change` (bool(Image&)) on the current image; writes it back when `change` returns true.
  // A template, not a std::function: a charge is on every allocation's path.
  template <typename Change>
  void Transact(Change&& change) {
    std::lock_guard<std::mutex> lock(mutex_);  // flock does not exclude this process's own threads
    if (fd_ < 0) {
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

  static Image::Slot* SlotOf(Image& image, bool create) {
    int pid = CurrentPid();
    for (Image::Slot& slot : image.slots) {
      if (slot.pid == pid) return &slot;
    }
    if (!create) return nullptr;
    for (Image::Slot& slot : image.slots) {
      if (slot.pid == 0) {
        std::memset(&slot, 0, sizeof slot);
        slot.pid = pid;
        return &slot;
      }
    }
    return nullptr;
  }

  // Frees a slot that holds nothing: a process with no memory and no context is not listed.
  static void ReleaseIfEmpty(Image::Slot& slot) {
    if (slot.contexts != 0) return;
    for (uint64_t held : slot.bytes) {
      if (held != 0) return;
    }
    slot.pid = 0;
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
  // which keep totals_ equal to Sum (a free slot holds nothing), so no charge scans the 64 slots;
  // a shared file is read anew by each transaction and summed.
  uint64_t Used(const Image& image, int pool) const { return fd_ < 0 ? totals_[pool] : Sum(image, pool); }

 public:
  bool Charge(int pool, uint64_t bytes, uint64_t capacity, const char* memoryLog) override {
    bool charged = false;
    Transact([&](Image& image) { return charged = Add(image, pool, bytes, capacity, false, memoryLog); });
    return charged;
  }

  void Uncharge(int pool, uint64_t bytes, const char* memoryLog) override {
    Transact([&](Image& image) { return Remove(image, pool, bytes, false, memoryLog); });
  }

  ContextOpened OpenContext(int pool, uint64_t bytes, uint64_t capacity, bool exclusive) override {
    ContextOpened opened = ContextOpened::kOutOfMemory;
    Transact([&](Image& image) {
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
    Transact([&](Image& image) { return Remove(image, pool, bytes, true, MemoryLog()); });
  }

 private:
  // Inside Transact: charges `bytes` to this process (and records its context on the pool) unless
  // every holder together would then exceed `capacity`. True when the image changed.
  bool Add(Image& image, int pool, uint64_t bytes, uint64_t capacity, bool context, const char* memoryLog) {
    uint64_t used = Used(image, pool);
    if (used > capacity || bytes > capacity - used) return false;
    Image::Slot* slot = SlotOf(image, true);
    if (slot == nullptr) return false;  // 64 processes hold memory already: out of memory
    if (context) slot->contexts |= 1ull << pool;
    slot->bytes[pool] += bytes;
    if (fd_ < 0) totals_[pool] += bytes;
    Log(memoryLog, "charge", pool, bytes, [&] { return used + bytes; });
    return true;
  }

  // Inside Transact: uncharges up to `bytes` of this process's (and drops its context on the pool).
  bool Remove(Image& image, int pool, uint64_t bytes, bool context, const char* memoryLog) {
    Image::Slot* slot = SlotOf(image, false);
    if (slot == nullptr) return false;
    uint64_t taken = bytes < slot->bytes[pool] ? bytes : slot->bytes[pool];
    slot->bytes[pool] -= taken;
    if (fd_ < 0) totals_[pool] -= taken;
    if (context) slot->contexts &= ~(1ull << pool);
    Log(memoryLog, "uncharge", pool, taken, [&] { return Used(image, pool); });
    ReleaseIfEmpty(*slot);
    return true;
  }

 public:
  uint64_t Charged(int pool) override {
    uint64_t total = 0;
    Transact([&](Image& image) {
      total = Used(image, pool);
      return false;
    });
    return total;
  }

  std::vector<Holder> Holders(int pool) override {
    std::vector<Holder> holders;
    Transact([&](Image& image) {
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
  uint64_t totals_[kMaxPools] = {};  // in memory: Sum(image_, pool) for each pool
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
