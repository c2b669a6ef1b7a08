// A CUDA device for a CPU-only build of PyTorch: a device guard and CUDA hooks that answer without a GPU, so
// autograd, autocast and the optimizers run on FakeTensorMode's `cuda` tensors (no kernel ever runs: fake
// tensors have no data). A CUDA build of PyTorch registers its own and never loads this file.
// The interfaces: c10/core/impl/DeviceGuardImplInterface.h and ATen/detail/CUDAHooksInterface.h (torch 2.13).
#include <ATen/detail/CUDAHooksInterface.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <utility>

namespace {

thread_local c10::DeviceIndex current_device = 0;
int device_count = 1;

// Devices and streams are bookkeeping only: every stream is the default stream of its device.
struct FakeCudaGuard final : c10::impl::DeviceGuardImplInterface {
  c10::DeviceType type() const override { return c10::DeviceType::CUDA; }
  c10::Device exchangeDevice(c10::Device d) const override {
    auto old = getDevice();
    current_device = d.index();
    return old;
  }
  c10::Device getDevice() const override { return c10::Device(c10::DeviceType::CUDA, current_device); }
  void setDevice(c10::Device d) const override { current_device = d.index(); }
  void uncheckedSetDevice(c10::Device d) const noexcept override { current_device = d.index(); }
  c10::Stream getStream(c10::Device d) const override { return c10::Stream(c10::Stream::DEFAULT, d); }
  c10::Stream exchangeStream(c10::Stream s) const override { return c10::Stream(c10::Stream::DEFAULT, s.device()); }
  c10::DeviceIndex deviceCount() const noexcept override { return static_cast<c10::DeviceIndex>(device_count); }
  // The autograd engine records and waits on events between streams; with one stream there is nothing to order.
  void record(void**, const c10::Stream&, const c10::DeviceIndex, const c10::EventFlag) const override {}
  void block(void*, const c10::Stream&) const override {}
  bool queryEvent(void*) const override { return true; }
  void destroyEvent(void*, const c10::DeviceIndex) const noexcept override {}
  bool queryStream(const c10::Stream&) const override { return true; }
  void synchronizeStream(const c10::Stream&) const override {}
};

struct FakeCudaHooks final : at::CUDAHooksInterface {
  explicit FakeCudaHooks(at::CUDAHooksArgs) {}
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return device_count > 0; }
  bool hasPrimaryContext(c10::DeviceIndex) const override { return true; }
  void init() const override {}
  bool hasCUDA() const override { return true; }
  void setCurrentDevice(c10::DeviceIndex d) const override { ::current_device = d; }
  c10::DeviceIndex getCurrentDevice() const override { return ::current_device; }
  c10::DeviceIndex exchangeDevice(c10::DeviceIndex d) const override { return std::exchange(::current_device, d); }
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex d) const override { return exchangeDevice(d); }
  c10::DeviceIndex current_device() const override { return ::current_device; }
  int getNumGPUs() const override { return device_count; }
  c10::DeviceIndex deviceCount() const override { return static_cast<c10::DeviceIndex>(device_count); }
  bool isPinnedPtr(const void*) const override { return false; }
};

}  // namespace

C10_REGISTER_GUARD_IMPL(CUDA, FakeCudaGuard);

// The registry holds one factory per name; the CPU build registered none for "CUDAHooks", so at::getCUDAHooks()
// finds ours (it looks once, on first use: this library is loaded before anything asks).
namespace at {
C10_REGISTER_CLASS(CUDAHooksRegistry, CUDAHooks, FakeCudaHooks);
}

// Called through ctypes: no Python binding, so nothing but c10's and ATen's headers is compiled.
extern "C" void vramfit_set_device_count(int count) { device_count = count; }
