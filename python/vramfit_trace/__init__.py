"""vramfit's step tracer: records a PyTorch model's training or inference step on a fake CUDA device (`python -m vramfit_trace`)."""

TRACER_VERSION = "1"
