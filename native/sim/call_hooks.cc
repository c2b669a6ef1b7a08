// Tracing, lost GPUs and latency for the simulated entry points.
#include "call_hooks.h"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace cudasim {

void TraceCall(const char* function) {
  const char* path = std::getenv("CUDASIM_TRACE");
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
  const char* text = std::getenv("CUDASIM_LOST");
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

}  // namespace cudasim
