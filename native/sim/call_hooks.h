// What every simulated entry point does besides its own work: tracing, lost GPUs, latency, pauses.
#ifndef CUDASIM_CALL_HOOKS_H
#define CUDASIM_CALL_HOOKS_H

#include "simgpu_export.h"

namespace cudasim {

// The settings every driver call reads (CUDASIM_FAIL, CUDASIM_TRACE, CUDASIM_PAUSE, CUDASIM_LOST;
// CUDASIM_MEMORY_LOG for the ledger's changes, CUDASIM_ASYNC_FAIL for the work a call queues),
// found in one pass over the environment when
// the call begins: the values getenv gives then (a test may change them between calls), without a
// scan of the whole environment for each. Null where a variable is not set.
struct CallSettings {
  const char* fail = nullptr;
  const char* trace = nullptr;
  const char* pause = nullptr;
  const char* lost = nullptr;
  const char* memoryLog = nullptr;
  const char* asyncFail = nullptr;
};
SIMGPU_API CallSettings ReadCallSettings();

// CUDASIM_TRACE=FILE: appends the function's name and a newline to FILE. Read on every call, so a
// test can trace one operation at a time and then fail each call it saw (test/native/callSites).
SIMGPU_API void TraceCall(const char* function);
// The same, given CUDASIM_TRACE's value (ReadCallSettings).
SIMGPU_API void TraceCall(const char* function, const char* path);

// CUDASIM_LOST=I[,J...]: physical GPUs (positions in CUDASIM_DEVICES) that have fallen off the bus.
// Read on every call: a test lists the devices, sets it, and the next call that reaches the GPU fails.
SIMGPU_API bool GpuLost(int gpu);
// The same, given CUDASIM_LOST's value.
SIMGPU_API bool GpuLost(int gpu, const char* text);

SIMGPU_API void SleepMs(unsigned ms);

// CUDASIM_PAUSE=function:afterN:PATH: the call of `function` after the first afterN (counted in
// this process, restarting when the value changes) creates PATH.paused and waits, before doing
// anything, until PATH.resume exists; once. A test then acts while the call is held: another
// process allocates between a probe's reading and its allocation, or holds memory mid-probe. The
// wait ends after 60 s regardless (saying so on stderr), so a broken test cannot hang a process.
// Call it holding no lock, with CUDASIM_PAUSE's value as `text` (read once per call: see
// ReadCallSettings). True when the call waited.
SIMGPU_API bool PauseIfAsked(const char* function, const char* text);

}  // namespace cudasim

#endif  // CUDASIM_CALL_HOOKS_H
