// Part of measure-step-peak.py's reference (test/fixtures/torch-step-peaks*.json); compiled by it, never by the build.
/*
 * LD_PRELOAD shim for scripts/reference/measure-step-peak.py: counts the bytes of PyTorch's CPU tensors.
 *
 * PyTorch's CPU allocator (c10::alloc_cpu in c10/core/impl/alloc_cpu.cpp) takes every tensor's
 * storage with posix_memalign and gives it back with free. This shim wraps posix_memalign,
 * aligned_alloc and memalign and counts the allocations made from inside libc10 (the caller's
 * return address lies in the library whose file name contains "libc10.so"), each rounded up to
 * 512 bytes as PyTorch's CUDA caching allocator rounds a request (kMinBlockSize), so the live
 * total is what torch.cuda.memory_allocated() would report for the same tensors. Aligned
 * allocations from anywhere else (BLAS, OpenMP, Python) are counted apart, for information.
 *
 * Allocations of 8 bytes or less (the storage of a 0-dim tensor) are not counted: a Python
 * number in a tensor expression (`0.5 * x`) becomes a 0-dim "wrapped number" tensor, which
 * autograd may keep; on CUDA it stays in host memory, but here it cannot be told from a device
 * scalar. The measurement leaves every scalar out (each would take 512 B on the device).
 *
 * The script reads the counters through ctypes: vramfit_live_bytes(), vramfit_peak_bytes()
 * (the most live bytes since the last vramfit_reset_peak()), vramfit_allocations(),
 * vramfit_other_live_bytes().
 *
 * Built by the script: gcc -O2 -shared -fPIC -o shim.so step-peak-shim.c -ldl -lpthread
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* glibc's own entry points: no dlsym (which may itself allocate) is needed to reach them. */
extern void *__libc_memalign(size_t alignment, size_t size);
extern void __libc_free(void *ptr);

#define ROUND 512
#define SCALAR_BYTES 8 /* the largest 0-dim tensor (int64, float64) */
#define TABLE_SIZE (1u << 22) /* open addressing; far more than the live tensors of a step */
#define CALLERS 64

struct entry {
  uintptr_t ptr; /* 0: empty, 1: deleted */
  size_t bytes;  /* rounded */
  int c10;
};

static struct entry table[TABLE_SIZE];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long long live_bytes, peak_bytes, other_live_bytes, allocations;

/* Return addresses already classified: a handful of call sites make every aligned allocation. */
static uintptr_t caller_address[CALLERS];
static int caller_is_c10[CALLERS];
static int callers;

static size_t rounded(size_t size) { return (size + ROUND - 1) / ROUND * ROUND; }

static size_t slot_of(uintptr_t ptr) { return (size_t)((ptr >> 6) * 0x9E3779B97F4A7C15ull) & (TABLE_SIZE - 1); }

static int classify(void *return_address) {
  uintptr_t address = (uintptr_t)return_address;
  pthread_mutex_lock(&lock);
  for (int i = 0; i < callers; i++) {
    if (caller_address[i] == address) {
      int known = caller_is_c10[i];
      pthread_mutex_unlock(&lock);
      return known;
    }
  }
  pthread_mutex_unlock(&lock);
  Dl_info info;
  int c10 = dladdr(return_address, &info) != 0 && info.dli_fname != NULL && strstr(info.dli_fname, "libc10.so") != NULL;
  pthread_mutex_lock(&lock);
  if (callers < CALLERS) {
    caller_address[callers] = address;
    caller_is_c10[callers] = c10;
    callers++;
  }
  pthread_mutex_unlock(&lock);
  return c10;
}

static void record(void *ptr, size_t size, int c10) {
  if (ptr == NULL) return;
  size_t bytes = rounded(size);
  pthread_mutex_lock(&lock);
  size_t slot = slot_of((uintptr_t)ptr);
  while (table[slot].ptr > 1) slot = (slot + 1) & (TABLE_SIZE - 1);
  table[slot].ptr = (uintptr_t)ptr;
  table[slot].bytes = bytes;
  table[slot].c10 = c10;
  if (c10) {
    live_bytes += (long long)bytes;
    allocations++;
    if (live_bytes > peak_bytes) peak_bytes = live_bytes;
  } else {
    other_live_bytes += (long long)bytes;
  }
  pthread_mutex_unlock(&lock);
}

static void forget(void *ptr) {
  if (ptr == NULL) return;
  pthread_mutex_lock(&lock);
  size_t slot = slot_of((uintptr_t)ptr);
  while (table[slot].ptr != 0) {
    if (table[slot].ptr == (uintptr_t)ptr) {
      if (table[slot].c10) live_bytes -= (long long)table[slot].bytes;
      else other_live_bytes -= (long long)table[slot].bytes;
      table[slot].ptr = 1;
      break;
    }
    slot = (slot + 1) & (TABLE_SIZE - 1);
  }
  pthread_mutex_unlock(&lock);
}

static void *aligned(size_t alignment, size_t size, void *return_address) {
  void *ptr = __libc_memalign(alignment, size);
  if (ptr != NULL && size > SCALAR_BYTES) record(ptr, size, classify(return_address));
  return ptr;
}

int posix_memalign(void **out, size_t alignment, size_t size) {
  if (alignment % sizeof(void *) != 0 || (alignment & (alignment - 1)) != 0 || alignment == 0) return EINVAL;
  void *ptr = aligned(alignment, size, __builtin_return_address(0));
  if (ptr == NULL) return ENOMEM;
  *out = ptr;
  return 0;
}

void *aligned_alloc(size_t alignment, size_t size) { return aligned(alignment, size, __builtin_return_address(0)); }

void *memalign(size_t alignment, size_t size) { return aligned(alignment, size, __builtin_return_address(0)); }

void free(void *ptr) {
  forget(ptr);
  __libc_free(ptr);
}

long long vramfit_live_bytes(void) {
  pthread_mutex_lock(&lock);
  long long value = live_bytes;
  pthread_mutex_unlock(&lock);
  return value;
}

long long vramfit_peak_bytes(void) {
  pthread_mutex_lock(&lock);
  long long value = peak_bytes;
  pthread_mutex_unlock(&lock);
  return value;
}

void vramfit_reset_peak(void) {
  pthread_mutex_lock(&lock);
  peak_bytes = live_bytes;
  pthread_mutex_unlock(&lock);
}

long long vramfit_allocations(void) {
  pthread_mutex_lock(&lock);
  long long value = allocations;
  pthread_mutex_unlock(&lock);
  return value;
}

long long vramfit_other_live_bytes(void) {
  pthread_mutex_lock(&lock);
  long long value = other_live_bytes;
  pthread_mutex_unlock(&lock);
  return value;
}
