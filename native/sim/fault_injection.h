// CUDASIM_FAIL and CUDASIM_ASYNC_FAIL: make chosen driver functions, or the device work they queue,
// fail with chosen CUresults, for tests of error paths.
#ifndef CUDASIM_FAULT_INJECTION_H
#define CUDASIM_FAULT_INJECTION_H

#include "simgpu_export.h"

namespace cudasim {

// Counts this call of `function` and returns the code a rule injects for it, or 0: a CUresult
// for the driver's functions, an nvmlReturn_t for NVML's (both libraries share the rules).
//
// CUDASIM_FAIL is `function:code[:afterNCalls]`, several rules separated by ','; a rule with
// afterNCalls lets that many calls through, then fails every later one. The variable is read
// on every call and the counters restart whenever its value changes, so one test process can
// inject different faults in turn. Change it only while no driver call is in flight: getenv
// races with setenv.
SIMGPU_API int InjectedFault(const char* function);
// The same, given CUDASIM_FAIL's value (ReadCallSettings, call_hooks.h).
SIMGPU_API int InjectedFault(const char* function, const char* spec);

// CUDASIM_ASYNC_FAIL, same grammar: the device work that `function` queues (cuMemsetD8_v2 is the
// one such function simulated) fails with `code`. The call itself succeeds, as a real launch
// does; the error surfaces at the next synchronization (sim_driver.cc). Counts this call. `spec`:
// CUDASIM_ASYNC_FAIL's value, read with the call's other settings (ReadCallSettings, call_hooks.h).
SIMGPU_API int InjectedAsyncFault(const char* function, const char* spec);

}  // namespace cudasim

#endif  // CUDASIM_FAULT_INJECTION_H
