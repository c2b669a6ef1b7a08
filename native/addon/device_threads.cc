// The per-device threads: a queue each, started lazily, detached (they live as long as the process).
#include "device_threads.h"

#include <thread>
#include <utility>

namespace vramfit {

DeviceThreads::DeviceThreads(int deviceCount) {
  for (int i = 0; i < deviceCount; ++i) workers_.push_back(std::make_unique<Worker>());
}

void DeviceThreads::Post(int ordinal, std::function<void()> job) {
  Worker* worker = workers_.at(ordinal).get();
  std::lock_guard<std::mutex> lock(worker->mutex);
  worker->jobs.push_back(std::move(job));
  if (!worker->started) {
    worker->started = true;
    std::thread(Loop, worker).detach();
  } else {
    worker->wake.notify_one();
  }
}

bool DeviceThreads::Started(int ordinal) {
  Worker* worker = workers_.at(ordinal).get();
  std::lock_guard<std::mutex> lock(worker->mutex);
  return worker->started;
}

void DeviceThreads::Loop(Worker* worker) {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock<std::mutex> lock(worker->mutex);
      worker->wake.wait(lock, [worker] { return !worker->jobs.empty(); });
      job = std::move(worker->jobs.front());
      worker->jobs.pop_front();
    }
    job();  // a DeviceTask: it catches everything itself
  }
}

}  // namespace vramfit
