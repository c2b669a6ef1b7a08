"""The real CPU step the tests compare the fake trace with: run under scripts/reference/step-peak-shim.c (LD_PRELOAD),
it prints the live bytes PyTorch's CPU allocator holds after every aten op, as JSON: for each case (a list of the
tracer's options), its [op, live bytes] series. Not a test: test_cpu_equality.py runs it once for all its cases.

    LD_PRELOAD=shim.so VRAMFIT_STEP_PEAK_SHIM=shim.so python cpu_reference.py CASES-JSON BATCH
"""
import ctypes
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from vramfit_trace.cli import parse  # noqa: E402
from vramfit_trace.sources import resolve  # noqa: E402
from vramfit_trace.tracer import trace_batch  # noqa: E402


def main():
    cases, batch = json.loads(sys.argv[1]), int(sys.argv[2])
    shim = ctypes.CDLL(os.environ["VRAMFIT_STEP_PEAK_SHIM"])
    shim.vramfit_live_bytes.restype = ctypes.c_longlong
    series = []
    for argv in cases:
        options = parse(argv)
        build, _env = resolve(options, real=True)
        _events, recorder, _workload = trace_batch(build, options, batch, device="cpu", fake=False,
                                                   live_bytes=shim.vramfit_live_bytes)
        series.append(recorder.boundaries)
        del recorder, _workload
    json.dump(series, sys.stdout)


if __name__ == "__main__":
    main()
