"""The batches traced in forked processes (vramfit_trace/forked.py), in a process where that cannot work: after a
backward has run here (as in this test session), autograd refuses backward in a forked child, and the tracer traces
the batches itself instead, writing the same file (test_cli.py compares forked and serial files in fresh processes)."""
import os

from vramfit_trace import forked
from vramfit_trace.cli import parse
from vramfit_trace.run import run
from vramfit_trace.sources import resolve
from vramfit_trace.tracer import trace_batch

TINY_LLAMA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "configs", "tiny-llama.json")


def test_after_a_backward_in_this_process_the_batches_are_traced_here(tmp_path, monkeypatch):
    argv = ["--hf-config", TINY_LLAMA, "--seq", "16", "--no-cache"]
    options = parse(argv)
    trace_batch(resolve(options)[0], options, 2)  # a backward here: autograd's device threads start
    monkeypatch.setenv("VRAMFIT_TRACE_CACHE", str(tmp_path))
    answers = []
    real = forked.each_in_a_child
    monkeypatch.setattr(forked, "each_in_a_child", lambda *a, **k: answers.append(real(*a, **k)) or answers[-1])
    assert run(parse([*argv, "--out", str(tmp_path / "here.json")])) == 0
    assert answers == [None]  # the children said they could not run backward
    monkeypatch.setenv("VRAMFIT_TRACE_PROCESSES", "1")
    assert run(parse([*argv, "--out", str(tmp_path / "serial.json")])) == 0
    assert (tmp_path / "here.json").read_text() == (tmp_path / "serial.json").read_text()
