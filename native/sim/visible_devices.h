// Which pools the driver shows as CUDA devices, in which order: CUDA_VISIBLE_DEVICES and
// CUDA_DEVICE_ORDER applied as CUDA applies them.
#ifndef CUDASIM_VISIBLE_DEVICES_H
#define CUDASIM_VISIBLE_DEVICES_H

#include <vector>

#include "machine.h"

namespace cudasim {

// The pool behind each CUDA ordinal.
//
// Order: CUDA_DEVICE_ORDER=PCI_BUS_ID sorts GPUs by PCI bus; otherwise (FASTEST_FIRST, the
// default) they keep CUDASIM_DEVICES order, which stands for "fastest first". A MIG-enabled GPU
// shows its MIG instances instead of itself, and, as CUDA 11 and 12 do, a process sees at most
// one MIG device: the first one the rules below reach.
//
// CUDA_VISIBLE_DEVICES (when set) is a comma-separated list of GPU indices (in the order above),
// `GPU-` UUIDs or unique prefixes of them, and `MIG-` UUIDs or unique prefixes. Devices appear in
// the list's order; the list ends at the first entry that is invalid (-1, an index out of range,
// an unknown or ambiguous UUID), and, where CUDA's documentation is silent, also at a device named
// twice. An empty result means no device (cuInit answers CUDA_ERROR_NO_DEVICE).
std::vector<int> VisiblePools(const Machine& machine);

}  // namespace cudasim

#endif  // CUDASIM_VISIBLE_DEVICES_H
