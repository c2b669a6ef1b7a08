// Who holds how much of each pool: the simulated kernel driver's ledger. In memory for one process,
// or, with CUDASIM_STATE=FILE, in a file every process naming it shares (flock-protected), so
// several processes see one device. CUDASIM_MEMORY_LOG=FILE: every change is appended to FILE as
// one line, `<pid> <charge|uncharge> pool=<P> bytes=<B> used=<all processes' bytes on P after>`,
// written inside the ledger's lock, so the lines of all processes are in the order of the changes.
#ifndef CUDASIM_ACCOUNTING_H
#define CUDASIM_ACCOUNTING_H

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "machine.h"
#include "simgpu_export.h"

namespace cudasim {

struct Holder {
  int pid;
  uint64_t bytes;
};

enum class ContextOpened { kOk, kOutOfMemory, kBusy };

class SIMGPU_API Accounting {
 public:
  // The process's ledger, opened by the first library to initialize. A second library must bring
  // the same machine and state file; otherwise nullptr and `error` says why.
  static Accounting* Open(const Machine& machine, std::string& error);

  // Charges `bytes` of `pool` to this process unless every holder together would then exceed
  // `capacity`. False: out of memory (or the ledger could not be read; it says so on stderr).
  // `memoryLog`: CUDASIM_MEMORY_LOG's value as the caller read it (the driver reads it with its
  // other per-call settings, ReadCallSettings); the forms without it call getenv.
  virtual bool Charge(int pool, uint64_t bytes, uint64_t capacity, const char* memoryLog) = 0;
  virtual void Uncharge(int pool, uint64_t bytes, const char* memoryLog) = 0;
  bool Charge(int pool, uint64_t bytes, uint64_t capacity) { return Charge(pool, bytes, capacity, MemoryLog()); }
  void Uncharge(int pool, uint64_t bytes) { Uncharge(pool, bytes, MemoryLog()); }
  static const char* MemoryLog() { return std::getenv("CUDASIM_MEMORY_LOG"); }
  // Records this process's context on `pool` and charges its `bytes`, in one step: kOutOfMemory
  // when they do not fit, kBusy when `exclusive` and another process has a context there (the
  // exclusive-process compute mode).
  virtual ContextOpened OpenContext(int pool, uint64_t bytes, uint64_t capacity, bool exclusive) = 0;
  // Drops this process's context on `pool`, uncharging `bytes` (the context's and what it held).
  virtual void CloseContext(int pool, uint64_t bytes) = 0;
  // Everything charged to the pool, by every process.
  virtual uint64_t Charged(int pool) = 0;
  // The processes holding memory or a context on the pool.
  virtual std::vector<Holder> Holders(int pool) = 0;

  virtual ~Accounting() = default;

 protected:
  Accounting() = default;
};

}  // namespace cudasim

#endif  // CUDASIM_ACCOUNTING_H
