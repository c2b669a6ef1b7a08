// The stub cuDNN's backend (graph) API, which torch 2.14.1 reaches through cudnn_frontend for
// convolutions and for cuDNN attention: descriptors keep what is set on them and give it back, as
// cuDNN does (descriptors are copied in and out); heuristics always offer one engine configuration;
// execution plans report the configured workspace; executing a plan does no work.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "../common/stub_api.h"
#include "../../sim/touched.h"
#include "status.h"

namespace {

// cudnnBackendAttributeType_t (cudnn_graph.h).
constexpr int kTypeHandle = 0, kTypeBoolean = 2, kTypeInt64 = 3, kTypeDouble = 5, kTypeVoidPtr = 6,
              kTypeBackendDescriptor = 15, kTypeChar = 24, kTypeFraction = 26;

// cudnnBackendDescriptorType_t.
constexpr int kEngine = 2, kEngineConfig = 3, kEngineHeuristics = 4, kExecutionPlan = 5, kOperationGraph = 15;

// cudnnBackendAttributeName_t: the ones the stub answers itself.
constexpr int kEngineHeurOperationGraph = 201, kEngineHeurResults = 202;
constexpr int kEngineConfigEngine = 300, kEngineConfigWorkspaceSize = 303, kEngineConfigSharedMemoryUsed = 304;
constexpr int kPlanEngineConfig = 401, kPlanWorkspaceSize = 402, kPlanJson = 405;
constexpr int kGraphEngineGlobalCount = 802;
constexpr int kEngineOperationGraph = 1300, kEngineGlobalIndex = 1301;

size_t ElementBytes(int type) {
  switch (type) {
    case kTypeHandle:
    case kTypeInt64:
    case kTypeDouble:
    case kTypeVoidPtr:
    case kTypeBackendDescriptor:
      return 8;
    case kTypeBoolean:
    case kTypeChar:
      return 1;
    case kTypeFraction:
      return 16;  // cudnnFraction_t: two int64_t
    default:
      return 4;  // int32 and the enumerations
  }
}

struct Descriptor;
using Shared = std::shared_ptr<Descriptor>;

struct Attribute {
  int type = 0;
  std::vector<unsigned char> bytes;  // the elements, unless they are descriptors
  std::vector<Shared> descriptors;   // copies of the descriptors given
};

struct Descriptor {
  int type = 0;
  bool finalized = false;
  std::map<int, Attribute> attributes;
};

// cudnnBackendDescriptor_t is a pointer to this: the descriptor's current value, replaced whole
// when cuDNN copies another descriptor into it.
struct Handle {
  Shared value;
};

Shared Clone(const Shared& source) {
  auto copy = std::make_shared<Descriptor>(*source);  // nested descriptors are immutable once set: shared
  return copy;
}

bool Trace() {
  static const bool on = [] {
    const char* text = std::getenv("VRAMFIT_STUB_TRACE");
    return text != nullptr && *text != '\0' && std::strcmp(text, "0") != 0;
  }();
  return on;
}

Attribute Int64(int64_t value) {
  Attribute attribute;
  attribute.type = kTypeInt64;
  attribute.bytes.resize(8);
  std::memcpy(attribute.bytes.data(), &value, 8);
  return attribute;
}

Attribute Descriptors(std::vector<Shared> values) {
  Attribute attribute;
  attribute.type = kTypeBackendDescriptor;
  attribute.descriptors = std::move(values);
  return attribute;
}

// The engine configuration heuristics offer: engine 0 of the graph, no knobs.
Shared OfferedEngineConfig(const Descriptor& heuristics) {
  auto engine = std::make_shared<Descriptor>();
  engine->type = kEngine;
  engine->finalized = true;
  auto graph = heuristics.attributes.find(kEngineHeurOperationGraph);
  if (graph != heuristics.attributes.end()) engine->attributes[kEngineOperationGraph] = graph->second;
  engine->attributes[kEngineGlobalIndex] = Int64(0);
  auto config = std::make_shared<Descriptor>();
  config->type = kEngineConfig;
  config->finalized = true;
  config->attributes[kEngineConfigEngine] = Descriptors({engine});
  return config;
}

// What cuDNN computes rather than stores. An attribute neither set nor listed here reads as zero
// elements, which cudnn_frontend takes as "none" (no knobs, no notes, no intermediates).
bool Computed(const Descriptor& d, int name, Attribute& out) {
  if (d.type == kOperationGraph && name == kGraphEngineGlobalCount) {
    out = Int64(1);
    return true;
  }
  if (d.type == kEngineHeuristics && name == kEngineHeurResults) {
    out = Descriptors({OfferedEngineConfig(d)});
    return true;
  }
  if ((d.type == kEngineConfig && name == kEngineConfigWorkspaceSize) ||
      (d.type == kExecutionPlan && name == kPlanWorkspaceSize)) {
    cudasim::NoteTouched("cudnn.workspaceQueries");
    out = Int64(static_cast<int64_t>(CudnnWorkspaceBytes()));
    return true;
  }
  if (d.type == kEngineConfig && name == kEngineConfigSharedMemoryUsed) {
    // cudnn_frontend drops configurations that use more shared memory than the device has: none.
    out = Int64(0);
    return true;
  }
  if (d.type == kExecutionPlan && name == kPlanJson) {
    // What cudnn_frontend keeps as the plan's serialized form; it only needs to be a string.
    std::string json = "{\"engineId\":0,\"vramfitStub\":true}";
    out.type = kTypeChar;
    out.bytes.assign(json.begin(), json.end());
    out.bytes.push_back('\0');
    return true;
  }
  return false;
}

}  // namespace

STUB_API int cudnnBackendCreateDescriptor(int type, Handle** out) {
  if (out == nullptr) return kCudnnBadParamNullPointer;
  auto* handle = new Handle;
  handle->value = std::make_shared<Descriptor>();
  handle->value->type = type;
  *out = handle;
  return kCudnnSuccess;
}

STUB_API int cudnnBackendDestroyDescriptor(Handle* handle) {
  delete handle;
  return kCudnnSuccess;
}

STUB_API int cudnnBackendInitialize(Handle* handle) {
  if (handle == nullptr) return kCudnnBadParamNullPointer;
  int type = handle->value->type;
  handle->value = std::make_shared<Descriptor>();
  handle->value->type = type;
  return kCudnnSuccess;
}

STUB_API int cudnnBackendSetAttribute(Handle* handle, int name, int type, int64_t count, const void* elements) {
  if (handle == nullptr) return kCudnnBadParamNullPointer;
  if (count < 0 || (count > 0 && elements == nullptr)) return kCudnnBadParam;
  Descriptor& d = *handle->value;
  if (d.finalized) return kCudnnBadParam;  // cuDNN: a finalized descriptor is immutable
  Attribute attribute;
  attribute.type = type;
  if (type == kTypeBackendDescriptor) {
    auto* given = static_cast<Handle* const*>(elements);
    for (int64_t i = 0; i < count; ++i) {
      if (given[i] == nullptr) return kCudnnBadParamNullPointer;
      attribute.descriptors.push_back(Clone(given[i]->value));
    }
  } else {
    const auto* begin = static_cast<const unsigned char*>(elements);
    attribute.bytes.assign(begin, begin + count * ElementBytes(type));
  }
  d.attributes[name] = std::move(attribute);
  return kCudnnSuccess;
}

STUB_API int cudnnBackendFinalize(Handle* handle) {
  if (handle == nullptr) return kCudnnBadParamNullPointer;
  handle->value->finalized = true;
  if (Trace()) std::fprintf(stderr, "vramfit cudnn stub: finalize type %d\n", handle->value->type);
  return kCudnnSuccess;
}

STUB_API int cudnnBackendGetAttribute(Handle* handle, int name, int type, int64_t requested, int64_t* returned,
                                      void* elements) {
  if (handle == nullptr) return kCudnnBadParamNullPointer;
  const Descriptor& d = *handle->value;
  Attribute computed;
  const Attribute* attribute = nullptr;
  auto set = d.attributes.find(name);
  if (set != d.attributes.end()) {
    attribute = &set->second;
  } else if (Computed(d, name, computed)) {
    attribute = &computed;
  }
  if (Trace()) {
    std::fprintf(stderr, "vramfit cudnn stub: get type %d attribute %d (%s)\n", d.type, name,
                 attribute == nullptr ? "none" : "answered");
  }
  int64_t available = 0;
  if (attribute != nullptr) {
    available = attribute->type == kTypeBackendDescriptor
                    ? static_cast<int64_t>(attribute->descriptors.size())
                    : static_cast<int64_t>(attribute->bytes.size() / ElementBytes(attribute->type));
  }
  if (returned != nullptr) *returned = available;
  if (requested <= 0 || elements == nullptr || attribute == nullptr) return kCudnnSuccess;
  int64_t n = requested < available ? requested : available;
  if (type == kTypeBackendDescriptor) {
    if (attribute->type != kTypeBackendDescriptor) return kCudnnBadParam;
    auto* into = static_cast<Handle**>(elements);
    for (int64_t i = 0; i < n; ++i) {
      if (into[i] == nullptr) return kCudnnBadParamNullPointer;
      into[i]->value = Clone(attribute->descriptors[static_cast<size_t>(i)]);
    }
    return kCudnnSuccess;
  }
  if (attribute->type == kTypeBackendDescriptor) return kCudnnBadParam;
  std::memcpy(elements, attribute->bytes.data(), static_cast<size_t>(n) * ElementBytes(attribute->type));
  return kCudnnSuccess;
}

STUB_API int cudnnBackendExecute(void* cudnnHandle, Handle* plan, Handle* variantPack) {
  if (cudnnHandle == nullptr || plan == nullptr || variantPack == nullptr) return kCudnnBadParamNullPointer;
  if (!plan->value->finalized) return kCudnnBadParamNotFinalized;
  cudasim::NoteTouched("cudnn.executions");
  return kCudnnSuccess;
}
