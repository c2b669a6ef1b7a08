#!/bin/sh
# The init container's check (examples/k8s-init-container.yaml): fails the pod before the main container
# starts when the workload in $VRAMFIT_CHECK (vramfit check's arguments) does not fit on every GPU
# the pod was given. The reason goes to the termination message, so `kubectl describe pod` and
# `kubectl get pod -o jsonpath='{.status.initContainerStatuses[0].state.terminated.message}'` show it.
# $VRAMFIT is the command to run (default `vramfit`); $TERMINATION_LOG overrides /dev/termination-log.
set -u
termination_log=${TERMINATION_LOG:-/dev/termination-log}
if [ -z "${VRAMFIT_CHECK:-}" ]; then
  echo "vramfit: no requirement: set VRAMFIT_CHECK to vramfit check's arguments" | tee "$termination_log" >&2
  exit 1
fi
# Word splitting of both variables is intended: they hold a command and its arguments.
# shellcheck disable=SC2086
verdict=$(${VRAMFIT:-vramfit} check --device all $VRAMFIT_CHECK 2>&1)
status=$?
echo "$verdict" >&2
if [ "$status" -ne 0 ]; then
  # vramfit's exit status: 1 does not fit, 2 bad requirement, 3 no usable GPU.
  printf 'vramfit refused the pod (exit %s): %s\n' "$status" "$verdict" > "$termination_log"
  exit 1
fi
