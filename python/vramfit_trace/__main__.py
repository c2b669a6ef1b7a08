"""`python -m vramfit_trace`: the command line behind `vramfit trace`; one line and a status on any error."""
import sys

from .errors import FAILED, TraceError, failure_line


def main(argv):
    # Nothing here imports torch: run() loads the fake CUDA device first where it traces (fake_cuda.py says why), and
    # answers a cached trace without torch.
    try:
        from .cli import parse

        options = parse(argv)
        from .run import run

        return run(options)
    except TraceError as e:
        print(str(e), file=sys.stderr)
        return e.status
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # the model's own code failed under fake tensors: one line, never a stack trace
        print(failure_line(e), file=sys.stderr)
        return FAILED


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
