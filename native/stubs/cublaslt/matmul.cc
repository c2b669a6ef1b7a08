// The stub cuBLASLt: matmul, layout and preference descriptors that keep what is set on them, and a
// heuristic that always offers one algorithm (torch fails a matmul that gets none: its
// cublasLtMatmulAlgoGetHeuristic call site in aten/src/ATen/cuda/CUDABlas.cpp raises
// CUBLAS_STATUS_NOT_SUPPORTED when the returned count is 0). Matmuls themselves do no work.
#include <cstdint>
#include <cstring>
#include <map>
#include <vector>

#include "../common/stub_api.h"

namespace {

constexpr int kSuccess = 0;
constexpr int kNotInitialized = 1;
constexpr int kInvalidValue = 7;

// cublasLt.h's semi-opaque types: an algorithm is 8 words the caller owns, a heuristic result
// embeds one. Their layouts are part of the ABI.
struct MatmulAlgo {
  uint64_t data[8];
};
struct HeuristicResult {
  MatmulAlgo algo;
  size_t workspaceSize;
  int state;  // cublasStatus_t
  float wavesCount;
  int reserved[4];
};
static_assert(sizeof(MatmulAlgo) == 64 && sizeof(HeuristicResult) == 96, "cublasLt.h's layouts");

// Matmul, matrix-layout and preference descriptors: attribute bytes by attribute number.
struct Descriptor {
  std::map<int, std::vector<unsigned char>> attributes;
};

// cublasLtMatmulAlgoConfigAttributes_t numbers the algorithm's configuration; the stub keeps
// attribute 0 (CUBLASLT_ALGO_CONFIG_ID, what cublasLtMatmulAlgoInit sets) in word 0 and attributes
// 1..6 (each at most 8 bytes) in words 2..7.
constexpr int kAlgoAttributes = 7;
int AlgoWord(int attribute) {
  return attribute == 0 ? 0 : 1 + attribute;
}

int SetAttribute(Descriptor* descriptor, int attribute, const void* buffer, size_t bytes) {
  if (descriptor == nullptr) return kNotInitialized;
  if (buffer == nullptr && bytes != 0) return kInvalidValue;
  const auto* begin = static_cast<const unsigned char*>(buffer);
  descriptor->attributes[attribute].assign(begin, begin + bytes);
  return kSuccess;
}

// Unset attributes read as zeros of the size asked for (the defaults of most are 0).
int GetAttribute(const Descriptor* descriptor, int attribute, void* buffer, size_t bytes, size_t* written) {
  if (descriptor == nullptr) return kNotInitialized;
  auto found = descriptor->attributes.find(attribute);
  size_t size = found == descriptor->attributes.end() ? bytes : found->second.size();
  if (buffer == nullptr && bytes == 0) {
    if (written == nullptr) return kInvalidValue;
    *written = size;
    return kSuccess;
  }
  if (buffer == nullptr || bytes < size) return kInvalidValue;
  std::memset(buffer, 0, bytes);
  if (found != descriptor->attributes.end()) std::memcpy(buffer, found->second.data(), size);
  if (written != nullptr) *written = size;
  return kSuccess;
}

int Create(Descriptor** out) {
  if (out == nullptr) return kInvalidValue;
  *out = new Descriptor;
  return kSuccess;
}

int Destroy(Descriptor* descriptor) {
  delete descriptor;
  return kSuccess;
}

void FillResult(HeuristicResult& result, const MatmulAlgo* algo) {
  std::memset(&result, 0, sizeof result);
  if (algo != nullptr) result.algo = *algo;
  result.workspaceSize = 0;  // the job's own workspace (torch allocates it) is all it gets
  result.state = kSuccess;
  result.wavesCount = 1.0f;
}

}  // namespace

// cuda-toolkit 13.0.3 pins nvidia-cublas 13.1.1.3 (cuBLASLt ships with it), encoded as cublasLt.h's
// CUBLASLT_VERSION: major * 10000 + minor * 100 + patch. CUDA 12: 12.9.1 (see cublas/handles.cc).
STUB_API size_t cublasLtGetVersion() {
#if STUB_CUDA_MAJOR >= 13
  return 130101;
#else
  return 120901;
#endif
}

STUB_API size_t cublasLtGetCudartVersion() {
  return STUB_CUDA_MAJOR * 1000;
}

STUB_API int cublasLtMatmulDescCreate(Descriptor** desc, int /*computeType*/, int /*scaleType*/) {
  return Create(desc);
}
STUB_API int cublasLtMatmulDescDestroy(Descriptor* desc) {
  return Destroy(desc);
}
STUB_API int cublasLtMatmulDescSetAttribute(Descriptor* desc, int attribute, const void* buffer, size_t bytes) {
  return SetAttribute(desc, attribute, buffer, bytes);
}
STUB_API int cublasLtMatmulDescGetAttribute(const Descriptor* desc, int attribute, void* buffer, size_t bytes,
                                            size_t* written) {
  return GetAttribute(desc, attribute, buffer, bytes, written);
}

STUB_API int cublasLtMatrixLayoutCreate(Descriptor** layout, int /*type*/, uint64_t /*rows*/, uint64_t /*cols*/,
                                        int64_t /*ld*/) {
  return Create(layout);
}
STUB_API int cublasLtMatrixLayoutDestroy(Descriptor* layout) {
  return Destroy(layout);
}
STUB_API int cublasLtMatrixLayoutSetAttribute(Descriptor* layout, int attribute, const void* buffer, size_t bytes) {
  return SetAttribute(layout, attribute, buffer, bytes);
}
STUB_API int cublasLtMatrixLayoutGetAttribute(const Descriptor* layout, int attribute, void* buffer, size_t bytes,
                                              size_t* written) {
  return GetAttribute(layout, attribute, buffer, bytes, written);
}

STUB_API int cublasLtMatmulPreferenceCreate(Descriptor** preference) {
  return Create(preference);
}
STUB_API int cublasLtMatmulPreferenceDestroy(Descriptor* preference) {
  return Destroy(preference);
}
STUB_API int cublasLtMatmulPreferenceSetAttribute(Descriptor* preference, int attribute, const void* buffer,
                                                  size_t bytes) {
  return SetAttribute(preference, attribute, buffer, bytes);
}
STUB_API int cublasLtMatmulPreferenceGetAttribute(const Descriptor* preference, int attribute, void* buffer,
                                                  size_t bytes, size_t* written) {
  return GetAttribute(preference, attribute, buffer, bytes, written);
}

STUB_API int cublasLtMatmulAlgoGetHeuristic(void* handle, Descriptor* op, Descriptor*, Descriptor*, Descriptor*,
                                            Descriptor*, Descriptor*, int requested, HeuristicResult* results,
                                            int* returned) {
  if (handle == nullptr) return kNotInitialized;
  if (op == nullptr || requested <= 0 || results == nullptr || returned == nullptr) return kInvalidValue;
  FillResult(results[0], nullptr);
  *returned = 1;
  return kSuccess;
}

STUB_API int cublasLtMatmulAlgoInit(void* handle, int, int, int, int, int, int, int algoId, MatmulAlgo* algo) {
  if (handle == nullptr) return kNotInitialized;
  if (algo == nullptr) return kInvalidValue;
  std::memset(algo, 0, sizeof *algo);
  algo->data[0] = static_cast<uint64_t>(static_cast<uint32_t>(algoId));
  return kSuccess;
}

STUB_API int cublasLtMatmulAlgoCheck(void* handle, Descriptor*, Descriptor*, Descriptor*, Descriptor*, Descriptor*,
                                     const MatmulAlgo* algo, HeuristicResult* result) {
  if (handle == nullptr) return kNotInitialized;
  if (algo == nullptr || result == nullptr) return kInvalidValue;
  FillResult(*result, algo);
  return kSuccess;
}

STUB_API int cublasLtMatmulAlgoConfigSetAttribute(MatmulAlgo* algo, int attribute, const void* buffer, size_t bytes) {
  if (algo == nullptr || buffer == nullptr || attribute < 0 || attribute >= kAlgoAttributes || bytes > 8) {
    return kInvalidValue;
  }
  algo->data[AlgoWord(attribute)] = 0;
  std::memcpy(&algo->data[AlgoWord(attribute)], buffer, bytes);
  return kSuccess;
}

STUB_API int cublasLtMatmulAlgoConfigGetAttribute(const MatmulAlgo* algo, int attribute, void* buffer, size_t bytes,
                                                  size_t* written) {
  if (algo == nullptr) return kInvalidValue;
  if (buffer == nullptr && bytes == 0) {
    if (written == nullptr) return kInvalidValue;
    *written = sizeof(uint32_t);
    return kSuccess;
  }
  if (buffer == nullptr || bytes == 0) return kInvalidValue;
  std::memset(buffer, 0, bytes);
  if (attribute >= 0 && attribute < kAlgoAttributes) {
    std::memcpy(buffer, &algo->data[AlgoWord(attribute)], bytes < 8 ? bytes : 8);
  }
  if (written != nullptr) *written = bytes;
  return kSuccess;
}
