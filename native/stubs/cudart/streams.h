// The capture and graph calls whose signatures changed between CUDA 12 and 13: one implementation,
// exported under each major's names and signatures by variant13.cc and variant12.cc.
#ifndef VRAMFIT_STUBS_CUDART_STREAMS_H
#define VRAMFIT_STUBS_CUDART_STREAMS_H

#include <cstddef>

#include "cudart_abi.h"

namespace cudart {

Error CaptureInfo(void* stream, int* status, unsigned long long* id, void** graph, const void** dependencies,
                  const void** edgeData, size_t* count);
Error UpdateCaptureDependencies(void* stream);
Error AddGraphNode(void** node, void* graph);
Error NodeDependencies(void* node, size_t* count);

}  // namespace cudart

#endif  // VRAMFIT_STUBS_CUDART_STREAMS_H
