// probe(ordinal, sizes, options): does this set of tensors fit on the device right now?
#include <memory>
#include <vector>

#include "addon_functions.h"
#include "arguments.h"
#include "device_allocations.h"
#include "device_session.h"
#include "device_task.h"
#include "native_error.h"

namespace vramfit {
namespace {

class ProbeTask : public DeviceTask {
 public:
  ProbeTask(Napi::Env env, int ordinal, std::vector<size_t> sizes, ProbeOptions options)
      : DeviceTask(env, "vramfit:probe"), ordinal_(ordinal), sizes_(std::move(sizes)), options_(options) {}

 private:
  bool Cancelled() const { return options_.cancel.Raised(); }

  void Run() override {
    Driver& driver = Driver::Get();
    const DriverApi& api = driver.api();
    if (Cancelled()) throw Aborted();  // cancelled while queued behind another probe
    DeviceSession session(driver, ordinal_);  // one probe per device at a time
    DeviceAllocations allocations(api);       // declared after the session: freed while it is current
    for (size_t i = 0; i < sizes_.size(); ++i) {
      if (Cancelled()) Abort(allocations);
      if (sizes_[i] == 0) continue;  // the driver rejects 0-byte allocations; they need no memory
      if (!allocations.TryAllocate(sizes_[i])) {
        failedIndex_ = static_cast<long long>(i);
        break;
      }
    }
    if (failedIndex_ < 0 && options_.touch) {
      allocations.Touch([this] { return Cancelled(); });
      if (Cancelled()) Abort(allocations);
    }
    size_t totalBytes = 0;
    CheckCuda(api, api.cuMemGetInfo_v2(&freeBytesAtPeak_, &totalBytes), "cuMemGetInfo_v2");
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

  Napi::Value Result(Napi::Env env) override {
    Napi::Object result = Napi::Object::New(env);
    result.Set("fits", failedIndex_ < 0);
    result.Set("failedIndex", static_cast<double>(failedIndex_));
    result.Set("allocated", static_cast<double>(allocated_));
    result.Set("freeBytesAtPeak", static_cast<double>(freeBytesAtPeak_));
    return result;
  }

  void ReleaseJs(Napi::Env env) override { options_.cancel.Release(env); }

  int ordinal_;
  std::vector<size_t> sizes_;
  ProbeOptions options_;
  long long failedIndex_ = -1;
  size_t allocated_ = 0;  // successful cuMemAlloc_v2 calls; skipped 0-byte sizes are not counted
  size_t freeBytesAtPeak_ = 0;
};

}  // namespace

Napi::Value Probe(const Napi::CallbackInfo& info) {
  return StartDeviceTask(info.Env(), [&] {
    int ordinal = OrdinalArgument(info[0]);
    std::vector<size_t> sizes = SizesArgument(info[1]);
    ProbeOptions options = ProbeOptionsArgument(info[2]);
    auto task = std::make_unique<ProbeTask>(info.Env(), ordinal, std::move(sizes), options);
    Napi::Promise promise = task->Start(ordinal);
    task.release();  // it deletes itself once settled
    return promise;
  });
}

}  // namespace vramfit
