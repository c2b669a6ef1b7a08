"""The tracer's caches (its compiled fake CUDA device, its traces) follow $XDG_CACHE_HOME as the CLI's code cache and
CI's environments do: a fresh cache (CI's fresh-machine runs set XDG_CACHE_HOME) compiles the device again."""
import os

from vramfit_trace import fake_cuda
from vramfit_trace.cli import parse
from vramfit_trace.run import cache_path

CONFIGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "configs")


def test_caches_follow_xdg_cache_home_unless_moved(monkeypatch, tmp_path):
    for name in ("VRAMFIT_TORCH_EXTENSIONS", "VRAMFIT_TRACE_CACHE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    options = parse(["--hf-config", os.path.join(CONFIGS, "tiny-llama.json"), "--seq", "16"])
    assert os.path.dirname(fake_cuda.build_dir()) == str(tmp_path / "xdg" / "vramfit" / "torch-extensions")
    assert os.path.dirname(cache_path(options, {"torch": "x"})) == str(tmp_path / "xdg" / "vramfit" / "traces")
    monkeypatch.setenv("VRAMFIT_TORCH_EXTENSIONS", str(tmp_path / "ext"))
    monkeypatch.setenv("VRAMFIT_TRACE_CACHE", str(tmp_path / "traces"))
    assert os.path.dirname(fake_cuda.build_dir()) == str(tmp_path / "ext")
    assert os.path.dirname(cache_path(options, {"torch": "x"})) == str(tmp_path / "traces")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.delenv("VRAMFIT_TORCH_EXTENSIONS")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert os.path.dirname(fake_cuda.build_dir()) == str(tmp_path / "home" / ".cache" / "vramfit" / "torch-extensions")
