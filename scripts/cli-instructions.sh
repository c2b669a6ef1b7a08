#!/bin/bash
# Instructions one CLI command takes in each of several built checkouts, run side by side: a count that a loaded host's slow minutes do not move.
# usage: scripts/cli-instructions.sh "ARGS" CHECKOUT...   e.g. scripts/cli-instructions.sh "gpus --fit --model resnet152 --min-batch 4096" /work/wt/lead .
# On simulated GPUs: CUDASIM_DEVICES="NVIDIA H100 80GB HBM3:85045477376:0;..." scripts/cli-instructions.sh "batch ... --device all" /work/wt/lead .
# On the code cache the command made itself (as users and bench.mjs run it): WARM=1 scripts/cli-instructions.sh "ARGS" CHECKOUT...
# valgrind's cachegrind (no cache simulation) counts every instruction of `node --predictable`
# (V8 single-threaded, so a build reads within ~0.1 % run to run); each run gets a new empty
# XDG_CACHE_HOME, so neither side has a code cache, unless WARM=1: then the command runs twice
# first, outside valgrind, in that folder (the first run writes the cache bin/vramfit.js keeps,
# the second reads it), and the counted run reads it too. A command that yields by time (advice's
# checkpoints) still moves a little with the host: compare builds run together, not across runs.
# --predictable also runs TurboFan's compiles on the main thread: they are counted here, where a
# real run makes them on a helper thread.
set -u
args=$1
shift
for checkout in "$@"; do
  (
    cache=$(mktemp -d)
    # Simulated GPUs (CUDASIM_DEVICES set, VRAMFIT_CUDA_LIBRARY not): each checkout on its own
    # build's simulator, with device locks of its own (the checkouts run at once).
    sim=()
    if [ -n "${CUDASIM_DEVICES:-}" ] && [ -z "${VRAMFIT_CUDA_LIBRARY:-}" ]; then
      sim=("VRAMFIT_CUDA_LIBRARY=$checkout/build/Release/libcudasim.so" "VRAMFIT_LOCK_DIR=$cache")
    fi
    if [ "${WARM:-0}" = 1 ]; then
      for _ in 1 2; do env "${sim[@]}" XDG_CACHE_HOME=$cache node --predictable "$checkout/bin/vramfit.js" $args >/dev/null 2>&1; done
    fi
    refs=$(env "${sim[@]}" XDG_CACHE_HOME=$cache nice -n 5 valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null --smc-check=all-non-file \
      node --predictable "$checkout/bin/vramfit.js" $args 2>&1 >/dev/null | grep -E "I\s+refs" | awk '{print $NF}')
    rm -rf "$cache"
    echo "$checkout $refs"
  ) &
done
wait
