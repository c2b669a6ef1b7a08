// The loaded CUDA driver: one per process, loaded once, never unloaded.
#ifndef VRAMFIT_DRIVER_H
#define VRAMFIT_DRIVER_H

#include <memory>
#include <string>

#include "device_contexts.h"
#include "device_threads.h"
#include "driver_library.h"

namespace vramfit {

// Process-global on purpose, unlike the per-addon state (AddonState): the CUDA driver itself is
// one per process (one cuInit, one primary context per device shared with every library in the
// process), so every Node environment (main thread and worker_threads) must share this one
// object. A mutex guards loading; a loaded Driver is never unloaded.
class Driver {
 public:
  // Opens the library, cuInit(0), reads the version and device count. Once per process: a later
  // call with the same path returns the loaded driver, with another path throws. A failed load
  // closes the library again, so the caller may retry. Throws NativeError. `opened`: the library
  // at `path`, already opened by the caller (load_driver.cc opens it on the JS thread), or null.
  static Driver& Load(const std::string& path, std::unique_ptr<DriverLibrary> opened = nullptr);
  // Throws ERR_DRIVER_NOT_LOADED before a successful Load.
  static Driver& Get();
  // The loaded driver, or nullptr before a successful Load.
  static Driver* IfLoaded();
  // Each Node environment that loads the addon is counted; when the last one is torn down, the
  // primary contexts are released (the driver stays loaded: threads may still be in it).
  static void AddEnvironment();
  static void RemoveEnvironment();

  const DriverApi& api() const { return library_->api(); }
  const std::string& path() const { return path_; }
  int version() const { return version_; }
  bool uuidV2() const { return library_->uuidV2(); }
  int deviceCount() const { return deviceCount_; }
  DeviceContexts& contexts() { return contexts_; }
  DeviceThreads& threads() { return threads_; }

  // Throws ERR_INVALID_DEVICE when the driver has no such ordinal. No driver call: JS thread safe.
  void CheckOrdinal(int ordinal) const;
  // The CUdevice behind a JS ordinal. Throws ERR_INVALID_DEVICE when the driver has no such device.
  CUdevice Device(int ordinal) const;

 private:
  Driver(std::unique_ptr<DriverLibrary> library, std::string path, int version, int deviceCount);

  std::unique_ptr<DriverLibrary> library_;
  std::string path_;
  int version_;
  int deviceCount_;  // fixed at cuInit: the driver enumerates devices once
  DeviceContexts contexts_;
  DeviceThreads threads_;
};

}  // namespace vramfit

#endif  // VRAMFIT_DRIVER_H
