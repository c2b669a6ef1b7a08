// One thread per device: its work runs in order there, and devices never wait on one another.
#ifndef VRAMFIT_DEVICE_THREADS_H
#define VRAMFIT_DEVICE_THREADS_H

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace vramfit {

// libuv's pool has 4 threads by default (UV_THREADPOOL_SIZE is read before any of our code runs),
// so probes of 8 GPUs queued there would run 4 at a time, and a probe waiting on a busy device
// would hold a pool thread that Node's own file I/O needs. A thread per device has neither problem.
class DeviceThreads {
 public:
  explicit DeviceThreads(int deviceCount);
  // Runs `job` on the device's thread after the jobs posted before it; starts the thread on first use.
  void Post(int ordinal, std::function<void()> job);
  // Whether anything was ever posted to the device: a device never used holds no context.
  bool Started(int ordinal);

 private:
  struct Worker {
    std::mutex mutex;
    std::condition_variable wake;
    std::deque<std::function<void()>> jobs;
    bool started = false;
  };
  static void Loop(Worker* worker);

  std::vector<std::unique_ptr<Worker>> workers_;  // never destroyed: the Driver lives for the process
};

}  // namespace vramfit

#endif  // VRAMFIT_DEVICE_THREADS_H
