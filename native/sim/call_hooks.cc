// Tracing, lost GPUs and latency for the simulated entry points.
#include "call_hooks.h"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

extern char** environ;

namespace cudasim {

CallSettings ReadCallSettings() {
  CallSettings settings;
  constexpr size_t kPrefix = 8;  // "CUDASIM_"
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const char* text = *entry;
    if (text[0] != 'C' || std::strncmp(text, "CUDASIM_", kPrefix) != 0) continue;
    const char* name = text + kPrefix;
    // The first entry of a name, as getenv finds it.
    auto take = [name](const char* key, size_t length, const char*& value) {
      if (value == nullptr && std::strncmp(name, key, length) == 0 && name[length] == '=') value = name + length + 1;
    };
    switch (name[0]) {  // CUDASIM_DEVICES and the other settings read once pass here at one comparison
      case 'F': take("FAIL", 4, settings.fail); break;
      case 'T': take("TRACE", 5, settings.trace); break;
      case 'P': take("PAUSE", 5, settings.pause); break;
      case 'L': take("LOST", 4, settings.lost); break;
      case 'M': take("MEMORY_LOG", 10, settings.memoryLog); break;
      case 'A': take("ASYNC_FAIL", 10, settings.asyncFail); break;
      default: break;
    }
  }
  return settings;
}

void TraceCall(const char* function) {
  TraceCall(function, std::getenv("CUDASIM_TRACE"));
}

void TraceCall(const char* function, const char* path) {
  if (path == nullptr || *path == '\0') return;
  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;
  std::string line = std::string(function) + "\n";
  // One write per line with O_APPEND: lines from concurrent threads and processes never interleave.
  ssize_t written = write(fd, line.data(), line.size());
  (void)written;
  close(fd);
}

bool GpuLost(int gpu) {
  return GpuLost(gpu, std::getenv("CUDASIM_LOST"));
}

bool GpuLost(int gpu, const char* text) {
  if (text == nullptr) return false;
  const char* p = text;
  while (*p != '\0') {
    char* end = nullptr;
    long value = std::strtol(p, &end, 10);
    if (end == p) return false;
    if (value == gpu) return true;
    p = *end == ',' ? end + 1 : end;
    if (*end != ',' && *end != '\0') return false;
  }
  return false;
}

void SleepMs(unsigned ms) {
  if (ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

namespace {

// Never destroyed, like the fault rules: a call on a worker thread may outlive static destruction.
std::mutex& gPauseMutex = *new std::mutex;
std::string& gPauseSpec = *new std::string;
unsigned long long gPauseCalls = 0;

bool Exists(const std::string& path) {
  return access(path.c_str(), F_OK) == 0;
}

}  // namespace

bool PauseIfAsked(const char* function, const char* text) {
  if (text == nullptr || *text == '\0') return false;
  std::string spec = text, path;
  {
    std::lock_guard<std::mutex> lock(gPauseMutex);
    if (spec != gPauseSpec) {
      gPauseSpec = spec;
      gPauseCalls = 0;
    }
    size_t first = spec.find(':'), second = first == std::string::npos ? first : spec.find(':', first + 1);
    if (second == std::string::npos || spec.compare(0, first, function) != 0 || first != std::strlen(function)) return false;
    char* end = nullptr;
    unsigned long long after = std::strtoull(spec.c_str() + first + 1, &end, 10);
    if (end != spec.c_str() + second || second + 1 >= spec.size()) {
      std::fprintf(stderr, "cudasim: ignoring malformed CUDASIM_PAUSE \"%s\" (expected function:afterN:path)\n", text);
      return false;
    }
    if (++gPauseCalls != after + 1) return false;
    path = spec.substr(second + 1);
  }
  int fd = open((path + ".paused").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd >= 0) close(fd);
  for (int waited = 0; !Exists(path + ".resume"); ++waited) {
    if (waited == 60000) {
      std::fprintf(stderr, "cudasim: CUDASIM_PAUSE: %s.resume did not appear within 60 s; going on\n", path.c_str());
      return true;
    }
    SleepMs(1);
  }
  return true;
}

}  // namespace cudasim
