"""python -m vramfit_trace as vramfit runs it: a trace file in the documented form, one-line errors with a status."""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.dirname(HERE)
CONFIGS = os.path.join(HERE, "configs")


def tracer(*argv, cache):
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR, VRAMFIT_TRACE_CACHE=str(cache))
    return subprocess.run([sys.executable, "-m", "vramfit_trace", *argv], env=env, capture_output=True, text=True, timeout=300)


def test_bad_option_is_one_line_and_status_2(tmp_path):
    out = tracer("--hf-config", "x.json", "--seq", "zero", cache=tmp_path)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == ["--seq: 'zero' is not a positive integer"]


def test_unknown_model_type_is_one_line(tmp_path):
    config = tmp_path / "config.json"
    config.write_text('{"model_type": "no-such-model"}')
    out = tracer("--hf-config", str(config), cache=tmp_path)
    assert out.returncode == 2
    assert len(out.stderr.strip().splitlines()) == 1 and "no-such-model" in out.stderr


def test_tiny_llama_trace_is_affine_and_categorised(tmp_path):
    out_file = tmp_path / "trace.json"
    argv = ["--hf-config", os.path.join(CONFIGS, "tiny-llama.json"), "--seq", "16", "--out", str(out_file)]
    out = tracer(*argv, cache=tmp_path / "cache")
    assert out.returncode == 0, out.stderr
    trace = json.loads(out_file.read_text())
    assert trace["format"] == "vramfit-step-trace" and trace["version"] == 1
    assert trace["affine"] is True and trace["batches"] == [2, 3, 4]
    # What the trace cannot see, as src/plan/blasWorkspace.ts charges it on sm 9.0 (32 MiB per handle; training: the
    # Python thread's and autograd's), cuBLASLt sharing it; no context (the target's, charged by vramfit).
    assert trace["charged"] == {"cublasWorkspaceBytes": 32 * 2**20, "cublasWorkspaces": 2, "cublasLtWorkspaceBytes": 0}
    # hidden 64, 2 layers, vocab 256, untied: embed + head 2×256×64, per layer 4 attention (2 of them GQA-narrow) +
    # 3 MLP matrices + 2 norms, and the final norm.
    layer = 64 * 64 * 2 + 64 * 32 * 2 + 3 * 64 * 128 + 2 * 64
    assert trace["workload"]["parameterCount"] == 2 * 256 * 64 + 2 * layer + 64
    allocs = [e for e in trace["events"] if e[0] == "a"]
    gradients = sum(e[2] for e in allocs if e[5] == "gradients")
    # One fp32 gradient per parameter (each rounded to 512 B: a little more than 4 bytes a parameter), and AdamW's
    # two states of the same size each.
    assert 4 * trace["workload"]["parameterCount"] <= gradients < 4 * trace["workload"]["parameterCount"] + 512 * 30
    assert sum(e[2] for e in allocs if e[5] == "optimizerStates") == 2 * gradients
    assert any(e[3] > 0 for e in allocs if e[5] == "activations"), "activations grow with the batch"
    again = tracer(*argv, cache=tmp_path / "cache")
    assert "cached" in again.stderr and out_file.read_text() == json.dumps(trace, separators=(",", ":")) + "\n"
    # Answered from the cache before torch is imported: a torch that cannot be imported is never noticed.
    poison = tmp_path / "poison" / "torch"
    poison.mkdir(parents=True)
    (poison / "__init__.py").write_text("raise ImportError('the cached path imported torch')\n")
    env = dict(os.environ, PYTHONPATH=f"{poison.parent}:{PYTHON_DIR}", VRAMFIT_TRACE_CACHE=str(tmp_path / "cache"))
    cached = subprocess.run([sys.executable, "-m", "vramfit_trace", *argv], env=env, capture_output=True, text=True, timeout=120)
    assert cached.returncode == 0 and "cached" in cached.stderr, cached.stderr


def test_missing_torch_names_what_to_install(tmp_path):
    # -S: no site-packages, so no torch: what a Python without PyTorch sees.
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR, VRAMFIT_TRACE_CACHE=str(tmp_path))
    out = subprocess.run([sys.executable, "-S", "-m", "vramfit_trace", "--hf-config", "x.json"], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 4
    assert out.stderr.strip().splitlines() == ["vramfit trace: PyTorch (torch) is not installed in this Python: pip install torch"]


def test_batches_traced_in_forked_processes_equal_one_after_another(tmp_path):
    # run.py traces the three batches side by side (forked.py); VRAMFIT_TRACE_PROCESSES=1 traces them in turn.
    argv = ["--hf-config", os.path.join(CONFIGS, "tiny-llama.json"), "--seq", "16", "--precision", "amp", "--no-cache"]
    forked = tracer(*argv, "--out", str(tmp_path / "forked.json"), cache=tmp_path)
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR, VRAMFIT_TRACE_CACHE=str(tmp_path), VRAMFIT_TRACE_PROCESSES="1")
    serial = subprocess.run([sys.executable, "-m", "vramfit_trace", *argv, "--out", str(tmp_path / "serial.json")], env=env,
                            capture_output=True, text=True, timeout=300)
    assert forked.returncode == 0 and serial.returncode == 0, forked.stderr + serial.stderr
    assert (tmp_path / "forked.json").read_text() == (tmp_path / "serial.json").read_text()


def test_a_batch_failing_in_its_process_is_one_line_and_status_5(tmp_path):
    model = tmp_path / "model.py"
    model.write_text(
        "import torch\n"
        "def make(batch, device):\n"
        "    if batch == 3 and device != 'meta':\n"
        "        raise ValueError('no batch of three')\n"
        "    return {'model': torch.nn.Linear(8, 8), 'inputs': {'input': torch.zeros(batch, 8, device=device)}}\n")
    out = tracer("--torch", f"{model}:make", "--no-cache", cache=tmp_path)
    assert out.returncode == 5
    assert out.stderr.strip().splitlines() == ["vramfit trace: the step failed under the tracer: ValueError: no batch of three (model.py:4)"]
