// Streams, events, stream capture and graphs as trivial handles: work finishes the moment it is
// queued (kernels do nothing), so queries say "done", waits return at once, and a captured graph is
// an empty one that launches instantly.
#include <atomic>
#include <cstdint>
#include <cstring>
#include <map>
#include <set>

#include "../../sim/touched.h"
#include "runtime.h"
#include "streams.h"

using namespace cudart;

namespace {

struct Stream {
  unsigned flags = 0;
  int priority = 0;
  int captureStatus = kCaptureStatusNone;
  unsigned long long captureId = 0;
  void* captureGraph = nullptr;
};

struct Graph {
  int nodes = 0;
};
struct GraphExec {};
struct Event {};
struct UserObject {
  void* pointer;
  void (*destroy)(void*);
  unsigned refs;
};

// Guarded by gMutex (not R().mutex: streams need no device state).
std::mutex gMutex;
std::set<Stream*> gStreams;
Stream gDefaultStream;  // the legacy (0, cudaStreamLegacy) and per-thread (2) streams' capture state
std::atomic<unsigned long long> gNextCaptureId{1};
thread_local int tCaptureMode = 0;  // cudaStreamCaptureModeGlobal

Stream* StreamOf(void* handle) {
  auto* stream = static_cast<Stream*>(handle);
  if (handle == nullptr || reinterpret_cast<uintptr_t>(handle) <= 2) return &gDefaultStream;
  return gStreams.count(stream) != 0 ? stream : nullptr;
}

Error CreateStream(void** handle, unsigned flags, int priority) {
  if (handle == nullptr) return kErrorInvalidValue;
  Device* device = nullptr;
  if (Error error = UseCurrentDevice(device)) return error;
  auto* stream = new Stream;
  stream->flags = flags;
  stream->priority = priority < -5 ? -5 : priority > 0 ? 0 : priority;  // clamped to the range, as CUDA does
  std::lock_guard<std::mutex> lock(gMutex);
  gStreams.insert(stream);
  *handle = stream;
  return kSuccess;
}

// A stream or event handle must be one this runtime made (or a default stream).
Error Known(void* stream) {
  std::lock_guard<std::mutex> lock(gMutex);
  return StreamOf(stream) == nullptr ? kErrorInvalidResourceHandle : kSuccess;
}

}  // namespace

CUDART_API Error cudaStreamCreate(void** stream) {
  return Return(CreateStream(stream, 0, 0));
}

CUDART_API Error cudaStreamCreateWithFlags(void** stream, unsigned int flags) {
  return Return(CreateStream(stream, flags, 0));
}

CUDART_API Error cudaStreamCreateWithPriority(void** stream, unsigned int flags, int priority) {
  return Return(CreateStream(stream, flags, priority));
}

CUDART_API Error cudaStreamDestroy(void* handle) {
  std::lock_guard<std::mutex> lock(gMutex);
  auto found = gStreams.find(static_cast<Stream*>(handle));
  if (found == gStreams.end()) return Return(kErrorInvalidResourceHandle);
  delete *found;
  gStreams.erase(found);
  return kSuccess;
}

CUDART_API Error cudaStreamGetPriority(void* handle, int* priority) {
  std::lock_guard<std::mutex> lock(gMutex);
  Stream* stream = StreamOf(handle);
  if (stream == nullptr) return Return(kErrorInvalidResourceHandle);
  if (priority == nullptr) return Return(kErrorInvalidValue);
  *priority = stream->priority;
  return kSuccess;
}

CUDART_API Error cudaStreamQuery(void* stream) {
  return Return(Known(stream));
}

CUDART_API Error cudaStreamSynchronize(void* stream) {
  return Return(Known(stream));
}

CUDART_API Error cudaStreamWaitEvent(void* stream, void* /*event*/, unsigned int /*flags*/) {
  return Return(Known(stream));
}

// Host functions run at once: everything queued before them has already finished.
CUDART_API Error cudaLaunchHostFunc(void* stream, void (*fn)(void*), void* userData) {
  if (Error error = Known(stream)) return Return(error);
  if (fn == nullptr) return Return(kErrorInvalidValue);
  fn(userData);
  return kSuccess;
}

CUDART_API Error cudaStreamAddCallback(void* stream, void (*callback)(void*, Error, void*), void* userData,
                                       unsigned int flags) {
  if (Error error = Known(stream)) return Return(error);
  if (callback == nullptr || flags != 0) return Return(kErrorInvalidValue);
  callback(stream, kSuccess, userData);
  return kSuccess;
}

// Events.
CUDART_API Error cudaEventCreate(void** event) {
  if (event == nullptr) return Return(kErrorInvalidValue);
  *event = new Event;
  return kSuccess;
}

CUDART_API Error cudaEventCreateWithFlags(void** event, unsigned int /*flags*/) {
  return cudaEventCreate(event);
}

CUDART_API Error cudaEventDestroy(void* event) {
  if (event == nullptr) return Return(kErrorInvalidResourceHandle);
  delete static_cast<Event*>(event);
  return kSuccess;
}

CUDART_API Error cudaEventRecord(void* event, void* stream) {
  if (event == nullptr) return Return(kErrorInvalidResourceHandle);
  return Return(Known(stream));
}

CUDART_API Error cudaEventRecordWithFlags(void* event, void* stream, unsigned int /*flags*/) {
  return cudaEventRecord(event, stream);
}

CUDART_API Error cudaEventQuery(void* event) {
  return event == nullptr ? Return(kErrorInvalidResourceHandle) : kSuccess;
}

CUDART_API Error cudaEventSynchronize(void* event) {
  return event == nullptr ? Return(kErrorInvalidResourceHandle) : kSuccess;
}

// No time passes on the simulated GPU.
CUDART_API Error cudaEventElapsedTime(float* ms, void* start, void* end) {
  if (ms == nullptr || start == nullptr || end == nullptr) return Return(kErrorInvalidValue);
  *ms = 0.0f;
  return kSuccess;
}

CUDART_API Error cudaIpcGetEventHandle(void* handle, void* event) {
  if (handle == nullptr || event == nullptr) return Return(kErrorInvalidValue);
  std::memset(handle, 0, sizeof(IpcHandle));
  return kSuccess;
}

CUDART_API Error cudaIpcOpenEventHandle(void** event, IpcHandle /*handle*/) {
  return cudaEventCreate(event);
}

// Stream capture: the stream records that it is capturing; what it captures is not kept.
CUDART_API Error cudaStreamBeginCapture(void* handle, int mode) {
  std::lock_guard<std::mutex> lock(gMutex);
  Stream* stream = StreamOf(handle);
  if (stream == nullptr) return Return(kErrorInvalidResourceHandle);
  if (stream == &gDefaultStream) return Return(kErrorStreamCaptureUnsupported);  // the legacy stream cannot
  if (stream->captureStatus != kCaptureStatusNone) return Return(901);  // cudaErrorStreamCaptureInvalidated
  stream->captureStatus = kCaptureStatusActive;
  stream->captureId = gNextCaptureId++;
  stream->captureGraph = new Graph;
  (void)mode;
  cudasim::NoteTouched("cudart.graphCaptures");  // what vramfit's answer says the simulation did not model
  return kSuccess;
}

CUDART_API Error cudaStreamBeginCaptureToGraph(void* handle, void* graph, const void* /*deps*/, const void* /*edges*/,
                                               size_t /*count*/, int mode) {
  Error error = cudaStreamBeginCapture(handle, mode);
  if (error != kSuccess) return error;
  std::lock_guard<std::mutex> lock(gMutex);
  Stream* stream = StreamOf(handle);
  delete static_cast<Graph*>(stream->captureGraph);
  stream->captureGraph = graph;
  return kSuccess;
}

CUDART_API Error cudaStreamEndCapture(void* handle, void** graph) {
  std::lock_guard<std::mutex> lock(gMutex);
  Stream* stream = StreamOf(handle);
  if (stream == nullptr) return Return(kErrorInvalidResourceHandle);
  if (stream->captureStatus == kCaptureStatusNone) return Return(401);  // cudaErrorIllegalState
  if (graph != nullptr) *graph = stream->captureGraph;
  stream->captureStatus = kCaptureStatusNone;
  stream->captureGraph = nullptr;
  return kSuccess;
}

CUDART_API Error cudaStreamIsCapturing(void* handle, int* status) {
  std::lock_guard<std::mutex> lock(gMutex);
  Stream* stream = StreamOf(handle);
  if (stream == nullptr) return Return(kErrorInvalidResourceHandle);
  if (status == nullptr) return Return(kErrorInvalidValue);
  *status = stream->captureStatus;
  return kSuccess;
}

namespace cudart {

Error CaptureInfo(void* handle, int* status, unsigned long long* id, void** graph, const void** dependencies,
                  const void** edgeData, size_t* count) {
  std::lock_guard<std::mutex> lock(gMutex);
  Stream* stream = StreamOf(handle);
  if (stream == nullptr) return Return(kErrorInvalidResourceHandle);
  if (status == nullptr) return Return(kErrorInvalidValue);
  *status = stream->captureStatus;
  bool active = stream->captureStatus == kCaptureStatusActive;
  if (id != nullptr) *id = active ? stream->captureId : 0;
  if (graph != nullptr) *graph = active ? stream->captureGraph : nullptr;
  if (dependencies != nullptr) *dependencies = nullptr;
  if (edgeData != nullptr) *edgeData = nullptr;
  if (count != nullptr) *count = 0;
  return kSuccess;
}

Error UpdateCaptureDependencies(void* stream) {
  return Return(Known(stream));
}

Error AddGraphNode(void** node, void* graph) {
  if (node == nullptr || graph == nullptr) return Return(kErrorInvalidValue);
  std::lock_guard<std::mutex> lock(gMutex);
  Graph* g = static_cast<Graph*>(graph);
  *node = reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(g) + static_cast<uintptr_t>(++g->nodes));
  return kSuccess;
}

Error NodeDependencies(void* node, size_t* count) {
  if (node == nullptr || count == nullptr) return Return(kErrorInvalidValue);
  *count = 0;  // no node has any: graphs are empty
  return kSuccess;
}

}  // namespace cudart

CUDART_API Error cudaThreadExchangeStreamCaptureMode(int* mode) {
  if (mode == nullptr) return Return(kErrorInvalidValue);
  int previous = tCaptureMode;
  tCaptureMode = *mode;
  *mode = previous;
  return kSuccess;
}

// Graphs: empty, their nodes counted only.
CUDART_API Error cudaGraphDestroy(void* graph) {
  if (graph == nullptr) return Return(kErrorInvalidValue);
  delete static_cast<Graph*>(graph);
  return kSuccess;
}

CUDART_API Error cudaGraphInstantiateWithFlags(void** exec, void* graph, unsigned long long /*flags*/) {
  if (exec == nullptr || graph == nullptr) return Return(kErrorInvalidValue);
  *exec = new GraphExec;
  return kSuccess;
}

CUDART_API Error cudaGraphExecDestroy(void* exec) {
  if (exec == nullptr) return Return(kErrorInvalidValue);
  delete static_cast<GraphExec*>(exec);
  return kSuccess;
}

CUDART_API Error cudaGraphLaunch(void* exec, void* stream) {
  if (exec == nullptr) return Return(kErrorInvalidValue);
  return Return(Known(stream));
}

CUDART_API Error cudaGraphGetNodes(void* graph, void** nodes, size_t* count) {
  if (graph == nullptr || count == nullptr) return Return(kErrorInvalidValue);
  (void)nodes;  // an empty graph has none to list
  *count = 0;
  return kSuccess;
}

CUDART_API Error cudaGraphConditionalHandleCreate(unsigned long long* handle, void* graph, unsigned int /*value*/,
                                                  unsigned int /*flags*/) {
  if (handle == nullptr || graph == nullptr) return Return(kErrorInvalidValue);
  static std::atomic<unsigned long long> next{1};
  *handle = next++;
  return kSuccess;
}

// User objects: reference-counted, destroyed (their callback run) at the last release.
CUDART_API Error cudaUserObjectCreate(void** object, void* pointer, void (*destroy)(void*), unsigned int refs,
                                      unsigned int /*flags*/) {
  if (object == nullptr || destroy == nullptr || refs == 0) return Return(kErrorInvalidValue);
  *object = new UserObject{pointer, destroy, refs};
  return kSuccess;
}

CUDART_API Error cudaUserObjectRelease(void* object, unsigned int count) {
  if (object == nullptr) return Return(kErrorInvalidValue);
  auto* user = static_cast<UserObject*>(object);
  std::unique_lock<std::mutex> lock(gMutex);
  user->refs = count >= user->refs ? 0 : user->refs - count;
  if (user->refs != 0) return kSuccess;
  lock.unlock();
  user->destroy(user->pointer);
  delete user;
  return kSuccess;
}

CUDART_API Error cudaGraphRetainUserObject(void* graph, void* object, unsigned int count, unsigned int /*flags*/) {
  if (graph == nullptr || object == nullptr) return Return(kErrorInvalidValue);
  std::lock_guard<std::mutex> lock(gMutex);
  static_cast<UserObject*>(object)->refs += count;
  return kSuccess;
}
