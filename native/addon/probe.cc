// probe(ordinal, sizes, options): does this set of allocations fit on the device right now, within
// the reserve and the cap?
//
// The reserve is enforced here, next to the allocations, because only here is the free memory
// read between them: another process may allocate while a probe runs, and a check made in JS
// before the probe cannot see that.
#include <algorithm>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "addon_functions.h"
#include "arguments.h"
#include "device_allocations.h"
#include "device_session.h"
#include "device_task.h"
#include "js_error.h"
#include "native_error.h"

namespace vramfit {
namespace {

// Why a probe did not fit; the strings are NativeProbeLimit in src/native/addonTypes.ts.
enum class Limit { kNone, kOutOfMemory, kReserve, kMaxMem };

const char* LimitName(Limit limit) {
  switch (limit) {
    case Limit::kOutOfMemory: return "out-of-memory";
    case Limit::kReserve: return "reserve";
    case Limit::kMaxMem: return "max-mem";
    case Limit::kNone: break;
  }
  return nullptr;
}

// One device's probe: its allocations, and what it found. The sizes and options are the task's,
// shared by every device it probes (read only).
class ProbeRun {
 public:
  ProbeRun(int ordinal, const std::vector<size_t>& sizes, const ProbeOptions& options)
      : ordinal_(ordinal), sizes_(sizes), options_(options) {}

 private:
  bool Cancelled() const { return options_.cancel.Raised(); }

  // cuMemGetInfo_v2's free bytes, remembered as the lowest seen.
  size_t ReadFree(const DriverApi& api) {
    size_t freeBytes = 0, totalBytes = 0;
    CheckCuda(api, api.cuMemGetInfo_v2(&freeBytes, &totalBytes), "cuMemGetInfo_v2");
    minFreeBytes_ = std::min(minFreeBytes_, freeBytes);
    return freeBytes;
  }

  void Refuse(size_t index, Limit limit) {
    failedIndex_ = static_cast<long long>(index);
    limit_ = limit;
  }

  // The driver's allocation unit the headroom is measured in: its page, and PyTorch's rounding of
  // large segments (kRoundLarge), so every segment size is a whole number of them.
  static constexpr size_t kHeadroomUnit = size_t{2} << 20;

  // What the device could still give when `size` could not be had. Out of memory: the largest
  // whole number of kHeadroomUnit under `size` (within the reserve, free memory read now, and the
  // cap) that cuMemAlloc_v2 grants at this moment, found by bisection, each trial freed at once.
  // A reserve refusal: the free memory above the reserve; the cap: what it leaves (the step's
  // replay never exceeds it); both in whole units too, as the driver rounds. Nothing the probe holds is freed: the caller replays the step at what
  // is held plus this, so PyTorch's out-of-memory path decides, with the device's real room, which
  // cached segments go back before the retry.
  size_t Headroom(const DriverApi& api, DeviceAllocations& allocations, size_t size) {
    size_t most = size - 1;
    if (options_.limitBytes) most = std::min(most, *options_.limitBytes - allocatedBytes_);
    if (limit_ != Limit::kMaxMem && options_.reserveBytes > 0) {
      const size_t freeBytes = ReadFree(api);
      most = std::min(most, freeBytes > options_.reserveBytes ? freeBytes - options_.reserveBytes : 0);
    }
    size_t low = 0, high = most / kHeadroomUnit;  // low units are granted; more than high are not
    if (limit_ != Limit::kOutOfMemory) return high * kHeadroomUnit;
    while (low < high) {
      if (Cancelled()) Abort(allocations);
      const size_t middle = low + (high - low + 1) / 2;
      if (allocations.Grants(middle * kHeadroomUnit)) low = middle;
      else high = middle - 1;
    }
    return low * kHeadroomUnit;
  }

  // Each allocation is checked against the cap (requested bytes, no driver call), then against
  // the reserve (the free memory last read, before allocating), then tried. With a reserve, free
  // memory is read again after each allocation: the driver's rounding, or another process
  // allocating between the reading and the allocation, may have taken it below the reserve, and
  // then the allocation is given back at once and the probe stops there. Without a reserve there
  // is nothing to check, and the probe makes no more driver calls than it must.
  friend class ProbeTask;

  // On the device's thread (ProbeTask::Run).
  void Run() {
    Driver& driver = Driver::Get();
    const DriverApi& api = driver.api();
    if (Cancelled()) throw Aborted();  // cancelled while queued behind another probe
    DeviceSession session(driver, ordinal_);  // one probe per device at a time
    DeviceAllocations allocations(api, ordinal_);  // declared after the session: freed while it is current
    // A caller's mistake, not a result: one page size per allocation, or none.
    if (!options_.pageBytes.empty() && options_.pageBytes.size() != sizes_.size()) throw NativeError("ERR_INVALID_ARGUMENT", "probe: options.pageBytes must give one page size per allocation");
    virtualMemory_ = !options_.pageBytes.empty() && HasVirtualMemory(api);
    const size_t reserve = options_.reserveBytes;
    const bool guarded = reserve > 0;
    size_t freeBytes = ReadFree(api);
    freeBytesAtStart_ = freeBytes;
    size_t peakFreeBytes = freeBytes;  // the last reading with every block then held kept
    // Which block (DeviceAllocations index) holds sizes_[i]; -1 for a skipped 0-byte size.
    std::vector<long long> slot(sizes_.size(), -1);
    std::vector<bool> released(sizes_.size(), false);
    size_t release = 0;
    for (size_t i = 0; i < sizes_.size(); ++i) {
      if (Cancelled()) Abort(allocations);
      // A step's replay gives cached segments back before it retries (options.releases).
      for (; release < options_.releases.size() && options_.releases[release].first == i; ++release) {
        const size_t which = options_.releases[release].second;
        // A caller's mistake, not a result: the destructor frees what is held on the way out.
        if (which >= i || released[which]) throw NativeError("ERR_INVALID_ARGUMENT", "probe: options.releases gives back an allocation not made yet, or twice");
        released[which] = true;
        if (slot[which] < 0) continue;  // 0 bytes: never held
        allocations.FreeAt(static_cast<size_t>(slot[which]));
        slot[which] = -1;
        allocatedBytes_ -= sizes_[which];
        if (guarded) freeBytes = ReadFree(api);
      }
      const size_t size = sizes_[i];
      if (size == 0) continue;  // the driver rejects 0-byte allocations; they need no memory
      if (options_.limitBytes && size > *options_.limitBytes - allocatedBytes_) {
        Refuse(i, Limit::kMaxMem);
        break;
      }
      if (guarded && (freeBytes < reserve || size > freeBytes - reserve)) {
        Refuse(i, Limit::kReserve);
        break;
      }
      const size_t page = options_.pageBytes.empty() ? 0 : options_.pageBytes[i];
      if (!(page > 0 ? allocations.TryMap(size, page) : allocations.TryAllocate(size))) {
        Refuse(i, Limit::kOutOfMemory);
        break;
      }
      slot[i] = static_cast<long long>(allocations.count() - 1);
      if (guarded) {
        freeBytes = ReadFree(api);
        if (freeBytes < reserve) {
          allocations.FreeLast();
          Refuse(i, Limit::kReserve);
          break;
        }
        peakFreeBytes = freeBytes;
      }
      allocatedBytes_ += size;
    }
    if (limit_ != Limit::kNone) headroomBytes_ = Headroom(api, allocations, sizes_[static_cast<size_t>(failedIndex_)]);
    bool touched = false;
    if (limit_ == Limit::kNone && options_.touch) {
      allocations.Touch([this] { return Cancelled(); });
      if (Cancelled()) Abort(allocations);
      touched = true;
    }
    // Unguarded, free memory at the peak has not been read yet; touched, backing the memory may
    // have changed it.
    if (!guarded || touched) peakFreeBytes = ReadFree(api);
    freeBytesAtPeak_ = peakFreeBytes;
    allocated_ = allocations.count();
    allocations.FreeAll();  // reports a failed free; the destructor only covers error paths
  }

  static NativeError Aborted() {
    return NativeError("ERR_ABORTED", "probe cancelled; everything it allocated was freed");
  }

  // Frees what the probe holds (a failed free is reported instead), then rejects as cancelled.
  [[noreturn]] static void Abort(DeviceAllocations& allocations) {
    allocations.FreeAll();
    throw Aborted();
  }

  Napi::Value Answer(Napi::Env env) const {
    Napi::Object result = Napi::Object::New(env);
    result.Set("fits", limit_ == Limit::kNone);
    result.Set("failedIndex", static_cast<double>(failedIndex_));
    result.Set("allocated", static_cast<double>(allocated_));
    result.Set("freeBytesAtPeak", static_cast<double>(freeBytesAtPeak_));
    result.Set("limit", limit_ == Limit::kNone ? env.Null() : Napi::String::New(env, LimitName(limit_)));
    result.Set("allocatedBytes", static_cast<double>(allocatedBytes_));
    result.Set("freeBytesAtStart", static_cast<double>(freeBytesAtStart_));
    result.Set("minFreeBytes", static_cast<double>(minFreeBytes_));
    result.Set("headroomBytes", static_cast<double>(headroomBytes_));
    result.Set("virtualMemory", virtualMemory_);
    return result;
  }

  int ordinal_;
  const std::vector<size_t>& sizes_;
  const ProbeOptions& options_;
  long long failedIndex_ = -1;
  Limit limit_ = Limit::kNone;
  size_t allocated_ = 0;       // successful cuMemAlloc_v2 calls kept (released ones included); skipped 0-byte sizes are not counted
  size_t allocatedBytes_ = 0;  // the requested bytes held when the probe ended its allocations, summed
  size_t freeBytesAtStart_ = 0;
  size_t freeBytesAtPeak_ = 0;
  size_t minFreeBytes_ = SIZE_MAX;
  size_t headroomBytes_ = 0;  // when refused: what the device could still give then (Headroom)
  bool virtualMemory_ = false;  // pages were mapped through the virtual-memory API (options.pageBytes, a driver that has it)
};

// probe (one device, its answer or its error) or probeEach (several devices at once, each its
// own probe of the same sizes, settling with every device's answer or error in their order).
class ProbeTask : public DeviceTask {
 public:
  ProbeTask(Napi::Env env, const std::vector<int>& ordinals, std::vector<size_t> sizes, ProbeOptions options, bool each)
      : DeviceTask(env, "vramfit:probe"), sizes_(std::move(sizes)), options_(options), each_(each) {
    for (int ordinal : ordinals) runs_.emplace_back(ordinal, sizes_, options_);
  }

 private:
  void Run(int ordinal) override {
    for (ProbeRun& run : runs_) {
      if (run.ordinal_ == ordinal) return run.Run();
    }
  }

  Napi::Value Result(Napi::Env env) override {
    if (!each_) return runs_.front().Answer(env);
    Napi::Array answers = Napi::Array::New(env, runs_.size());
    for (size_t i = 0; i < runs_.size(); ++i) answers.Set(i, ErrorAt(i) ? ToJsError(env, *ErrorAt(i)) : runs_[i].Answer(env));
    return answers;
  }

  void ReleaseJs(Napi::Env env) override { options_.cancel.Release(env); }

  std::vector<size_t> sizes_;
  ProbeOptions options_;
  bool each_;
  std::deque<ProbeRun> runs_;  // refer to sizes_ and options_
};

}  // namespace

Napi::Value Probe(const Napi::CallbackInfo& info) {
  return StartDeviceTask(info.Env(), [&] {
    int ordinal = OrdinalArgument(info[0]);
    std::vector<size_t> sizes = SizesArgument(info[1]);
    ProbeOptions options = ProbeOptionsArgument(info[2]);
    auto task = std::make_unique<ProbeTask>(info.Env(), std::vector<int>{ordinal}, std::move(sizes), options, false);
    Napi::Promise promise = task->Start(ordinal);
    task.release();  // it deletes itself once settled
    return promise;
  });
}

// One call for a group of devices (identical devices answered together, src/fit/deviceGroup.ts):
// the arguments are read once, and every device's thread is woken at once.
Napi::Value ProbeEach(const Napi::CallbackInfo& info) {
  return StartDeviceTask(info.Env(), [&] {
    std::vector<int> ordinals = OrdinalsArgument(info[0]);
    std::vector<size_t> sizes = SizesArgument(info[1]);
    ProbeOptions options = ProbeOptionsArgument(info[2]);
    auto task = std::make_unique<ProbeTask>(info.Env(), ordinals, std::move(sizes), options, true);
    Napi::Promise promise = task->StartEach(ordinals);
    task.release();  // it deletes itself once settled
    return promise;
  });
}

}  // namespace vramfit
