// Checking the JS arguments before any work is queued.
#ifndef VRAMFIT_ARGUMENTS_H
#define VRAMFIT_ARGUMENTS_H

#include <napi.h>

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace vramfit {

// Each throws NativeError ERR_INVALID_ARGUMENT in the shape of errors.ts's invalidArgument:
// "<what>: expected <expectation>, got <value>".

// `library` names it in the message: "CUDA driver" or "NVML".
std::string LibraryPathArgument(const Napi::Value& value, const char* library = "CUDA driver");
int OrdinalArgument(const Napi::Value& value);
// A non-empty array of distinct ordinals (probeEach, memGetInfoEach).
std::vector<int> OrdinalsArgument(const Napi::Value& value);
// Non-negative integers up to 2^53, the largest byte count a JS number holds exactly.
std::vector<size_t> SizesArgument(const Napi::Value& value);
// A flag JS raises (flag[0] = 1) to cancel a probe in flight: an Int32Array, ideally over a
// SharedArrayBuffer. The task keeps the array alive until it settles, then Release()s it on the JS
// thread; read from the device thread with an atomic load.
class CancelFlag {
 public:
  CancelFlag() = default;
  CancelFlag(Napi::Env env, Napi::Int32Array flag);
  bool Raised() const { return data_ != nullptr && __atomic_load_n(data_, __ATOMIC_ACQUIRE) != 0; }
  void Release(Napi::Env env);

 private:
  napi_ref ref_ = nullptr;  // raw: never deleted off the JS thread
  const int32_t* data_ = nullptr;
};

struct ProbeOptions {
  bool touch = false;
  CancelFlag cancel;
  // Free memory the probe must leave on the device (0: none, and no check).
  size_t reserveBytes = 0;
  // Most bytes the probe may hold at once, requested sizes summed (--max-mem); unset: no cap.
  std::optional<size_t> limitBytes;
  // Allocations given back during the probe, as (before, which) pairs in order: before sizes[before]
  // is allocated, the block of sizes[which] is freed (which < before). Empty: nothing is freed
  // until the end.
  std::vector<std::pair<size_t, size_t>> releases;
  // Per allocation, the page size to map it with through the driver's virtual-memory API, as
  // PyTorch's expandable segments do (0: cuMemAlloc). Empty: every allocation is a cuMemAlloc.
  std::vector<size_t> pageBytes;
};

// { touch?: boolean, cancel?: Int32Array, reserveBytes?: number, limitBytes?: number,
//   releases?: number[] (flattened before, which pairs), pageBytes?: number[] (one per size) };
// options may be undefined (no touch, no cancel, no reserve, no cap).
ProbeOptions ProbeOptionsArgument(const Napi::Value& options);

}  // namespace vramfit

#endif  // VRAMFIT_ARGUMENTS_H
