// Kernels: registration of the fat binaries nvcc links in, launches (which succeed and do nothing),
// function attributes, occupancy, runtime-loaded libraries, device symbols, driver entry points.
#include <dlfcn.h>

#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "memory.h"
#include "properties.h"
#include "runtime.h"

using namespace cudart;

namespace {

struct LaunchConfiguration {
  Dim3 grid, block;
  size_t sharedMem;
  void* stream;
};
thread_local std::vector<LaunchConfiguration> tConfigurations;

// One handle per registered module; nothing in it is read.
void* gModuleHandle = nullptr;

Error Launch() {
  Device* device = nullptr;
  return UseCurrentDevice(device);
}

}  // namespace

// nvcc's host stubs (crt/host_runtime.h) register every module at load time and push/pop a launch
// configuration around each <<<>>> launch.
CUDART_API void** __cudaRegisterFatBinary(void* /*fatCubin*/) {
  return &gModuleHandle;
}

CUDART_API void __cudaRegisterFatBinaryEnd(void** /*handle*/) {}

CUDART_API void __cudaUnregisterFatBinary(void** /*handle*/) {}

CUDART_API void __cudaRegisterFunction(void** /*handle*/, const char* /*hostFun*/, char* /*deviceFun*/,
                                       const char* /*deviceName*/, int /*threadLimit*/, void* /*tid*/, void* /*bid*/,
                                       void* /*bDim*/, void* /*gDim*/, int* /*wSize*/) {}

CUDART_API void __cudaRegisterVar(void** /*handle*/, char* /*hostVar*/, char* /*deviceAddress*/,
                                  const char* /*deviceName*/, int /*ext*/, size_t /*size*/, int /*constant*/,
                                  int /*global*/) {}

CUDART_API char __cudaInitModule(void** /*handle*/) {
  return 1;
}

CUDART_API unsigned __cudaPushCallConfiguration(Dim3 grid, Dim3 block, size_t sharedMem, void* stream) {
  tConfigurations.push_back(LaunchConfiguration{grid, block, sharedMem, stream});
  return 0;
}

CUDART_API Error __cudaPopCallConfiguration(Dim3* grid, Dim3* block, size_t* sharedMem, void** stream) {
  if (tConfigurations.empty()) return kErrorInvalidValue;  // cudaErrorMissingConfiguration's role
  const LaunchConfiguration& top = tConfigurations.back();
  if (grid != nullptr) *grid = top.grid;
  if (block != nullptr) *block = top.block;
  if (sharedMem != nullptr) *sharedMem = top.sharedMem;
  if (stream != nullptr) *stream = top.stream;
  tConfigurations.pop_back();
  return kSuccess;
}

// CUDA 13's launch path: the kernel handle is the host function's address.
CUDART_API Error __cudaGetKernel(void** kernel, const void* function) {
  if (kernel == nullptr) return kErrorInvalidValue;
  *kernel = const_cast<void*>(function);
  return kSuccess;
}

CUDART_API Error __cudaLaunchKernel(void* /*kernel*/, Dim3 /*grid*/, Dim3 /*block*/, void** /*args*/,
                                    size_t /*sharedMem*/, void* /*stream*/) {
  return Return(Launch());
}

CUDART_API Error cudaLaunchKernel(const void* /*function*/, Dim3 /*grid*/, Dim3 /*block*/, void** /*args*/,
                                  size_t /*sharedMem*/, void* /*stream*/) {
  return Return(Launch());
}

CUDART_API Error cudaLaunchKernelExC(const void* config, const void* /*function*/, void** /*args*/) {
  if (config == nullptr) return Return(kErrorInvalidValue);
  return Return(Launch());
}

CUDART_API Error cudaLaunchCooperativeKernel(const void* /*function*/, Dim3 /*grid*/, Dim3 /*block*/,
                                             void** /*args*/, size_t /*sharedMem*/, void* /*stream*/) {
  return Return(Launch());
}

// A kernel's attributes as a modest real one has them: 32 registers, no static shared memory, the
// device's full block size, PTX and binary versions of its compute capability.
CUDART_API Error cudaFuncGetAttributes(FuncAttributes* attributes, const void* function) {
  if (attributes == nullptr || function == nullptr) return Return(kErrorInvalidValue);
  Device* device = nullptr;
  if (Error error = DeviceOf(CurrentOrdinal(), device)) return Return(error);
  std::memset(attributes, 0, sizeof *attributes);
  attributes->maxThreadsPerBlock = 1024;
  attributes->numRegs = 32;
  attributes->ptxVersion = attributes->binaryVersion = device->spec->ccMajor * 10 + device->spec->ccMinor;
  attributes->maxDynamicSharedSizeBytes = 48 * 1024;
  attributes->preferredShmemCarveout = -1;
  return kSuccess;
}

CUDART_API Error cudaFuncSetAttribute(const void* function, int /*attr*/, int /*value*/) {
  return function == nullptr ? Return(kErrorInvalidValue) : kSuccess;
}

CUDART_API Error cudaKernelSetAttributeForDevice(void* kernel, int /*attr*/, int /*value*/, int ordinal) {
  Device* device = nullptr;
  if (Error error = DeviceOf(ordinal, device)) return Return(error);
  return kernel == nullptr ? Return(kErrorInvalidValue) : kSuccess;
}

// Blocks per SM limited by threads and by the architecture's resident-block limit (registers and
// shared memory are not known for a kernel that does not exist).
CUDART_API Error cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* blocks, const void* function,
                                                                        int blockSize, size_t /*dynamicSMem*/,
                                                                        unsigned int /*flags*/) {
  if (blocks == nullptr || function == nullptr || blockSize <= 0 || blockSize > 1024) return Return(kErrorInvalidValue);
  Device* device = nullptr;
  if (Error error = DeviceOf(CurrentOrdinal(), device)) return Return(error);
  int byThreads = device->arch->maxThreadsPerMultiprocessor / blockSize;
  *blocks = byThreads < device->arch->maxBlocksPerMultiprocessor ? byThreads : device->arch->maxBlocksPerMultiprocessor;
  return kSuccess;
}

CUDART_API Error cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, const void* function, int blockSize,
                                                               size_t dynamicSMem) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(blocks, function, blockSize, dynamicSMem, 0);
}

// Runtime-loaded libraries (cudaLibraryLoadData): a handle; each kernel asked for is a distinct one.
namespace {
struct Library {
  std::map<std::string, std::unique_ptr<char>> kernels;
};
std::mutex gLibraryMutex;
}  // namespace

CUDART_API Error cudaLibraryLoadData(void** library, const void* code, void* /*jitOptions*/, void** /*jitValues*/,
                                     unsigned int /*numJit*/, void* /*libraryOptions*/, void** /*libraryValues*/,
                                     unsigned int /*numLibrary*/) {
  if (library == nullptr || code == nullptr) return Return(kErrorInvalidValue);
  *library = new Library;
  return kSuccess;
}

CUDART_API Error cudaLibraryGetKernel(void** kernel, void* library, const char* name) {
  if (kernel == nullptr || library == nullptr || name == nullptr) return Return(kErrorInvalidValue);
  std::lock_guard<std::mutex> lock(gLibraryMutex);
  std::unique_ptr<char>& handle = static_cast<Library*>(library)->kernels[name];
  if (!handle) handle.reset(new char);
  *kernel = handle.get();
  return kSuccess;
}

CUDART_API Error cudaLibraryUnload(void* library) {
  if (library == nullptr) return Return(kErrorInvalidValue);
  delete static_cast<Library*>(library);
  return kSuccess;
}

// A __device__ variable's device address: a page of address space per symbol, made on first ask.
CUDART_API Error cudaGetSymbolAddress(void** pointer, const void* symbol) {
  if (pointer == nullptr || symbol == nullptr) return Return(kErrorInvalidSymbol);
  static std::map<const void*, void*> addresses;
  std::lock_guard<std::mutex> lock(gLibraryMutex);
  void*& address = addresses[symbol];
  if (address == nullptr) address = ReserveAddressSpace(4096, 4096);
  if (address == nullptr) return Return(kErrorMemoryAllocation);
  *pointer = address;
  return kSuccess;
}

// Driver functions (PyTorch fetches cuMemCreate and friends this way for expandable segments): from
// the libcuda.so.1 the loader finds — the simulated driver, or a stub driver beside this runtime.
// cudaDriverEntryPointQueryResult: 0 success, 1 symbol not found; as the real one, a symbol not
// found is a status, not an error (CUDA Runtime API, cudaGetDriverEntryPointByVersion).
CUDART_API Error cudaGetDriverEntryPointByVersion(const char* symbol, void** function, unsigned int /*version*/,
                                                  unsigned long long /*flags*/, int* status) {
  if (symbol == nullptr || function == nullptr) return Return(kErrorInvalidValue);
  static void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  *function = driver != nullptr ? dlsym(driver, symbol) : nullptr;
  if (status != nullptr) *status = *function != nullptr ? 0 : 1;
  return kSuccess;
}
