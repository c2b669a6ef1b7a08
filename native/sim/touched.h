// What a job touched that the simulated GPU does not simulate (cuDNN workspace sizes, cudnn.benchmark,
// kernels loaded through the driver, host-pointer results, ...), counted once per process for every
// simulated library (they share libsimgpu.so) and written when the process exits, so vramfit can say
// so beside its answer.
//   VRAMFIT_STUB_TOUCHED=FILE   appends `<what>=<count>` lines to FILE ("%p" becomes the process id)
#ifndef CUDASIM_TOUCHED_H
#define CUDASIM_TOUCHED_H

#include <cstdint>

#include "simgpu_export.h"

namespace cudasim {

// Adds `amount` to the count named `what` (a string literal: it is kept, not copied).
SIMGPU_API void NoteTouched(const char* what, uint64_t amount = 1);

}  // namespace cudasim

#endif  // CUDASIM_TOUCHED_H
