// What differs between the CUDA 13 and CUDA 12 builds of the stub runtime (variant13.cc,
// variant12.cc): the runtime version it reports, cudaDeviceProp's layout, and the CUDA 12 names.
#ifndef VRAMFIT_STUBS_CUDART_VARIANT_H
#define VRAMFIT_STUBS_CUDART_VARIANT_H

namespace cudart {

// CUDART_VERSION of the headers the stub stands in for (13000, 12080).
int RuntimeVersion();

}  // namespace cudart

#endif  // VRAMFIT_STUBS_CUDART_VARIANT_H
