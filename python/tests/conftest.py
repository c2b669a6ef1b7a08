"""pytest set-up: the tracer's fake CUDA device is loaded before torch (vramfit_trace/fake_cuda.py says why)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from vramfit_trace import fake_cuda  # noqa: E402

fake_cuda.preload()
fake_cuda.answer_torch_cuda((9, 0))
