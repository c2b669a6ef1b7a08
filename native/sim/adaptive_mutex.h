// The simulator's locks: a mutex that spins briefly before it sleeps (glibc's adaptive kind).
#ifndef CUDASIM_ADAPTIVE_MUTEX_H
#define CUDASIM_ADAPTIVE_MUTEX_H

#include <pthread.h>

namespace cudasim {

// Every simulated call holds the machine's lock for well under a microsecond; with a thread per
// device on few cores (vramfit probes identical devices at once), a plain mutex put each waiter to
// sleep and woke it again: thousands of context switches for one probe of eight devices. Lockable
// as std::mutex is (std::lock_guard, std::unique_lock); never destroyed where it guards state
// that outlives static destruction.
class AdaptiveMutex {
 public:
  AdaptiveMutex() {
    pthread_mutexattr_t attributes;
    pthread_mutexattr_init(&attributes);
    pthread_mutexattr_settype(&attributes, PTHREAD_MUTEX_ADAPTIVE_NP);
    pthread_mutex_init(&mutex_, &attributes);
    pthread_mutexattr_destroy(&attributes);
  }
  ~AdaptiveMutex() { pthread_mutex_destroy(&mutex_); }
  AdaptiveMutex(const AdaptiveMutex&) = delete;
  AdaptiveMutex& operator=(const AdaptiveMutex&) = delete;
  void lock() { pthread_mutex_lock(&mutex_); }
  void unlock() { pthread_mutex_unlock(&mutex_); }
  bool try_lock() { return pthread_mutex_trylock(&mutex_) == 0; }

 private:
  pthread_mutex_t mutex_;
};

}  // namespace cudasim

#endif  // CUDASIM_ADAPTIVE_MUTEX_H
