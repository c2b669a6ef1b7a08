"""Your own PyTorch model for `vramfit trace --torch examples/trace-own-model.py:make` (python/vramfit_trace/torch_source.py
documents the protocol): the function gets the batch size and the device, and returns the model, the batch and the
loss. The tracer runs it under fake tensors: no GPU, no weights, nothing allocated."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class TinyClassifier(nn.Module):
    def __init__(self, features=512, hidden=2048, classes=10):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(features, hidden), nn.GELU(), nn.LayerNorm(hidden), nn.Linear(hidden, hidden), nn.GELU())
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):
        return self.head(self.body(x))


def make(batch, device):
    return {
        "model": TinyClassifier(),
        "inputs": {"x": torch.randn(batch, 512, device=device), "labels": torch.randint(0, 10, (batch,), device=device)},
        "forward": lambda model, inputs: model(inputs["x"]),
        "loss": lambda output, inputs: F.cross_entropy(output, inputs["labels"]),
    }
