"""The traced batches at once, each in a process forked after the model is built and the optimizer's state made.

The batches share nothing once the step starts (each begins from the same state: zero_grad(set_to_none=True)), so
the three traces the fit needs run side by side: on an idle machine the tracing takes about the time of one batch
instead of three (CPU time is the same), and on a loaded one the three processes get three shares of it. Nothing has
started a thread when they fork (autograd's device threads start at the first backward, and fake tensors run no
kernels). VRAMFIT_TRACE_PROCESSES=1, or a platform without fork, traces them one after another instead; so does a
process that ran a backward before (a test suite): autograd then refuses backward in a forked child
(torch/csrc/autograd/engine.cpp, track_bad_autograd_forks), which the children report and each_in_a_child answers None.
"""
import os
import pickle

from .errors import FAILED, TraceError, failure_line

# What autograd raises in a child forked after its device threads started (engine.cpp, "Autograd-and-Fork").
AUTOGRAD_AFTER_FORK = "Unable to handle autograd's threading in combination with fork-based multiprocessing"


def wanted():
    return hasattr(os, "fork") and os.environ.get("VRAMFIT_TRACE_PROCESSES", "") != "1"


def each_in_a_child(trace_one, batches, keep=lambda: None):
    """[trace_one(batch) for batch in batches], each run in a forked child; with the first child's keep() (what the
    child recorded on the side, e.g. the attention log's entries). A child's error is raised here, in one line.
    None when autograd cannot run in a child of this process: the caller traces the batches itself."""
    children = []
    for batch in batches:
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: trace, send, leave without running the parent's exit handlers or flushing its buffers
            os.close(read)
            try:
                result = ("ok", trace_one(batch), keep())
            except TraceError as e:
                result = ("error", str(e), e.status)
            except BaseException as e:  # noqa: BLE001 - the model's own failure, said as __main__ says it
                result = ("unforkable",) if AUTOGRAD_AFTER_FORK in str(e) else ("error", failure_line(e), FAILED)
            try:
                with os.fdopen(write, "wb") as f:
                    pickle.dump(result, f, protocol=pickle.HIGHEST_PROTOCOL)
            finally:
                os._exit(0)
        os.close(write)
        children.append((pid, read))
    results, failure, unforkable = [], None, False
    for pid, read in children:  # read each to its end before waiting: a child blocks writing until it is read
        with os.fdopen(read, "rb") as f:
            data = f.read()
        _pid, status = os.waitpid(pid, 0)
        if not data:
            failure = failure or TraceError(f"vramfit trace: the process tracing a batch ended without a result (wait status {status})", FAILED)
            continue
        result = pickle.loads(data)
        if result[0] == "unforkable":
            unforkable = True
        elif result[0] == "error":
            failure = failure or TraceError(result[1], result[2])
        else:
            results.append(result)
    if unforkable:
        return None
    if failure is not None:
        raise failure
    return [r[1] for r in results], results[0][2]
