// The counts behind NoteTouched: one table per process, appended to VRAMFIT_STUB_TOUCHED at exit.
#include "touched.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

namespace cudasim {
namespace {

struct Table {
  std::mutex mutex;
  std::map<std::string, uint64_t> counts;
};

// Never destroyed: a call on another thread may come after static destruction at exit.
Table& T() {
  static Table& table = *new Table;
  return table;
}

void WriteTouched() {
  const char* text = std::getenv("VRAMFIT_STUB_TOUCHED");
  if (text == nullptr || *text == '\0') return;
  std::string path = text;
  for (size_t at = path.find("%p"); at != std::string::npos; at = path.find("%p", at)) {
    path.replace(at, 2, std::to_string(getpid()));
  }
  std::string lines;
  {
    std::lock_guard<std::mutex> lock(T().mutex);
    for (const auto& [what, count] : T().counts) lines += what + "=" + std::to_string(count) + "\n";
  }
  if (lines.empty()) return;
  // One append of the whole table: O_APPEND keeps it whole beside other processes' (a job's workers).
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;
  ssize_t written = write(fd, lines.data(), lines.size());
  (void)written;
  close(fd);
}

std::once_flag gRegistered;

}  // namespace

void NoteTouched(const char* what, uint64_t amount) {
  std::call_once(gRegistered, [] { std::atexit(WriteTouched); });
  std::lock_guard<std::mutex> lock(T().mutex);
  T().counts[what] += amount;
}

}  // namespace cudasim
