// The stub CUDA runtime's process state (runtime.h).
#include "runtime.h"

#include <cstdio>
#include <cstring>

#include "../../sim/visible_devices.h"

namespace cudart {
namespace {

thread_local Error tLastError = kSuccess;
thread_local int tCurrentOrdinal = 0;

std::once_flag gInitOnce;
Error gInitError = kSuccess;

void ReadMachine() {
  std::string error;
  std::optional<cudasim::Machine> machine = cudasim::BuildMachine(error);
  if (!machine) {
    std::fprintf(stderr, "vramfit cudart stub: %s\n", error.c_str());
    gInitError = kErrorInitializationError;
    return;
  }
  std::vector<int> pools = cudasim::VisiblePools(*machine);
  if (pools.empty()) {
    gInitError = kErrorNoDevice;
    return;
  }
  cudasim::Accounting* accounting = cudasim::Accounting::Open(*machine, error);
  if (accounting == nullptr) {
    std::fprintf(stderr, "vramfit cudart stub: %s\n", error.c_str());
    gInitError = kErrorInitializationError;
    return;
  }
  Runtime& runtime = R();
  runtime.machine = *machine;
  runtime.accounting = accounting;
  for (int poolIndex : pools) {
    const cudasim::Pool& pool = runtime.machine.pools[poolIndex];
    const cudasim::DeviceSpec& spec = runtime.machine.config.devices[pool.gpu];
    Device device;
    device.ordinal = static_cast<int>(runtime.devices.size());
    device.pool = poolIndex;
    device.spec = &spec;
    device.arch = &cudasim::ArchitectureOf(spec.ccMajor, spec.ccMinor);
    // A MIG instance is named as the simulated driver names it.
    device.name = pool.mig < 0 ? spec.name
                               : spec.name + " MIG " + std::to_string((pool.totalBytes + 500000000) / 1000000000) + "gb";
    std::memcpy(device.uuid, pool.uuid, 16);
    device.totalBytes = pool.totalBytes;
    runtime.devices.push_back(device);
  }
}

}  // namespace

// Never destroyed: a runtime call on another thread may outlive static destruction at exit.
Runtime& R() {
  static Runtime& runtime = *new Runtime;
  return runtime;
}

Error Initialize() {
  std::call_once(gInitOnce, ReadMachine);
  return gInitError;
}

Error Return(Error error) {
  if (error != kSuccess) tLastError = error;
  return error;
}

Error TakeLastError() {
  Error error = tLastError;
  tLastError = kSuccess;
  return error;
}

Error PeekLastError() {
  return tLastError;
}

int CurrentOrdinal() {
  return tCurrentOrdinal;
}

void SetCurrentOrdinal(int ordinal) {
  tCurrentOrdinal = ordinal;
}

uint64_t CapacityOf(const Device& device) {
  const cudasim::Pool& pool = R().machine.pools[device.pool];
  return pool.totalBytes - pool.baseUsedBytes;
}

bool ChargeLocked(Device& device, uint64_t bytes) {
  if (!R().accounting->Charge(device.pool, bytes, CapacityOf(device))) return false;
  device.chargedBytes += bytes;
  if (device.chargedBytes > device.peakChargedBytes) device.peakChargedBytes = device.chargedBytes;
  return true;
}

void UnchargeLocked(Device& device, uint64_t bytes) {
  R().accounting->Uncharge(device.pool, bytes);
  device.chargedBytes -= bytes < device.chargedBytes ? bytes : device.chargedBytes;
}

Error DeviceOf(int ordinal, Device*& device) {
  if (Error error = Initialize()) return error;
  if (ordinal < 0 || static_cast<size_t>(ordinal) >= R().devices.size()) return kErrorInvalidDevice;
  device = &R().devices[ordinal];
  return kSuccess;
}

Error UseDevice(int ordinal, Device*& device) {
  if (Error error = Initialize()) return error;
  Runtime& runtime = R();
  if (ordinal < 0 || static_cast<size_t>(ordinal) >= runtime.devices.size()) return kErrorInvalidDevice;
  device = &runtime.devices[ordinal];
  std::lock_guard<std::mutex> lock(runtime.mutex);
  if (device->contextOpen) return kSuccess;
  int mode = device->spec->computeMode;
  if (mode == cudasim::kComputeModeProhibited) return kErrorDevicesUnavailable;
  uint64_t contextBytes = runtime.machine.config.contextBytes;
  switch (runtime.accounting->OpenContext(device->pool, contextBytes, CapacityOf(*device),
                                          mode == cudasim::kComputeModeExclusiveProcess)) {
    case cudasim::ContextOpened::kBusy: return kErrorDevicesUnavailable;
    case cudasim::ContextOpened::kOutOfMemory: return kErrorMemoryAllocation;
    case cudasim::ContextOpened::kOk: break;
  }
  device->contextOpen = true;
  device->chargedBytes += contextBytes;
  if (device->chargedBytes > device->peakChargedBytes) device->peakChargedBytes = device->chargedBytes;
  return kSuccess;
}

Error UseCurrentDevice(Device*& device) {
  return UseDevice(CurrentOrdinal(), device);
}

}  // namespace cudart
