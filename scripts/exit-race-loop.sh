#!/usr/bin/env bash
# Loops a training job on the simulated T4 (the stubs, as `vramfit batch --exec --gpu T4` runs it) and counts
# the runs that abort at exit (torch 2.14.1's autograd exit race: test/fixtures/simulated/train_mlp_joined.py).
#   scripts/exit-race-loop.sh [--runs N] [--joined] [--idle-autograd] [--hogs H] [--batch B]
#     --joined         run train_mlp_joined.py (the barrier) instead of examples/pytorch/train_mlp.py
#     --idle-autograd  make torch's autograd device threads SCHED_IDLE (a preloaded library built here), so that
#                      beside other work they lag behind the main thread: the race's order, often, not always
#     --hogs H         H CPU hogs (`yes > /dev/null`) beside the runs, as CI's loaded runs have; ended at exit
# Needs VRAMFIT_TORCH_CUDA_PYTHON, a built tree (npm run build) and cc. Prints one line per run, then the count.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
runs=10 job="$root/examples/pytorch/train_mlp.py" idle=0 batch=12 hogs=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --joined) job="$root/test/fixtures/simulated/train_mlp_joined.py"; shift ;;
    --idle-autograd) idle=1; shift ;;
    --batch) batch=$2; shift 2 ;;
    --hogs) hogs=$2; shift 2 ;;
    *) echo "exit-race-loop.sh: unknown option $1 (expected --runs N, --joined, --idle-autograd, --hogs H, --batch B)" >&2; exit 2 ;;
  esac
done
python=${VRAMFIT_TORCH_CUDA_PYTHON:?VRAMFIT_TORCH_CUDA_PYTHON is unset (source .ci/python-envs.sh)}
stubs="$root/build/Release/stubs/cuda13"
work=$(mktemp -d)
hog_pids=()
trap 'rm -rf "$work"; [[ ${#hog_pids[@]} -eq 0 ]] || kill "${hog_pids[@]}"' EXIT
for _ in $(seq 1 "$hogs"); do
  yes >/dev/null &
  hog_pids+=($!)
done
preload="$stubs/libcuda.so.1 $stubs/libcudart.so.13 $stubs/libcublasLt.so.13 $stubs/libcublas.so.13 $stubs/libcudnn.so.9"
if [[ $idle -eq 1 ]]; then
  cat >"$work/idle.c" <<'EOF'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
// torch names its autograd device threads (c10::setThreadName) as each starts: make those SCHED_IDLE.
int pthread_setname_np(pthread_t thread, const char* name) {
  int (*real)(pthread_t, const char*) = (int (*)(pthread_t, const char*))dlsym(RTLD_NEXT, "pthread_setname_np");
  int result = real(thread, name);
  struct sched_param none = {0};
  if (strncmp(name, "pt_autograd", 11) == 0 && pthread_equal(thread, pthread_self())) sched_setscheduler(0, SCHED_IDLE, &none);
  return result;
}
EOF
  cc -shared -fPIC -O2 -o "$work/idle.so" "$work/idle.c" -ldl
  preload="$preload $work/idle.so"
fi
# The T4 as src/job/simulatedGpu.ts describes it (CUDASIM_DEVICES) with vramfit's 512 MiB job context.
export LD_PRELOAD="$preload" LD_LIBRARY_PATH="$stubs" CUDA_VISIBLE_DEVICES=0 CUDASIM_CONTEXT_BYTES=536870912 VRAMFIT_STUB_CUDNN_WORKSPACE=0
export CUDASIM_DEVICES="Tesla T4:15642329088:cc=7.5:sm=40:l2=4194304"
aborted=0
for i in $(seq 1 "$runs"); do
  status=0
  VRAMFIT_STUB_COUNTERS="$work/run$i.counters.%p" "$python" "$job" --batch-size "$batch" --seq 16384 --steps 1 >"$work/out" 2>"$work/err" || status=$?
  counters=$(find "$work" -name "run$i.counters.*" | wc -l)
  echo "run $i: exit $status, counters files $counters$(grep -q 'terminate called without an active exception' "$work/err" && echo ', terminate called without an active exception')"
  [[ $status -eq 134 ]] && aborted=$((aborted + 1))
done
echo "$aborted of $runs runs aborted ($(basename "$job"), batch $batch$([[ $idle -eq 1 ]] && echo ', autograd threads SCHED_IDLE'), $hogs hogs)"
