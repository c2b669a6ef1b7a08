"""One training or inference step, phase by phase, as a PyTorch user writes it: the same code runs the fake
trace (fake CUDA) and the real CPU step the tests compare it with."""
import contextlib

import torch

TRAIN_PHASES = ["forward", "loss", "backward", "optimizer", "zero_grad"]
INFER_PHASES = ["forward"]

AUTOCAST_DTYPE = {"amp": torch.float16}  # --precision amp: fp16 autocast over fp32 weights, as torch.cuda.amp


def make_optimizer(name, impl, parameters):
    """torch.optim's optimizer; `impl` picks the implementation (foreach, the single-tensor loop, fused)."""
    flags = {"foreach": impl == "foreach", "fused": impl == "fused"} if impl in ("foreach", "fused") else {"foreach": False}
    params = [p for p in parameters if p.requires_grad]
    if name == "sgd":
        return torch.optim.SGD(params, lr=1e-3, **flags)
    if name == "momentum":
        return torch.optim.SGD(params, lr=1e-3, momentum=0.9, **flags)
    if name == "adam":
        return torch.optim.Adam(params, lr=1e-3, **flags)
    return torch.optim.AdamW(params, lr=1e-3, **flags)


class Step:
    """Runs the step; `set_phase(i)` is told where it is (the recorder's phase index)."""

    def __init__(self, workload, options, device, set_phase=lambda i: None):
        self.workload = workload
        self.options = options
        self.device = device
        self.set_phase = set_phase
        self.optimizer = None
        if options.mode == "train":
            self.optimizer = make_optimizer(options.optimizer, options.optimizer_impl, workload.model.parameters())

    def autocast(self):
        dtype = AUTOCAST_DTYPE.get(self.options.precision)
        if dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(self.device.split(":")[0], dtype=dtype)

    def run(self, batch):
        """One step at this batch; returns what stays alive after it (inference: the output, with its cache)."""
        w = self.workload
        self.set_phase(0)
        inputs = w.make_inputs(batch, self.device)  # the loader's batch, moved to the device: part of forward
        if self.options.mode == "infer":
            with torch.no_grad(), self.autocast():
                return w.forward(w.model, inputs)
        w.model.train()
        with self.autocast():
            output = w.forward(w.model, inputs)
            self.set_phase(1)
            loss = w.loss(output, inputs)
        del output
        self.set_phase(2)
        loss.backward()
        del loss
        self.set_phase(3)
        self.optimizer.step()
        self.set_phase(4)
        self.optimizer.zero_grad(set_to_none=True)
        del inputs
        return None
