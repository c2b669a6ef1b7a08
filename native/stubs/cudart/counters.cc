// What the stub runtime saw, written when the process exits: each device's peak memory (context
// included: what nvidia-smi would have shown), the bytes cudaMalloc held at most, and the
// device->host reads that returned zeros.
//   VRAMFIT_STUB_COUNTERS=FILE   key=value lines into FILE ("%p" in it becomes the process id)
//   VRAMFIT_STUB_PEAK_LINE=1     `VRAMFIT_PEAK_BYTES=<n>` on stderr, the line src/job reads from a job
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "copies.h"
#include "memory.h"
#include "runtime.h"

namespace cudart {
namespace {

std::string CountersPath() {
  const char* text = std::getenv("VRAMFIT_STUB_COUNTERS");
  std::string path = text != nullptr ? text : "";
  for (size_t at = path.find("%p"); at != std::string::npos; at = path.find("%p", at)) {
    path.replace(at, 2, std::to_string(getpid()));
  }
  return path;
}

void WriteCounters() {
  std::string path = CountersPath();
  const char* peakLine = std::getenv("VRAMFIT_STUB_PEAK_LINE");
  bool printPeak = peakLine != nullptr && std::string(peakLine) == "1";
  if (path.empty() && !printPeak) return;
  uint64_t peak = 0;
  std::string devices;
  {
    std::lock_guard<std::mutex> lock(R().mutex);
    for (const Device& device : R().devices) {
      if (device.peakChargedBytes > peak) peak = device.peakChargedBytes;
      devices += "device" + std::to_string(device.ordinal) + ".peakBytes=" + std::to_string(device.peakChargedBytes) + "\n";
    }
  }
  if (printPeak) std::fprintf(stderr, "VRAMFIT_PEAK_BYTES=%llu\n", static_cast<unsigned long long>(peak));
  if (path.empty()) return;
  MemoryCounters memory = ReadMemoryCounters();
  CopyCounters copies = ReadCopyCounters();
  FILE* file = std::fopen(path.c_str(), "w");
  if (file == nullptr) {
    std::fprintf(stderr, "vramfit cudart stub: cannot write VRAMFIT_STUB_COUNTERS=%s\n", path.c_str());
    return;
  }
  std::fprintf(file,
               "VRAMFIT_PEAK_BYTES=%llu\n%speakMallocBytes=%llu\nmallocCalls=%llu\nfailedMallocs=%llu\nfreeCalls=%llu\n"
               "deviceToHostCopies=%llu\ndeviceToHostBytes=%llu\nhostToDeviceBytes=%llu\n",
               static_cast<unsigned long long>(peak), devices.c_str(),
               static_cast<unsigned long long>(memory.peakLiveBytes),
               static_cast<unsigned long long>(memory.mallocCalls),
               static_cast<unsigned long long>(memory.failedMallocs),
               static_cast<unsigned long long>(memory.freeCalls),
               static_cast<unsigned long long>(copies.deviceToHostCopies),
               static_cast<unsigned long long>(copies.deviceToHostBytes),
               static_cast<unsigned long long>(copies.hostToDeviceBytes));
  std::fclose(file);
}

// Registered when the library loads, so it runs at exit() after the job's own atexit handlers
// (Python's included) have freed what they free.
__attribute__((constructor)) void RegisterCounters() {
  std::atexit(WriteCounters);
}

}  // namespace
}  // namespace cudart
