"""The tracer's one error: a line for the user and the exit status that goes with it (docs/trace-format.md)."""

# Exit statuses: 2 bad usage or input (as vramfit's own, DESIGN.md), 4 something to install, 5 the step failed.
BAD_INPUT = 2
MISSING = 4
FAILED = 5  # the model's step raised under the tracer


class TraceError(Exception):
    def __init__(self, message, status=BAD_INPUT):
        super().__init__(message)
        self.status = status


def missing(what, package):
    """What is missing and the pip command that installs it."""
    return TraceError(f"vramfit trace: {what} is not installed in this Python: pip install {package}", MISSING)


def failure_line(e):
    """The model's own exception as vramfit says it (exit FAILED): its type, its first line and where, no stack."""
    import os
    import traceback

    frames = traceback.extract_tb(e.__traceback__)
    where = f" ({os.path.basename(frames[-1].filename)}:{frames[-1].lineno})" if frames else ""
    first = str(e).splitlines()[0] if str(e) else ""
    return f"vramfit trace: the step failed under the tracer: {type(e).__name__}: {first}{where}"
