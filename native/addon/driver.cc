// Loading the driver once per process, and the process-wide count of environments using it.
#include "driver.h"

#include <mutex>
#include <utility>

#include "native_error.h"

namespace vramfit {
namespace {

// Guards gDriver and gEnvironments. Never destroyed, like the driver: a worker thread may still
// run while static destructors do at exit.
std::mutex& gMutex = *new std::mutex;
Driver* gDriver = nullptr;
int gEnvironments = 0;

std::string DeviceCountText(int count) {
  if (count == 0) return "no device";
  std::string text = std::to_string(count) + (count == 1 ? " device" : " devices");
  return text + " (ordinals 0\u2013" + std::to_string(count - 1) + ")";
}

}  // namespace

Driver::Driver(std::unique_ptr<DriverLibrary> library, std::string path, int version, int deviceCount)
    : library_(std::move(library)),
      path_(std::move(path)),
      version_(version),
      deviceCount_(deviceCount),
      contexts_(library_->api(), deviceCount),
      threads_(deviceCount) {}

Driver& Driver::Load(const std::string& path, std::unique_ptr<DriverLibrary> opened) {
  std::lock_guard<std::mutex> lock(gMutex);
  if (gDriver != nullptr) {
    if (gDriver->path_ == path) return *gDriver;
    throw InvalidArgument("loadDriver: the CUDA driver is already loaded from " + gDriver->path_ +
                          "; a process loads one driver, so " + path + " cannot be loaded too");
  }
  auto library = opened != nullptr ? std::move(opened) : std::make_unique<DriverLibrary>(path);
  const DriverApi& api = library->api();
  CUresult init = api.cuInit(0);
  if (init == CUDA_ERROR_NO_DEVICE) {
    throw NativeError("ERR_NO_DEVICE", CudaError(api, init, "cuInit").what(), init, "cuInit");
  }
  CheckCuda(api, init, "cuInit");
  int version = 0, count = 0;
  CheckCuda(api, api.cuDriverGetVersion(&version), "cuDriverGetVersion");
  CheckCuda(api, api.cuDeviceGetCount(&count), "cuDeviceGetCount");
  gDriver = new Driver(std::move(library), path, version, count);  // for the process's life
  return *gDriver;
}

Driver& Driver::Get() {
  std::lock_guard<std::mutex> lock(gMutex);
  if (gDriver == nullptr) {
    throw NativeError("ERR_DRIVER_NOT_LOADED", "the CUDA driver is not loaded: call loadDriver() first");
  }
  return *gDriver;
}

Driver* Driver::IfLoaded() {
  std::lock_guard<std::mutex> lock(gMutex);
  return gDriver;
}

void Driver::AddEnvironment() {
  std::lock_guard<std::mutex> lock(gMutex);
  ++gEnvironments;
}

void Driver::RemoveEnvironment() {
  Driver* driver = nullptr;
  {
    std::lock_guard<std::mutex> lock(gMutex);
    if (--gEnvironments == 0) driver = gDriver;
  }
  if (driver != nullptr) driver->contexts_.ReleaseAll();
}

void Driver::CheckOrdinal(int ordinal) const {
  if (ordinal < 0 || ordinal >= deviceCount_) {
    throw NativeError("ERR_INVALID_DEVICE", "device " + std::to_string(ordinal) +
                                                " does not exist: the driver sees " + DeviceCountText(deviceCount_));
  }
}

CUdevice Driver::Device(int ordinal) const {
  CheckOrdinal(ordinal);
  CUdevice device = 0;
  CheckCuda(api(), api().cuDeviceGet(&device, ordinal), "cuDeviceGet");
  return device;
}

}  // namespace vramfit
