#!/bin/bash
# Instructions one CLI command takes in each of several built checkouts, run side by side: a count that a loaded host's slow minutes do not move.
# usage: scripts/cli-instructions.sh "ARGS" CHECKOUT...   e.g. scripts/cli-instructions.sh "gpus --fit --model resnet152 --min-batch 4096" /work/wt/lead .
# valgrind's cachegrind (no cache simulation) counts every instruction of `node --predictable`
# (V8 single-threaded, so a build reads within ~0.1 % run to run); each run gets a new empty
# XDG_CACHE_HOME, so neither side has a code cache. A command that yields by time (advice's
# checkpoints) still moves a little with the host: compare builds run together, not across runs.
set -u
args=$1
shift
for checkout in "$@"; do
  (
    cache=$(mktemp -d)
    refs=$(XDG_CACHE_HOME=$cache nice -n 5 valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null --smc-check=all-non-file \
      node --predictable "$checkout/bin/vramfit.js" $args 2>&1 >/dev/null | grep -E "I\s+refs" | awk '{print $NF}')
    rm -rf "$cache"
    echo "$checkout $refs"
  ) &
done
wait
