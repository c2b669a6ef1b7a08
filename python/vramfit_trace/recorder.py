"""Records a step's device storages as they appear and die: the shape of torch/distributed/_tools/mem_tracker.py.

A TorchDispatchMode sees every aten op below autograd (forward, backward, the optimizer); each output's untyped
storage that is new and on the traced device is an allocation of its nbytes; a weak reference on the storage
object reports its death (PyTorch keeps one Python object per live storage, so the reference dies with the
storage). Sizes are storage bytes; the allocator's 512 B rounding is applied by whoever replays them.
"""
import weakref

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten


def comparable(nbytes):
    return 0 if nbytes <= 8 else -(-nbytes // 512) * 512


class Recorder(TorchDispatchMode):
    """Allocation and free events, with the op and phase of each, and the live bytes after every op."""

    def __init__(self, device_type, live_bytes=None):
        super().__init__()
        self.device_type = device_type
        self.phase = 0
        self.op = "python"
        self.events = []  # ["a", id, bytes, phase, op] / ["f", id, phase, op]
        self.live = {}  # storage key -> (id, bytes, weakref)
        self.boundaries = []  # (op, live bytes after it): the op-boundary series the tests compare
        self.live_total = 0
        # What CPU measurement can compare (scripts/reference/step-peak-shim.c): each storage rounded up to 512 B,
        # scalars of 8 bytes or less left out.
        self.live_comparable = 0
        self.next_id = 0
        self.depth = 0  # ops nested in the op being run
        # What counts as live for the boundary series: this recorder's own count, or a measured one (the CPU shim).
        self.live_bytes = live_bytes or (lambda: self.live_comparable)

    def track(self, tensor, op):
        """Records the tensor's storage if it is new on the device; returns its id (None if not tracked)."""
        if not isinstance(tensor, torch.Tensor) or tensor.device.type != self.device_type:
            return None
        storage = tensor.untyped_storage()
        key = storage._cdata
        known = self.live.get(key)
        if known is not None:
            return known[0]
        nbytes = storage.nbytes()
        if nbytes == 0:
            return None  # the caching allocator returns no block for 0 bytes
        ident = self.next_id
        self.next_id += 1
        self.events.append(["a", ident, nbytes, self.phase, op])
        self.live_total += nbytes
        self.live_comparable += comparable(nbytes)
        self.live[key] = (ident, nbytes, weakref.ref(storage, lambda _ref, key=key: self.died(key)))
        return ident

    def died(self, key):
        ident, nbytes, _ref = self.live.pop(key)
        self.live_total -= nbytes
        self.live_comparable -= comparable(nbytes)
        self.events.append(["f", ident, self.phase, self.op])

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func.namespace == "prim":  # metadata queries (prim::device) that fake tensors route through dispatch
            return func(*args, **(kwargs or {}))
        if self.depth:
            # Inside another op: a fake kernel decomposed it (silu_backward into sigmoid, fill_, sub_, mul); the GPU
            # runs one kernel, so only the outer op's outputs are allocations.
            return func(*args, **(kwargs or {}))
        name = func.overloadpacket.__name__
        self.op = "aten::" + name
        self.depth += 1
        try:
            out = func(*args, **(kwargs or {}))
        finally:
            self.depth -= 1
        for t in tree_flatten(out)[0]:
            self.track(t, self.op)
        # An in-place op (`x.resize_`, `set_`) may swap a tensor's storage: its arguments are looked at too.
        if name.endswith("_") or name in ("set_", "resize_"):
            for t in tree_flatten((args, kwargs))[0]:
                self.track(t, self.op)
        self.op = "python"
        self.boundaries.append((name, self.live_bytes()))
        return out
