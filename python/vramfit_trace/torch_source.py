"""Your own model: `--torch FILE.py:FUNCTION`. The protocol (examples/trace-own-model.py shows one):

    def FUNCTION(batch: int, device: str) -> dict
        returns {"model": nn.Module, "inputs": dict of tensors on `device`,
                 "loss": callable(output, inputs) -> 0-dim tensor,          (optional; default: output.float().mean())
                 "forward": callable(model, inputs) -> output}              (optional; default: model(**inputs))

The tracer calls it under fake tensors, so nothing is allocated and no weights are needed: build the model as
you would (on `device`, or on the meta device and the tracer moves it), make the inputs at this batch size.
"""
import importlib.util
import os

import torch

from .errors import TraceError
from .workload import Workload


def load(spec):
    path, _, function = spec.rpartition(":")
    if not path or not function:
        raise TraceError(f"--torch: {spec!r} is not FILE.py:FUNCTION")
    if not os.path.isfile(path):
        raise TraceError(f"--torch: {path} is not a file")
    module_spec = importlib.util.spec_from_file_location("vramfit_user_model", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    fn = getattr(module, function, None)
    if not callable(fn):
        raise TraceError(f"--torch: {path} has no function {function!r}")
    return fn


def build(options, dtype):
    fn = load(options.torch)
    with torch.device("meta"):
        made = fn(1, "meta")
    if not isinstance(made, dict) or not isinstance(made.get("model"), torch.nn.Module):
        raise TraceError(f"--torch: {options.torch} must return a dict with 'model' (an nn.Module) and 'inputs'")
    model = made["model"]
    if dtype != torch.float32:
        model = model.to(dtype)

    def make_inputs(batch, device):
        return fn(batch, device)["inputs"]

    def forward(model, inputs):
        f = made.get("forward")
        return f(model, inputs) if f else model(**inputs)

    def loss(output, inputs):
        f = made.get("loss")
        return f(output, inputs) if f else output.float().mean()

    return Workload("torch", options.torch, model, make_inputs, forward, loss, {})
