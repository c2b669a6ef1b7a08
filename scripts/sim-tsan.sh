#!/usr/bin/env bash
# Runs the simulated driver's multi-device program (test/native/sim/devices_driver.cc) under
# ThreadSanitizer: the driver (native/sim, one library here, not the build's three) and the program
# are built with -fsanitize=thread, then eight devices allocate at once and free each other's
# pointers in a ring, with the ledger in memory, with its memory log, and in a shared CUDASIM_STATE
# file. The per-device locks and the per-pool ledger locks (docs/simulator.md) are what it checks:
# any data race or lock-order inversion makes ThreadSanitizer report and this script exit non-zero.
# Not part of the tests (a TSan build takes ~15 s of CPU); run it after changing native/sim's locking.
#   scripts/sim-tsan.sh [ROUNDS]   (default 30)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-30}"
cxx="${CXX:-g++}"
work="$(mktemp -d "${TMPDIR:-/tmp}/vramfit-sim-tsan-XXXXXX")"
trap 'rm -rf "$work"' EXIT

# Every source of the simulated machine (NVML's too: one library serves both here), so a file
# added to native/sim needs no edit here.
"$cxx" -std=c++17 -O1 -g -fPIC -shared -fsanitize=thread -pthread native/sim/*.cc -o "$work/libcuda.so.1" -ldl
"$cxx" -std=c++17 -O1 -g -fsanitize=thread -pthread test/native/sim/devices_driver.cc -o "$work/devices_driver" -ldl

h100="NVIDIA H100 80GB HBM3:85045477376:0"
eight="$h100;$h100;$h100;$h100;$h100;$h100;$h100;$h100"
status=0
check() { # NAME VAR=VALUE... -- ARGS...
  local name="$1"; shift
  local vars=()
  while [ "$1" != "--" ]; do vars+=("$1"); shift; done
  shift
  local rc=0
  env -i PATH="$PATH" CUDASIM_CONTEXT_BYTES=0 TSAN_OPTIONS="exitcode=66 halt_on_error=0" "${vars[@]}" \
    "$work/devices_driver" "$work/libcuda.so.1" "$@" >"$work/out" 2>"$work/err" || rc=$?
  if [ "$rc" -eq 0 ]; then
    echo "ok    $name: $(cat "$work/out")"
  else
    status=1
    echo "FAIL  $name (exit $rc; 66: ThreadSanitizer reported):"
    cat "$work/out" "$work/err"
  fi
}
check "eight devices, ledger in memory" CUDASIM_DEVICES="$eight" -- threads 8 "$rounds"
check "eight devices, with the memory log" CUDASIM_DEVICES="$eight" CUDASIM_MEMORY_LOG="$work/memory.log" -- threads 8 5
check "eight devices, shared ledger file" CUDASIM_DEVICES="$eight" CUDASIM_STATE="$work/state" -- threads 8 5
check "two devices, unified addressing" CUDASIM_DEVICES="$h100;$h100" -- unified
exit "$status"
