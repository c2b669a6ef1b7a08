// Who holds how much of each pool: the simulated kernel driver's ledger. In memory for one process,
// or, with CUDASIM_STATE=FILE, in a file every process naming it shares (flock-protected), so
// several processes see one device.
#ifndef CUDASIM_ACCOUNTING_H
#define CUDASIM_ACCOUNTING_H

#include <cstdint>
#include <string>
#include <vector>

#include "machine.h"
#include "simgpu_export.h"

namespace cudasim {

struct Holder {
  int pid;
  uint64_t bytes;
};

class SIMGPU_API Accounting {
 public:
  // The process's ledger, opened by the first library to initialize. A second library must bring
  // the same machine and state file; otherwise nullptr and `error` says why.
  static Accounting* Open(const Machine& machine, std::string& error);

  // Charges `bytes` of `pool` to this process unless every holder together would then exceed
  // `capacity`. False: out of memory (or the ledger could not be read; it says so on stderr).
  virtual bool Charge(int pool, uint64_t bytes, uint64_t capacity) = 0;
  virtual void Uncharge(int pool, uint64_t bytes) = 0;
  // Everything charged to the pool, by every process.
  virtual uint64_t Charged(int pool) = 0;
  virtual std::vector<Holder> Holders(int pool) = 0;

  virtual ~Accounting() = default;

 protected:
  Accounting() = default;
};

}  // namespace cudasim

#endif  // CUDASIM_ACCOUNTING_H
