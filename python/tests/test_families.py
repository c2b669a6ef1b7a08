"""Every Hugging Face family vramfit's README lists, and falcon, olmo2, t5 and deepseek_v3, trace end to end (issue 19):
a training step at their published sizes (configs/families/SOURCES.md), two layers deep, is recorded with its
parameters, gradients, AdamW states and activations."""
import json
import os

import pytest

from vramfit_trace.cli import parse
from vramfit_trace.sources import resolve
from vramfit_trace.tracer import trace_batch

FAMILIES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "configs", "families")
NAMES = sorted(f[:-5] for f in os.listdir(FAMILIES) if f.endswith(".json"))
MOE = ("mixtral", "deepseek_v3")
LAYER_KEYS = ("num_hidden_layers", "n_layer", "num_layers", "num_decoder_layers")


def shallow(name, tmp_path):
    config = json.load(open(os.path.join(FAMILIES, name + ".json")))
    for key in LAYER_KEYS:
        if key in config:
            config[key] = 2
    if name == "deepseek_v3":
        config.update(first_k_dense_replace=1, n_routed_experts=8, n_group=2, topk_group=1)
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(config))
    return str(path)


@pytest.mark.parametrize("name", NAMES)
def test_family_traces(name, tmp_path):
    # The mixture-of-experts layers run torch._grouped_mm (transformers/integrations/moe.py), whose CUDA kernel takes
    # bf16 only: MoE models train in bf16.
    precision = "bf16" if name in MOE else "fp32"
    options = parse(["--hf-config", shallow(name, tmp_path), "--seq", "64", "--precision", precision])
    build, _env = resolve(options)
    events, _recorder, workload = trace_batch(build, options, 2)
    total, trainable = workload.counts()
    assert total == trainable > 0
    allocs = [e for e in events if e[0] == "a"]
    by = {}
    for e in allocs:
        by[e[5]] = by.get(e[5], 0) + e[2]
    assert by["gradients"] >= (2 if name in MOE else 4) * total  # a gradient per parameter, each rounded up to 512 B
    assert by["optimizerStates"] == 2 * by["gradients"]
    assert by["activations"] > 0
