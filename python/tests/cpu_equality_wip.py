"""The fake trace equals a real CPU step's allocations at every op boundary (issue 19): the same step runs on fake
CUDA under the tracer and for real on the CPU, where scripts/reference/step-peak-shim.c counts every storage
PyTorch's CPU allocator takes (rounded to 512 B, scalars left out as it documents)."""
import json
import os
import subprocess
import sys

import pytest

from vramfit_trace.cli import parse
from vramfit_trace.sources import resolve
from vramfit_trace.tracer import trace_batch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SHIM = os.path.join(ROOT, "scripts", "reference", "step-peak-shim.c")
CONFIGS = os.path.join(HERE, "configs")


@pytest.fixture(scope="session")
def shim(tmp_path_factory):
    library = str(tmp_path_factory.mktemp("shim") / "step-peak-shim.so")
    subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-o", library, SHIM, "-ldl", "-lpthread"], check=True)
    return library


def real_cpu_boundaries(shim, argv, batch):
    env = dict(os.environ, LD_PRELOAD=shim, VRAMFIT_STEP_PEAK_SHIM=shim, OMP_NUM_THREADS="1")
    out = subprocess.run([sys.executable, os.path.join(HERE, "cpu_reference.py"), json.dumps(argv), str(batch)],
                         env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout)


def fake_boundaries(argv, batch):
    options = parse(argv)
    build, _env = resolve(options)
    _events, recorder, _workload = trace_batch(build, options, batch)
    return recorder.boundaries


def from_resident(series):
    """Live bytes after each op, counted from the step's start (the CPU process holds other things before)."""
    base = next(live for op, live in series if op == "resident")
    start = [op for op, _ in series].index("resident")
    return [(op, live - base) for op, live in series[start:]]


CASES = [
    ("decoder LM (llama)", ["--hf-config", os.path.join(CONFIGS, "tiny-llama.json"), "--seq", "16"]),
    ("decoder LM (llama), checkpointing", ["--hf-config", os.path.join(CONFIGS, "tiny-llama.json"), "--seq", "16", "--checkpointing"]),
    ("encoder (bert)", ["--hf-config", os.path.join(CONFIGS, "tiny-bert.json"), "--seq", "16"]),
    ("encoder-decoder (t5)", ["--hf-config", os.path.join(CONFIGS, "tiny-t5.json"), "--seq", "16"]),
    ("ViT", ["--hf-config", os.path.join(CONFIGS, "tiny-vit.json")]),
    ("ViT, checkpointing", ["--hf-config", os.path.join(CONFIGS, "tiny-vit.json"), "--checkpointing"]),
    ("CNN (resnet)", ["--hf-config", os.path.join(CONFIGS, "tiny-resnet.json"), "--image", "32"]),
]


@pytest.mark.parametrize("name,argv", CASES, ids=[c[0] for c in CASES])
def test_fake_trace_equals_real_cpu_step(shim, name, argv):
    argv = argv + ["--attention", "eager", "--optimizer", "adamw", "--optimizer-impl", "foreach"]
    fake = from_resident(fake_boundaries(argv, 2))
    real = from_resident(real_cpu_boundaries(shim, argv, 2))
    assert [op for op, _ in fake] == [op for op, _ in real], "the two steps ran different ops"
    first_difference = next(((k, f, r) for k, (f, r) in enumerate(zip(fake, real)) if f != r), None)
    assert first_difference is None, f"{name}: live bytes differ first after op {first_difference}"
    assert max(live for _, live in fake) > 0
