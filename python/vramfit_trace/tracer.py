"""Traces one step at one batch under FakeTensorMode on a fake CUDA device: the events and their categories."""
import torch

from .fake_cuda import fake_mode

from .recorder import Recorder
from .step import INFER_PHASES, TRAIN_PHASES, Step


def storages_of(tensors):
    return [t for t in tensors if isinstance(t, torch.Tensor)]


def optimizer_state_tensors(optimizer):
    if optimizer is None:
        return []
    return [v for state in optimizer.state.values() for v in state.values() if isinstance(v, torch.Tensor)]


def trace_batch(build_workload, options, batch, device="cuda", fake=True, live_bytes=None, on_ready=None):
    """The step's events at `batch`: [kind, id, bytes, phase, op, category] for allocations, [kind, id, phase, op]
    for frees; plus the recorder (its op-boundary series) and the workload. `build_workload(device)` makes the
    workload with its parameters on the device. The step runs once untraced (the optimizer's state appears) and
    once traced, after zero_grad(set_to_none=True)."""
    mode = fake_mode() if fake else None
    with (mode if mode is not None else _null()):
        workload = build_workload(device)
        for name, module in workload.model.named_modules():
            module._vramfit_name = name  # for the attention log's module names
        recorder = Recorder(device.split(":")[0], live_bytes)
        gradients = set()

        def set_phase(i):
            if i == 3 and recorder.recording:  # backward ended: the parameters' .grad are the gradients
                for p in workload.model.parameters():
                    if p.grad is not None:
                        ident = recorder.track(p.grad, "python")
                        gradients.add(ident)
            recorder.phase = i

        step = Step(workload, options, device, set_phase)
        if options.mode == "train":
            step.run(batch)  # the optimizer's state now exists
        if on_ready is not None:
            on_ready()
        recorder.phase = 0
        resident = {}
        for p in list(workload.model.parameters()) + list(workload.model.buffers()):
            resident[recorder.track(p, "resident")] = "parameters"
        for t in optimizer_state_tensors(step.optimizer):
            resident.setdefault(recorder.track(t, "resident"), "optimizerStates")
        resident.pop(None, None)  # host tensors (Adam's step counts) and empty ones are not tracked
        recorder.boundaries.append(("resident", recorder.live_bytes()))
        recorder.recording = True
        with recorder:
            kept = step.run(batch)
        recorder.phase = 0 if options.mode == "infer" else 4
        cache = kv_cache_ids(kept, recorder) if kept is not None else set()
        del kept
    phases = INFER_PHASES if options.mode == "infer" else TRAIN_PHASES
    return categorize(recorder.events, resident, gradients, cache, len(phases)), recorder, workload


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def kv_cache_ids(output, recorder):
    cache = getattr(output, "past_key_values", None)
    ids = set()
    if cache is None:
        return ids
    tensors = []
    for layer in getattr(cache, "layers", []) or []:
        tensors += [getattr(layer, "keys", None), getattr(layer, "values", None)]
    if not tensors and isinstance(cache, (tuple, list)):
        tensors = [t for pair in cache for t in pair]
    for t in storages_of(tensors):
        key = t.untyped_storage()._cdata
        if key in recorder.live:
            ids.add(recorder.live[key][0])
    return ids


def categorize(events, resident, gradients, cache, phase_count):
    """Each allocation's category (docs/trace-format.md): resident ones as found, then gradients, the KV cache,
    activations (made in forward or loss and alive past it), and workspace for everything else."""
    freed_in = {e[1]: e[2] for e in events if e[0] == "f"}
    last_forward = 1 if phase_count > 1 else 0  # the loss phase in training; inference has only forward
    out = []
    for e in events:
        if e[0] == "a":
            ident, phase = e[1], e[3]
            if ident in resident:
                category = resident[ident]
            elif ident in gradients:
                category = "gradients"
            elif ident in cache:
                category = "kvCache"
            elif phase <= last_forward and freed_in.get(ident, phase_count) > last_forward:
                category = "activations"
            else:
                category = "workspace"
            out.append(["a", ident, e[2], phase, e[4], category])
        else:
            out.append(e)
    return out
