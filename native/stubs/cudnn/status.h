// The cudnnStatus_t values (cudnn_graph.h) the stub cuDNN answers with, and what both of its APIs share.
#ifndef VRAMFIT_STUBS_CUDNN_STATUS_H
#define VRAMFIT_STUBS_CUDNN_STATUS_H

#include <cstddef>

constexpr int kCudnnSuccess = 0;
constexpr int kCudnnBadParam = 2000;
constexpr int kCudnnBadParamNullPointer = 2002;
constexpr int kCudnnBadParamNotFinalized = 2004;
constexpr int kCudnnBadParamSizeInsufficient = 2006;
constexpr int kCudnnNotSupported = 3000;

// The workspace every convolution and execution plan asks for: VRAMFIT_STUB_CUDNN_WORKSPACE bytes
// (vramfit's --cudnn-workspace), 0 when unset. Real cuDNN's sizes depend on the engine its
// heuristics pick on the real GPU, which the stub cannot know; torch allocates what it is told
// through its caching allocator, so the simulated device charges it like any tensor.
size_t CudnnWorkspaceBytes();

#endif  // VRAMFIT_STUBS_CUDNN_STATUS_H
