"""The fake trace equals a real CPU step's allocations at every op boundary (issue 19): the same step runs on fake
CUDA under the tracer and for real on the CPU, where scripts/reference/step-peak-shim.c counts every storage
PyTorch's CPU allocator takes (rounded to 512 B, scalars left out as it documents)."""
import difflib
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


def real_cpu_boundaries(shim, cases, batch):
    """Each case's real CPU step, all in one process under the shim (importing transformers once)."""
    env = dict(os.environ, LD_PRELOAD=shim, VRAMFIT_STEP_PEAK_SHIM=shim, OMP_NUM_THREADS="1")
    out = subprocess.run([sys.executable, os.path.join(HERE, "cpu_reference.py"), json.dumps(cases), str(batch)],
                         env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    return [[tuple(b) for b in series] for series in json.loads(out.stdout)]


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
    # torch.utils.checkpoint around each block (sources.blocks_of: torchvision's eight BasicBlocks).
    ("CNN (torchvision resnet18), checkpointing", ["--torchvision", "resnet18", "--image", "32", "--checkpointing"]),
]


# Ops one side runs and the other does not, for a reason that is no memory: `torch.tensor(x, device="cuda")` makes
# its value on the host and copies it (_to_copy of a scalar, which the CPU step does not need).
HOST_COPIES = {"_to_copy", "lift_fresh", "lift_fresh_copy"}


def compare(fake, real):
    """The first op boundary where the live bytes differ (None if none), matching the two op sequences."""
    matcher = difflib.SequenceMatcher(a=[op for op, _ in fake], b=[op for op, _ in real], autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for k in range(i2 - i1):
                if fake[i1 + k] != real[j1 + k]:
                    return f"after op {i1 + k}: fake {fake[i1 + k]}, real {real[j1 + k]}"
        else:
            extra = {op for op, _ in fake[i1:i2]} | {op for op, _ in real[j1:j2]}
            if not extra <= HOST_COPIES:
                return f"ops differ at {i1}: fake {fake[i1:i2][:5]}, real {real[j1:j2][:5]}"
    return None


COMMON = ["--attention", "eager", "--optimizer", "adamw", "--optimizer-impl", "foreach"]
BATCH = 2


@pytest.fixture(scope="session")
def real_steps(shim):
    return dict(zip([c[0] for c in CASES], real_cpu_boundaries(shim, [argv + COMMON for _, argv in CASES], BATCH)))


@pytest.mark.parametrize("name,argv", CASES, ids=[c[0] for c in CASES])
def test_fake_trace_equals_real_cpu_step(real_steps, name, argv):
    fake = from_resident(fake_boundaries(argv + COMMON, BATCH))
    real = from_resident(real_steps[name])
    assert compare(fake, real) is None, f"{name}: {compare(fake, real)}"
    assert len(fake) > 100 and max(live for _, live in fake) > 0
