#!/usr/bin/env python3
"""Wall and CPU seconds of a command and of every process it starts, orphans included.

    python3 scripts/tree-cpu.py [--label TEXT] COMMAND [ARG...]

`time` misses the CPU of grandchildren that outlive their parent (vitest's worker ends before the
harness processes it closed have exited; they are re-parented to init and their CPU is counted
nowhere). Here this process becomes a child subreaper (prctl PR_SET_CHILD_SUBREAPER), so every
descendant is reaped by it and its CPU lands in RUSAGE_CHILDREN. Prints one line to stderr:
"LABEL: wall W s, cpu U+S = T s (exit N)". Exits with the command's status.
"""
import ctypes
import os
import resource
import subprocess
import sys
import time

PR_SET_CHILD_SUBREAPER = 36


def main(argv):
    label = None
    if len(argv) >= 2 and argv[0] == "--label":
        label, argv = argv[1], argv[2:]
    if not argv:
        print("tree-cpu: expected a command to run", file=sys.stderr)
        return 2
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        print(f"tree-cpu: prctl(PR_SET_CHILD_SUBREAPER) failed: {os.strerror(ctypes.get_errno())}", file=sys.stderr)
        return 1
    started = time.monotonic()
    child = subprocess.Popen(argv)
    status = child.wait()
    # The orphans it left: reap them as they end.
    while True:
        try:
            os.wait()
        except ChildProcessError:
            break
    wall = time.monotonic() - started
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f"{label or ' '.join(argv)}: wall {wall:.1f} s, cpu {usage.ru_utime:.1f}+{usage.ru_stime:.1f} = {usage.ru_utime + usage.ru_stime:.1f} s (exit {status})", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
