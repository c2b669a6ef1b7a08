/* A stand-in for a user's training job, for `vramfit batch --exec` tests and the benchmark: it
 * allocates fixed + perSample x batch bytes through the (simulated) CUDA driver, holds them for a
 * moment and exits 0, or prints a framework's out-of-memory message and exits 1.
 *
 * It is C, not Node, on purpose: it shares no code with vramfit (it dlopens the driver named by
 * VRAMFIT_CUDA_LIBRARY as a framework's runtime dlopens libcuda.so.1), it starts in about a
 * millisecond (the benchmark runs it hundreds of times), and fork() gives the worker case.
 *
 * The batch: argv[1], else VRAMFIT_BATCH. Everything else from SIMJOB_* variables (all optional):
 *   SIMJOB_FIXED=BYTES        one tensor allocated first (weights, optimizer states)
 *   SIMJOB_PER_SAMPLE=BYTES   per-sample bytes, times the batch ...
 *   SIMJOB_PARTS=N            ... split into N tensors (default 1)
 *   SIMJOB_SMALL=N@BYTES      N small tensors more (workspaces)
 *   SIMJOB_NOISE=BYTES        one more tensor of u(batch) in [0, NOISE] bytes, deterministic per
 *                             batch and SIMJOB_SEED (test/job/simJob.mjs computes the same u)
 *   SIMJOB_HOLD_MS=MS         how long the memory is held (default 20)
 *   SIMJOB_HOLD_UNTIL=PATH    hold it instead until PATH exists (a test releases it once it has
 *                             seen the memory held, so that no timing decides what is measured)
 *   CUDASIM_NVML_SEEN_DIR=DIR hold it at least until the simulated NVML has listed this process
 *                             with all its bytes (DIR/<pid>), at most 10 s: a sampler on a loaded
 *                             machine cannot miss the peak
 *   SIMJOB_OOM=STYLE          the message printed when an allocation fails: pytorch (default),
 *                             pytorch-legacy, cuda-runtime, cuda-driver, cublas, cudnn, jax,
 *                             tensorflow; SIMJOB_OOM_STREAM=stdout prints it there instead
 *   SIMJOB_PRINT_PEAK=1       print VRAMFIT_PEAK_BYTES=<bytes requested> once everything is held
 *                             (as torch.cuda.max_memory_reserved(): no context, no page rounding);
 *                             =device: the device bytes its allocations took (cuMemGetInfo's free
 *                             before less free after, the most of its devices; the context not
 *                             included, which CUDASIM_CONTEXT_BYTES=0 makes exact)
 *   SIMJOB_ALL_DEVICES=1      allocate on every visible device (a data-parallel job)
 *   SIMJOB_WORKER=1           fork a worker that does the allocating; the parent waits for it
 *   SIMJOB_CRASH_AT=B         from batch B on: fail with a non-memory CUDA error (exit 1)
 *   SIMJOB_HANG_AT=B          from batch B on: never exit
 *   SIMJOB_KILL_AT=B          from batch B on: SIGKILL itself (the kernel OOM killer's signature)
 *   SIMJOB_PID_FILE=PATH      append this process's pid (and the worker's) to PATH
 */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../native/cuda/cuda_driver_api.h"

#define MAX_DEVICES 8
#define MAX_TENSORS 256

static PFN_cuInit p_cuInit;
static PFN_cuDeviceGetCount p_cuDeviceGetCount;
static PFN_cuDeviceGet p_cuDeviceGet;
static PFN_cuDevicePrimaryCtxRetain p_cuDevicePrimaryCtxRetain;
static PFN_cuDevicePrimaryCtxRelease_v2 p_cuDevicePrimaryCtxRelease_v2;
static PFN_cuCtxSetCurrent p_cuCtxSetCurrent;
static PFN_cuMemAlloc_v2 p_cuMemAlloc_v2;
static PFN_cuMemGetInfo_v2 p_cuMemGetInfo_v2;

static CUdevice retained[MAX_DEVICES];
static int retainedCount;

static unsigned long long envBytes(const char* name, unsigned long long fallback) {
  const char* text = getenv(name);
  return text != NULL && *text != '\0' ? strtoull(text, NULL, 10) : fallback;
}

static void die(const char* message) {
  fprintf(stderr, "sim-job: %s\n", message);
  exit(64);
}

/* The context's release frees every allocation made in it: nothing is left in the ledger. */
static void releaseContexts(void) {
  for (int i = 0; i < retainedCount; ++i) p_cuDevicePrimaryCtxRelease_v2(retained[i]);
  retainedCount = 0;
}

static void* bind(void* library, const char* name) {
  void* symbol = dlsym(library, name);
  if (symbol == NULL) die(name);
  return symbol;
}

static void loadDriver(void) {
  const char* path = getenv("VRAMFIT_CUDA_LIBRARY");
  void* library = dlopen(path != NULL ? path : "libcuda.so.1", RTLD_NOW);
  if (library == NULL) die(dlerror());
  p_cuInit = (PFN_cuInit)bind(library, "cuInit");
  p_cuDeviceGetCount = (PFN_cuDeviceGetCount)bind(library, "cuDeviceGetCount");
  p_cuDeviceGet = (PFN_cuDeviceGet)bind(library, "cuDeviceGet");
  p_cuDevicePrimaryCtxRetain = (PFN_cuDevicePrimaryCtxRetain)bind(library, "cuDevicePrimaryCtxRetain");
  p_cuDevicePrimaryCtxRelease_v2 = (PFN_cuDevicePrimaryCtxRelease_v2)bind(library, "cuDevicePrimaryCtxRelease_v2");
  p_cuCtxSetCurrent = (PFN_cuCtxSetCurrent)bind(library, "cuCtxSetCurrent");
  p_cuMemAlloc_v2 = (PFN_cuMemAlloc_v2)bind(library, "cuMemAlloc_v2");
  p_cuMemGetInfo_v2 = (PFN_cuMemGetInfo_v2)bind(library, "cuMemGetInfo_v2");
}

/* u(batch) in [0, noise]: a 32-bit integer hash, mirrored by noiseBytes() in simJob.mjs. */
static unsigned long long noiseBytes(unsigned long long batch, unsigned long long noise, uint32_t seed) {
  uint32_t h = seed ^ (uint32_t)(batch * 0x9E3779B1u);
  h ^= h >> 16;
  h *= 0x85EBCA6Bu;
  h ^= h >> 13;
  h *= 0xC2B2AE35u;
  h ^= h >> 16;
  return (unsigned long long)(h % 1025u) * (noise / 1024u);
}

static void printOutOfMemory(unsigned long long bytes, int device) {
  const char* style = getenv("SIMJOB_OOM") != NULL ? getenv("SIMJOB_OOM") : "pytorch";
  const char* stream = getenv("SIMJOB_OOM_STREAM");
  FILE* out = stream != NULL && strcmp(stream, "stdout") == 0 ? stdout : stderr;
  if (strcmp(style, "pytorch") == 0) {
    fprintf(out, "Traceback (most recent call last):\n  File \"train.py\", line 42, in <module>\n    loss.backward()\n"
                 "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate %llu bytes. GPU %d has a total capacity of ...\n",
            bytes, device);
  } else if (strcmp(style, "pytorch-legacy") == 0) {
    fprintf(out, "RuntimeError: CUDA out of memory. Tried to allocate %llu bytes (GPU %d; ...)\n", bytes, device);
  } else if (strcmp(style, "cuda-runtime") == 0) {
    fprintf(out, "train: cudaMalloc(%llu) failed: cudaErrorMemoryAllocation (out of memory)\n", bytes);
  } else if (strcmp(style, "cuda-driver") == 0) {
    fprintf(out, "train: cuMemAlloc(%llu) failed: CUDA_ERROR_OUT_OF_MEMORY\n", bytes);
  } else if (strcmp(style, "cublas") == 0) {
    fprintf(out, "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`\n");
  } else if (strcmp(style, "cudnn") == 0) {
    fprintf(out, "RuntimeError: cuDNN error: CUDNN_STATUS_ALLOC_FAILED\n");
  } else if (strcmp(style, "jax") == 0) {
    fprintf(out, "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate %llu bytes.\n", bytes);
  } else if (strcmp(style, "tensorflow") == 0) {
    fprintf(out, "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor with shape[%llu] "
                 "and type uint8 on /job:localhost/replica:0/task:0/device:GPU:%d by allocator GPU_%d_bfc\n",
            bytes, device, device);
  } else {
    fprintf(out, "sim-job: out of memory (unknown SIMJOB_OOM style %s)\n", style);
  }
  fflush(out);
}

static void sleepMs(unsigned long long ms) {
  struct timespec t = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
  while (nanosleep(&t, &t) != 0 && errno == EINTR) {
  }
}

/* CUDASIM_NVML_SEEN_DIR: waits (at most 10 s) until NVML has listed this process holding `bytes` or more. */
static void waitUntilSeen(unsigned long long bytes) {
  const char* dir = getenv("CUDASIM_NVML_SEEN_DIR");
  if (dir == NULL || *dir == '\0') return;
  char path[4096];
  snprintf(path, sizeof path, "%s/%d", dir, (int)getpid());
  for (int waited = 0; waited < 10000; waited += 5) {
    FILE* file = fopen(path, "r");
    unsigned long long seen = 0;
    if (file != NULL) {
      int read = fscanf(file, "%llu", &seen);
      fclose(file);
      if (read == 1 && seen >= bytes) return;
    }
    sleepMs(5);
  }
}

/* Allocates the job's tensors on every device it uses; returns the exit status. */
static int train(unsigned long long batch) {
  unsigned long long fixed = envBytes("SIMJOB_FIXED", 0);
  unsigned long long perSample = envBytes("SIMJOB_PER_SAMPLE", 0);
  unsigned long long parts = envBytes("SIMJOB_PARTS", 1);
  unsigned long long noise = envBytes("SIMJOB_NOISE", 0);
  unsigned long long smallCount = 0, smallBytes = 0;
  const char* small = getenv("SIMJOB_SMALL");
  if (small != NULL && sscanf(small, "%llu@%llu", &smallCount, &smallBytes) != 2) die("SIMJOB_SMALL: expected N@BYTES");
  if (parts < 1 || parts + smallCount + 2 > MAX_TENSORS) die("SIMJOB_PARTS/SIMJOB_SMALL: too many tensors");

  unsigned long long sizes[MAX_TENSORS];
  int count = 0;
  unsigned long long activations = perSample * batch;
  if (fixed > 0) sizes[count++] = fixed;
  for (unsigned long long i = 0; i < smallCount; ++i) sizes[count++] = smallBytes;
  for (unsigned long long i = 0; i < parts; ++i) {
    unsigned long long part = activations / parts + (i + 1 == parts ? activations % parts : 0);
    if (part > 0) sizes[count++] = part;
  }
  unsigned long long extra = noiseBytes(batch, noise, (uint32_t)envBytes("SIMJOB_SEED", 0));
  if (extra > 0) sizes[count++] = extra;
  unsigned long long requested = 0;
  for (int i = 0; i < count; ++i) requested += sizes[i];

  loadDriver();
  if (p_cuInit(0) != CUDA_SUCCESS) die("cuInit failed");
  int devices = 1;
  if (envBytes("SIMJOB_ALL_DEVICES", 0) != 0 && p_cuDeviceGetCount(&devices) != CUDA_SUCCESS) die("cuDeviceGetCount failed");
  if (devices > MAX_DEVICES) devices = MAX_DEVICES;
  atexit(releaseContexts);
  unsigned long long taken = 0;
  for (int d = 0; d < devices; ++d) {
    CUdevice device;
    CUcontext context;
    if (p_cuDeviceGet(&device, d) != CUDA_SUCCESS) die("cuDeviceGet failed");
    CUresult status = p_cuDevicePrimaryCtxRetain(&context, device);
    if (status == CUDA_ERROR_OUT_OF_MEMORY) {
      printOutOfMemory(0, d);
      return 1;
    }
    if (status != CUDA_SUCCESS) die("cuDevicePrimaryCtxRetain failed");
    retained[retainedCount++] = device;
    p_cuCtxSetCurrent(context);
    size_t freeBefore = 0, freeAfter = 0, total = 0;
    p_cuMemGetInfo_v2(&freeBefore, &total);
    for (int i = 0; i < count; ++i) {
      CUdeviceptr pointer;
      status = p_cuMemAlloc_v2(&pointer, sizes[i]);
      if (status == CUDA_ERROR_OUT_OF_MEMORY) {
        printOutOfMemory(sizes[i], d);
        return 1;
      }
      if (status != CUDA_SUCCESS) die("cuMemAlloc_v2 failed");
    }
    p_cuMemGetInfo_v2(&freeAfter, &total);
    if (freeBefore - freeAfter > taken) taken = freeBefore - freeAfter;
  }
  const char* print = getenv("SIMJOB_PRINT_PEAK");
  if (print != NULL && strcmp(print, "device") == 0) printf("step 1 done\nVRAMFIT_PEAK_BYTES=%llu\n", taken);
  else if (print != NULL && *print != '\0' && strcmp(print, "0") != 0) printf("step 1 done\nVRAMFIT_PEAK_BYTES=%llu\n", requested);
  fflush(stdout);
  const char* until = getenv("SIMJOB_HOLD_UNTIL");
  if (until != NULL) {
    while (access(until, F_OK) != 0) sleepMs(5);
  } else {
    sleepMs(envBytes("SIMJOB_HOLD_MS", 20));
    waitUntilSeen(taken);
  }
  return 0;
}

static void recordPid(void) {
  const char* path = getenv("SIMJOB_PID_FILE");
  if (path == NULL) return;
  FILE* file = fopen(path, "a");
  if (file == NULL) die("SIMJOB_PID_FILE: cannot open");
  fprintf(file, "%d\n", (int)getpid());
  fclose(file);
}

static int at(const char* name, unsigned long long batch) {
  unsigned long long threshold = envBytes(name, 0);
  return threshold > 0 && batch >= threshold;
}

int main(int argc, char** argv) {
  const char* text = argc > 1 ? argv[1] : getenv("VRAMFIT_BATCH");
  char* end = NULL;
  unsigned long long batch = text != NULL ? strtoull(text, &end, 10) : 0;
  if (text == NULL || *text == '\0' || *end != '\0' || batch < 1) die("expected a batch size (argv[1] or VRAMFIT_BATCH)");
  recordPid();
  if (at("SIMJOB_KILL_AT", batch)) raise(SIGKILL);
  if (at("SIMJOB_HANG_AT", batch)) {
    for (;;) pause();
  }
  if (at("SIMJOB_CRASH_AT", batch)) {
    fprintf(stderr, "Traceback (most recent call last):\n  File \"train.py\", line 40, in <module>\n"
                    "RuntimeError: CUDA error: an illegal memory access was encountered\n");
    return 1;
  }
  if (envBytes("SIMJOB_WORKER", 0) == 0) return train(batch);
  fflush(NULL);
  pid_t worker = fork();
  if (worker < 0) die("fork failed");
  if (worker == 0) {
    recordPid();
    exit(train(batch));
  }
  int status = 0;
  while (waitpid(worker, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) raise(WTERMSIG(status));
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
