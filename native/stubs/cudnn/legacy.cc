// The stub cuDNN's legacy API as torch 2.14.1 calls it: descriptors that keep what is set on them
// and read it back, workspace and reserve-space queries, and algorithm searches that offer one
// algorithm. The operations themselves (convolutions, batch norm, pooling, CTC loss, spatial
// transformers) do no work and are listed in no_work.txt. RNNs are refused (see below).
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "../common/stub_api.h"
#include "../../sim/touched.h"
#include "status.h"

namespace {

constexpr int kMaxDims = 8;  // CUDNN_DIM_MAX

// One struct for every legacy descriptor kind: tensors and filters keep their shape (torch reads it
// back when it describes a descriptor in an error message); the others keep nothing.
struct LegacyDescriptor {
  int dataType = 0;
  int format = 0;  // filters: cudnnTensorFormat_t
  int nbDims = 0;
  int dims[kMaxDims] = {};
  int strides[kMaxDims] = {};
};

int Create(LegacyDescriptor** out) {
  if (out == nullptr) return kCudnnBadParamNullPointer;
  *out = new LegacyDescriptor;
  return kCudnnSuccess;
}

int Destroy(LegacyDescriptor* descriptor) {
  delete descriptor;
  return kCudnnSuccess;
}

// cudnnConvolution{Fwd,BwdData,BwdFilter}AlgoPerf_t share this layout (cudnn_cnn.h).
struct AlgoPerf {
  int algo;
  int status;
  float time;
  size_t memory;
  int determinism;  // cudnnDeterminism_t: 1, CUDNN_DETERMINISTIC
  int mathType;     // cudnnMathType_t: 0, CUDNN_DEFAULT_MATH
  int reserved[3];
};

// Algorithm 1 of each direction (IMPLICIT_PRECOMP_GEMM forward, ALGO_1 backward) is the one every
// data type and layout supports, and deterministic.
int OfferOneAlgorithm(int requested, int* returned, AlgoPerf* results) {
  if (returned == nullptr || results == nullptr) return kCudnnBadParamNullPointer;
  if (requested <= 0) return kCudnnBadParam;
  std::memset(results, 0, sizeof(AlgoPerf));
  results[0].algo = 1;
  results[0].status = kCudnnSuccess;
  results[0].time = 1.0f;
  results[0].memory = CudnnWorkspaceBytes();
  results[0].determinism = 1;
  *returned = 1;
  return kCudnnSuccess;
}

int Workspace(size_t* bytes) {
  if (bytes == nullptr) return kCudnnBadParamNullPointer;
  *bytes = CudnnWorkspaceBytes();
  cudasim::NoteTouched("cudnn.workspaceQueries");
  return kCudnnSuccess;
}

int NoBytes(size_t* bytes) {
  if (bytes == nullptr) return kCudnnBadParamNullPointer;
  *bytes = 0;
  return kCudnnSuccess;
}

// torch sizes an RNN's flat weight buffer from cuDNN's weight-space size and finds each matrix in it
// with cudnnGetRNNWeightParams: a layout the stub does not model. Refusing is honest: the job fails
// with cuDNN's own error instead of planning memory for a wrong layout.
int RefuseRnn() {
  cudasim::NoteTouched("cudnn.rnn");
  return kCudnnNotSupported;
}

}  // namespace

#define STUB_DESCRIPTOR_KIND(Kind)                                                  \
  STUB_API int cudnnCreate##Kind##Descriptor(LegacyDescriptor** out) { return Create(out); } \
  STUB_API int cudnnDestroy##Kind##Descriptor(LegacyDescriptor* d) { return Destroy(d); }
STUB_DESCRIPTOR_KIND(Tensor)
STUB_DESCRIPTOR_KIND(Filter)
STUB_DESCRIPTOR_KIND(Convolution)
STUB_DESCRIPTOR_KIND(Activation)
STUB_DESCRIPTOR_KIND(Pooling)
STUB_DESCRIPTOR_KIND(Dropout)
STUB_DESCRIPTOR_KIND(CTCLoss)
STUB_DESCRIPTOR_KIND(SpatialTransformer)
STUB_DESCRIPTOR_KIND(RNN)
STUB_DESCRIPTOR_KIND(RNNData)
#undef STUB_DESCRIPTOR_KIND

STUB_API int cudnnSetTensorNdDescriptor(LegacyDescriptor* d, int dataType, int nbDims, const int* dims,
                                        const int* strides) {
  if (d == nullptr || dims == nullptr || strides == nullptr) return kCudnnBadParamNullPointer;
  if (nbDims <= 0 || nbDims > kMaxDims) return kCudnnBadParam;
  d->dataType = dataType;
  d->nbDims = nbDims;
  std::copy(dims, dims + nbDims, d->dims);
  std::copy(strides, strides + nbDims, d->strides);
  return kCudnnSuccess;
}

STUB_API int cudnnGetTensorNdDescriptor(const LegacyDescriptor* d, int requested, int* dataType, int* nbDims,
                                        int* dims, int* strides) {
  if (d == nullptr || dataType == nullptr || nbDims == nullptr) return kCudnnBadParamNullPointer;
  *dataType = d->dataType;
  *nbDims = d->nbDims;
  int n = std::min(requested, d->nbDims);
  if (n > 0 && dims != nullptr) std::copy(d->dims, d->dims + n, dims);
  if (n > 0 && strides != nullptr) std::copy(d->strides, d->strides + n, strides);
  return kCudnnSuccess;
}

STUB_API int cudnnSetFilterNdDescriptor(LegacyDescriptor* d, int dataType, int format, int nbDims, const int* dims) {
  if (d == nullptr || dims == nullptr) return kCudnnBadParamNullPointer;
  if (nbDims <= 0 || nbDims > kMaxDims) return kCudnnBadParam;
  d->dataType = dataType;
  d->format = format;
  d->nbDims = nbDims;
  std::copy(dims, dims + nbDims, d->dims);
  return kCudnnSuccess;
}

STUB_API int cudnnGetFilterNdDescriptor(const LegacyDescriptor* d, int requested, int* dataType, int* format,
                                        int* nbDims, int* dims) {
  if (d == nullptr || dataType == nullptr || format == nullptr || nbDims == nullptr) return kCudnnBadParamNullPointer;
  *dataType = d->dataType;
  *format = d->format;
  *nbDims = d->nbDims;
  int n = std::min(requested, d->nbDims);
  if (n > 0 && dims != nullptr) std::copy(d->dims, d->dims + n, dims);
  return kCudnnSuccess;
}

// --- Convolutions: workspace sizes and algorithm searches. ------------------------------------------
STUB_API int cudnnGetConvolutionForwardWorkspaceSize(void*, void*, void*, void*, void*, int, size_t* bytes) {
  return Workspace(bytes);
}
STUB_API int cudnnGetConvolutionBackwardDataWorkspaceSize(void*, void*, void*, void*, void*, int, size_t* bytes) {
  return Workspace(bytes);
}
STUB_API int cudnnGetConvolutionBackwardFilterWorkspaceSize(void*, void*, void*, void*, void*, int, size_t* bytes) {
  return Workspace(bytes);
}

// The _v7 "get" functions are cuDNN's heuristics; the "find" functions run every algorithm and time
// it (torch.backends.cudnn.benchmark), which the stub cannot: its choice is not the real one.
STUB_API int cudnnGetConvolutionForwardAlgorithm_v7(void*, void*, void*, void*, void*, int requested, int* returned,
                                                    AlgoPerf* results) {
  return OfferOneAlgorithm(requested, returned, results);
}
STUB_API int cudnnGetConvolutionBackwardDataAlgorithm_v7(void*, void*, void*, void*, void*, int requested,
                                                         int* returned, AlgoPerf* results) {
  return OfferOneAlgorithm(requested, returned, results);
}
STUB_API int cudnnGetConvolutionBackwardFilterAlgorithm_v7(void*, void*, void*, void*, void*, int requested,
                                                           int* returned, AlgoPerf* results) {
  return OfferOneAlgorithm(requested, returned, results);
}

#define STUB_FIND(name)                                                                                  \
  STUB_API int name(void*, void*, const void*, void*, const void*, void*, void*, void*, int requested, int* returned, \
                    AlgoPerf* results, void*, size_t) {                                                    \
    cudasim::NoteTouched("cudnn.benchmark");                                                         \
    return OfferOneAlgorithm(requested, returned, results);                                                \
  }
STUB_FIND(cudnnFindConvolutionForwardAlgorithmEx)
STUB_FIND(cudnnFindConvolutionBackwardDataAlgorithmEx)
STUB_FIND(cudnnFindConvolutionBackwardFilterAlgorithmEx)
#undef STUB_FIND

// --- Batch norm and CTC loss: their workspaces and reserve spaces are cuDNN's choice too; the stub
// answers 0 (the configured workspace is for convolutions and execution plans).
STUB_API int cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize(void*, int, int, void*, void*, void*, void*,
                                                                      void*, size_t* bytes) {
  cudasim::NoteTouched("cudnn.workspaceQueries");
  return NoBytes(bytes);
}
STUB_API int cudnnGetBatchNormalizationBackwardExWorkspaceSize(void*, int, int, void*, void*, void*, void*, void*,
                                                               void*, void*, size_t* bytes) {
  cudasim::NoteTouched("cudnn.workspaceQueries");
  return NoBytes(bytes);
}
STUB_API int cudnnGetBatchNormalizationTrainingExReserveSpaceSize(void*, int, int, void*, void*, size_t* bytes) {
  cudasim::NoteTouched("cudnn.workspaceQueries");
  return NoBytes(bytes);
}
STUB_API int cudnnGetCTCLossWorkspaceSize(void*, void*, void*, const int*, const int*, const int*, int, void*,
                                          size_t* bytes) {
  cudasim::NoteTouched("cudnn.workspaceQueries");
  return NoBytes(bytes);
}
STUB_API int cudnnGetCTCLossWorkspaceSize_v8(void*, int, void*, void*, void*, size_t* bytes) {
  cudasim::NoteTouched("cudnn.workspaceQueries");
  return NoBytes(bytes);
}
STUB_API int cudnnDropoutGetStatesSize(void*, size_t* bytes) {
  cudasim::NoteTouched("cudnn.workspaceQueries");
  return NoBytes(bytes);
}

// --- RNNs: refused (RefuseRnn says why). ------------------------------------------------------------
STUB_API int cudnnSetRNNDescriptor_v8() { return RefuseRnn(); }
STUB_API int cudnnGetRNNWeightSpaceSize() { return RefuseRnn(); }
STUB_API int cudnnGetRNNTempSpaceSizes() { return RefuseRnn(); }
STUB_API int cudnnGetRNNWeightParams() { return RefuseRnn(); }
STUB_API int cudnnRNNForward() { return RefuseRnn(); }
STUB_API int cudnnRNNBackwardData_v8() { return RefuseRnn(); }
STUB_API int cudnnRNNBackwardWeights_v8() { return RefuseRnn(); }
