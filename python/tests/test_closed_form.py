"""A 7B trace's optimizer-step peak equals its closed form (issue 19): fp32 parameters, gradients, AdamW's two states
and foreach Adam's `_foreach_sqrt` copy of the second moments (torch/optim/adam.py, _multi_tensor_adam:
`exp_avg_sq_sqrt = torch._foreach_sqrt(device_exp_avg_sqs)`), 4 bytes a parameter each: 20 bytes a parameter."""
import os

from vramfit_trace.cli import parse
from vramfit_trace.sources import resolve
from vramfit_trace.tracer import trace_batch

CONFIGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "configs")


def phase_peaks(events, phases):
    sizes, live, peaks = {}, 0, [0] * phases
    for e in events:
        if e[0] == "a":
            sizes[e[1]] = e[2]
            live += e[2]
            peaks[e[3]] = max(peaks[e[3]], live)
        else:
            live -= sizes.pop(e[1])
            peaks[e[2]] = max(peaks[e[2]], live)
    return peaks


def test_llama_2_7b_optimizer_peak_is_20_bytes_a_parameter():
    options = parse(["--hf-config", os.path.join(CONFIGS, "llama-2-7b.json"), "--seq", "2048",
                     "--optimizer", "adamw", "--optimizer-impl", "foreach"])
    build, _env = resolve(options)
    events, _recorder, workload = trace_batch(build, options, 1)
    parameters, _trainable = workload.counts()
    assert parameters == 6_738_415_616  # meta-llama/Llama-2-7b-hf, as published
    peak = phase_peaks(events, 5)[3]
    # Each of the 291 tensors rounds up to 512 B in each of the five copies; the batch's input ids and labels
    # (2 × 2048 int64) stay alive: at most 1 MiB over the closed form.
    assert 20 * parameters <= peak <= 20 * parameters + 2**20
