// probe(ordinal, sizes, options): does this set of tensors fit on the device right now?
#include <vector>

#include "addon_functions.h"
#include "arguments.h"
#include "device_allocations.h"
#include "device_session.h"
#include "native_error.h"
#include "promise_worker.h"

namespace vramfit {
namespace {

class ProbeWorker : public PromiseWorker {
 public:
  ProbeWorker(Napi::Env env, int ordinal, std::vector<size_t> sizes, bool touch)
      : PromiseWorker(env, "vramfit:probe"), ordinal_(ordinal), sizes_(std::move(sizes)), touch_(touch) {}

 private:
  void Run() override {
    Driver& driver = Driver::Get();
    const DriverApi& api = driver.api();
    DeviceSession session(driver, ordinal_);  // one probe per device at a time
    DeviceAllocations allocations(api);       // declared after the session: freed while it is current
    for (size_t i = 0; i < sizes_.size(); ++i) {
      if (sizes_[i] == 0) continue;  // the driver rejects 0-byte allocations; they need no memory
      if (!allocations.TryAllocate(sizes_[i])) {
        failedIndex_ = static_cast<long long>(i);
        break;
      }
    }
    if (failedIndex_ < 0 && touch_) allocations.Touch();
    size_t totalBytes = 0;
    CheckCuda(api, api.cuMemGetInfo_v2(&freeBytesAtPeak_, &totalBytes), "cuMemGetInfo_v2");
    allocated_ = allocations.count();
    allocations.FreeAll();  // reports a failed free; the destructor only covers error paths
  }

  Napi::Value Result(Napi::Env env) override {
    Napi::Object result = Napi::Object::New(env);
    result.Set("fits", failedIndex_ < 0);
    result.Set("failedIndex", static_cast<double>(failedIndex_));
    result.Set("allocated", static_cast<double>(allocated_));
    result.Set("freeBytesAtPeak", static_cast<double>(freeBytesAtPeak_));
    return result;
  }

  int ordinal_;
  std::vector<size_t> sizes_;
  bool touch_;
  long long failedIndex_ = -1;
  size_t allocated_ = 0;  // successful cuMemAlloc_v2 calls; skipped 0-byte sizes are not counted
  size_t freeBytesAtPeak_ = 0;
};

}  // namespace

Napi::Value Probe(const Napi::CallbackInfo& info) {
  return StartWorker(info.Env(), [&] {
    int ordinal = OrdinalArgument(info[0]);
    std::vector<size_t> sizes = SizesArgument(info[1]);
    bool touch = TouchOption(info[2]);
    return new ProbeWorker(info.Env(), ordinal, std::move(sizes), touch);
  });
}

}  // namespace vramfit
