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


def trace_batch(build_workload, options, batch, device="cuda", fake=True, live_bytes=None):
    """One batch's events (trace_batches); the tests' comparison with a real CPU step uses it."""
    traced, workload = trace_batches(build_workload, options, [batch], device, fake, live_bytes)
    events, recorder = traced[0]
    return events, recorder, workload


def trace_batches(build_workload, options, batches, device="cuda", fake=True, live_bytes=None, each=None):
    """The step's events at each batch: [kind, id, bytes, phase, op, category] for allocations, [kind, id, phase, op]
    for frees; with each its recorder (the op-boundary series), and the workload. `build_workload(device)` makes the
    workload with its parameters on the device. Before the first traced step the optimizer steps once on empty
    gradients, so its state exists as after a real step, then zero_grad(set_to_none=True); each traced step starts
    from there (it ends with zero_grad too). `each(trace_one, batches)`, when given, runs trace_one(batch) -> events
    for every batch its own way (run.py: each in a forked process); the recorders then stay where they ran (None)."""
    mode = fake_mode() if fake else None
    traced = []
    with (mode if mode is not None else _null()):
        workload = build_workload(device)
        for name, module in workload.model.named_modules():
            module._vramfit_name = name  # for the attention log's module names
        step = Step(workload, options, device)
        if step.optimizer is not None:
            with torch.no_grad():
                for p in workload.model.parameters():
                    if p.requires_grad:
                        p.grad = torch.empty_like(p)
            step.optimizer.step()
            step.optimizer.zero_grad(set_to_none=True)
        if each is not None:
            events = each(lambda batch: trace_step(step, workload, options, batch, device, live_bytes)[0], batches)
            return [(e, None) for e in events], workload
        for batch in batches:
            traced.append(trace_step(step, workload, options, batch, device, live_bytes))
    return traced, workload


def trace_step(step, workload, options, batch, device, live_bytes):
    recorder = Recorder(device.split(":")[0], live_bytes)
    gradients = set()

    def set_phase(i):
        if i == 3:  # backward ended: the parameters' .grad are the gradients
            for p in workload.model.parameters():
                if p.grad is not None:
                    gradients.add(recorder.track(p.grad, "python"))
        recorder.phase = i

    step.set_phase = set_phase
    resident = {}
    for p in list(workload.model.parameters()) + list(workload.model.buffers()):
        resident[recorder.track(p, "resident")] = "parameters"
    for t in optimizer_state_tensors(step.optimizer):
        resident.setdefault(recorder.track(t, "resident"), "optimizerStates")
    resident.pop(None, None)  # host tensors (Adam's step counts) and empty ones are not tracked
    recorder.boundaries.append(("resident", recorder.live_bytes()))
    with recorder:
        kept = step.run(batch)
    recorder.phase = 0 if options.mode == "infer" else 4
    cache = kv_cache_ids(kept, recorder) if kept is not None else set()
    del kept
    phases = INFER_PHASES if options.mode == "infer" else TRAIN_PHASES
    return categorize(recorder.events, resident, gradients, cache, len(phases)), recorder


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
