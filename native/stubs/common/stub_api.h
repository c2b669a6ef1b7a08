// What every vramfit stub library (cuBLAS, cuBLASLt, cuDNN) shares: how an entry point is exported,
// and the library's entry points that succeed and do no work, defined from a list of names.
#ifndef VRAMFIT_STUBS_STUB_API_H
#define VRAMFIT_STUBS_STUB_API_H

// Built with -fvisibility=hidden: only what is marked so is exported (and then versioned by the
// library's version script, as NVIDIA's libraries version theirs).
#define STUB_API extern "C" __attribute__((visibility("default")))

// An entry point that succeeds and does nothing: every status type of these libraries is an int
// enumeration whose success is 0. Declared without parameters, on purpose: under the x86-64 and
// AArch64 calling conventions a caller's arguments live in registers and on its own stack, so a
// callee that ignores them may take none; what such a function must not do is write through one of
// its pointers (device memory is address space only). Functions with outputs are written by hand.
#define STUB_NO_WORK(name) \
  STUB_API int name() { return 0; }

#endif  // VRAMFIT_STUBS_STUB_API_H
