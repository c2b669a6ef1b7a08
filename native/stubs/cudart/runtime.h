// The stub CUDA runtime's process state: the simulated machine's devices (libsimgpu.so, the same
// CUDASIM_DEVICES as the simulated driver), each thread's current device and last error, and the
// primary context each device gets on first use.
#ifndef VRAMFIT_STUBS_CUDART_RUNTIME_H
#define VRAMFIT_STUBS_CUDART_RUNTIME_H

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "../../sim/accounting.h"
#include "../../sim/architecture.h"
#include "../../sim/machine.h"
#include "cudart_abi.h"

#define CUDART_API extern "C" __attribute__((visibility("default")))

namespace cudart {

struct Device {
  int ordinal = 0;
  int pool = 0;
  const cudasim::DeviceSpec* spec = nullptr;
  const cudasim::Architecture* arch = nullptr;
  std::string name;
  unsigned char uuid[16] = {};
  uint64_t totalBytes = 0;
  bool contextOpen = false;
  uint64_t chargedBytes = 0;  // this process's, context included: what nvidia-smi would show
  uint64_t peakChargedBytes = 0;
};

struct Runtime {
  std::mutex mutex;  // guards the devices' accounting and the tables of memory.cc and streams.cc
  cudasim::Machine machine;
  cudasim::Accounting* accounting = nullptr;
  std::vector<Device> devices;
};

// Reads the machine on the first call (thread-safe, once): kErrorNoDevice without devices,
// kErrorInitializationError (saying why on stderr) when CUDASIM_* is malformed.
Error Initialize();
Runtime& R();

// Every entry point returns through this: a failure becomes the thread's last error, as in CUDA.
Error Return(Error error);
Error TakeLastError();   // cudaGetLastError: and clears it
Error PeekLastError();   // cudaPeekAtLastError

// The calling thread's current device (cudaSetDevice; 0 until set).
int CurrentOrdinal();
void SetCurrentOrdinal(int ordinal);

// Initializes and checks `ordinal`, without touching the device's context.
Error DeviceOf(int ordinal, Device*& device);

// Initializes, checks `ordinal`, and opens the device's primary context (charging its
// CUDASIM_CONTEXT_BYTES) as the real runtime does on a device's first use. Takes R().mutex.
Error UseDevice(int ordinal, Device*& device);
// The same with the current device.
Error UseCurrentDevice(Device*& device);

// With R().mutex held: charge or uncharge this process's bytes on a device (false: out of memory).
bool ChargeLocked(Device& device, uint64_t bytes);
void UnchargeLocked(Device& device, uint64_t bytes);
uint64_t CapacityOf(const Device& device);

}  // namespace cudart

#endif  // VRAMFIT_STUBS_CUDART_RUNTIME_H
