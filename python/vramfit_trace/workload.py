"""What a source gives the step: the model and, for a batch size, its inputs, its forward and its loss."""
import torch


class Workload:
    """A model with its inputs and loss; the sources (hf_source, vision_source, torch_source) make these."""

    def __init__(self, source, name, model, make_inputs, forward, loss, environment=None):
        self.source = source
        self.name = name
        self.model = model
        self.make_inputs = make_inputs  # (batch, device) -> inputs
        self.forward = forward  # (model, inputs) -> output
        self.loss = loss  # (output, inputs) -> 0-dim tensor
        self.environment = environment or {}

    def counts(self):
        """Parameters counted once each (tied weights once), and those that train."""
        seen = {}
        for p in self.model.parameters():  # parameters() yields a shared Parameter once
            seen[id(p)] = p
        total = sum(p.numel() for p in seen.values())
        trainable = sum(p.numel() for p in seen.values() if p.requires_grad)
        return total, trainable


def materialize(model, device, dtype):
    """Replaces a meta-device model's parameters and buffers by empty ones on `device` (fake under FakeTensorMode).

    One new tensor per original, so tied weights stay tied (Module.to_empty would make two). Floating-point
    parameters and buffers take `dtype` as Module.to(dtype) would (None: each keeps its own).
    """
    made = {}

    def fresh(t, is_param):
        key = id(t)
        if key not in made:
            target = dtype if dtype is not None and t.is_floating_point() else t.dtype
            new = torch.empty(t.shape, dtype=target, device=device)
            if is_param:
                new = torch.nn.Parameter(new, requires_grad=t.requires_grad)
            made[key] = new
        return made[key]

    for module in model.modules():
        for name, p in list(module._parameters.items()):
            if p is not None:
                module._parameters[name] = fresh(p, True)
        for name, b in list(module._buffers.items()):
            if b is not None:
                module._buffers[name] = fresh(b, False)
    return model
