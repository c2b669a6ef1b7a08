// The CUresults after which a context is unusable ("sticky" errors), for the addon and the simulator.
#ifndef VRAMFIT_STICKY_ERRORS_H
#define VRAMFIT_STICKY_ERRORS_H

#include "cuda_driver_api.h"

namespace vramfit {

// cuda.h documents each of these as leaving "the process in an inconsistent state": "any further
// CUDA work will return the same error". CUDA_ERROR_LAUNCH_TIMEOUT (702),
// CUDA_ERROR_ASSERT (710), CUDA_ERROR_HARDWARE_STACK_ERROR (714), CUDA_ERROR_ILLEGAL_INSTRUCTION
// (715), CUDA_ERROR_MISALIGNED_ADDRESS (716), CUDA_ERROR_INVALID_ADDRESS_SPACE (717),
// CUDA_ERROR_INVALID_PC (718), CUDA_ERROR_LAUNCH_FAILED (719) and CUDA_ERROR_ILLEGAL_ADDRESS (700).
inline bool IsStickyError(CUresult result) {
  switch (result) {
    case 700: case 702: case 710: case 714: case 715: case 716: case 717: case 718: case 719:
      return true;
    default:
      return false;
  }
}

}  // namespace vramfit

#endif  // VRAMFIT_STICKY_ERRORS_H
