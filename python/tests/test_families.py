"""Issue 19's "done when": `vramfit trace --hf-config` works for every family vramfit's README lists and for falcon,
olmo2, t5 and deepseek_v3, and `vramfit batch --trace` answers for each.

Each family's published config (configs/families/, SOURCES.md) cut to two layers and small sizes
(configs/families-small/, made by `node scripts/trace-families.mjs --write-configs`) is traced as `vramfit trace`
traces it (the tracer's command line, parsed and run in this process: one import of torch for all fifteen, through
the trace cache, so a second run reads the traces back), then answered by the built CLI's `batch --trace`. The table
of the same runs is docs/trace-families.md (`node scripts/trace-families.mjs`)."""
import json
import os
import shutil
import subprocess

import pytest

from vramfit_trace.cli import parse
from vramfit_trace.run import run

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SMALL = os.path.join(HERE, "configs", "families-small")
RUNS = json.load(open(os.path.join(SMALL, "runs.json")))
NAMES = sorted(f[:-5] for f in os.listdir(os.path.join(HERE, "configs", "families")) if f.endswith(".json"))
CLI = os.path.join(ROOT, "bin", "vramfit.js")
NODE = shutil.which("node")
BUILT = os.path.exists(os.path.join(ROOT, "dist", "cli", "vramfit.cjs"))
# The causal LMs vramfit models: the tracer trains them with the head vramfit plans (BERT trains as a masked LM and ViT
# as a classifier, where vramfit's own model reads the bare encoder with its pooler).
SAME_HEAD = [n for n in RUNS["modelled"] if n not in ("bert", "vit")]


def run_options(name):
    precision = "bf16" if name in RUNS["bf16Only"] else "fp32"
    seq = [] if name in RUNS["images"] else ["--seq", str(RUNS["seq"])]
    return [*seq, "--precision", precision, "--optimizer", "adamw", "--optimizer-impl", "foreach"]


def vramfit(*argv):
    env = dict(os.environ, VRAMFIT_CUDA_LIBRARY="/nonexistent/libcuda.so.1")  # no device: the analytic answer
    out = subprocess.run([NODE, CLI, *argv], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_every_family_has_a_small_config():
    assert sorted(f[:-5] for f in os.listdir(SMALL) if f.endswith(".json") and f != "runs.json") == NAMES
    assert len(NAMES) == 15 and set(RUNS["modelled"]) <= set(NAMES)


@pytest.mark.skipif(NODE is None or not BUILT, reason="needs node and the built CLI (npm run build)")
@pytest.mark.parametrize("name", NAMES)
def test_family_traces_and_batch_trace_answers(name, tmp_path):
    config = os.path.join(SMALL, name + ".json")
    out = tmp_path / "trace.json"
    assert run(parse(["--hf-config", config, *run_options(name), "--out", str(out)])) == 0
    trace = json.loads(out.read_text())
    assert trace["workload"]["source"] == "hf-config"
    assert trace["affine"], trace.get("affineReason")
    total = trace["workload"]["parameterCount"]
    assert total == trace["workload"]["trainableParameterCount"] > 0
    by = {}
    for e in trace["events"]:
        if e[0] == "a":
            by[e[5]] = by.get(e[5], 0) + e[2]
    # A gradient per parameter in the weights' dtype (each rounded up to 512 B), AdamW's two states the same size.
    assert by["gradients"] >= (2 if name in RUNS["bf16Only"] else 4) * total
    assert by["optimizerStates"] == 2 * by["gradients"]
    assert sum(e[3] for e in trace["events"] if e[0] == "a" and e[5] == "activations") > 0, "activations grow with the batch"

    answer = vramfit("batch", "--trace", str(out), "--memory", RUNS["budget"], "--json")
    assert answer["batchSize"] >= 1
    assert answer["bytesAtBatch"] <= answer["budgetBytes"]
    # The traced step itself (every resident storage, a gradient and two states each) at the answer's batch fits.
    assert by["parameters"] + 3 * by["gradients"] < answer["bytesAtBatch"]
    if name in SAME_HEAD:
        # An independent count: vramfit's own reading of the same config (src/workload/hfConfig.ts) against the
        # parameters transformers built.
        plan = vramfit("plan", "--hf-config", config, *run_options(name), "--batch", "1", "--json")
        assert plan["parameterCount"] == total
