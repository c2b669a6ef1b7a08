// What every simulated entry point does besides its own work: tracing, lost GPUs, latency.
#ifndef CUDASIM_CALL_HOOKS_H
#define CUDASIM_CALL_HOOKS_H

#include "simgpu_export.h"

namespace cudasim {

// CUDASIM_TRACE=FILE: appends the function's name and a newline to FILE. Read on every call, so a
// test can trace one operation at a time and then fail each call it saw (test/native/callSites).
SIMGPU_API void TraceCall(const char* function);

// CUDASIM_LOST=I[,J...]: physical GPUs (positions in CUDASIM_DEVICES) that have fallen off the bus.
// Read on every call: a test lists the devices, sets it, and the next call that reaches the GPU fails.
SIMGPU_API bool GpuLost(int gpu);

SIMGPU_API void SleepMs(unsigned ms);

}  // namespace cudasim

#endif  // CUDASIM_CALL_HOOKS_H
