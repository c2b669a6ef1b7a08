"""Where the tracer keeps what it makes once: $XDG_CACHE_HOME/vramfit/NAME, else ~/.cache/vramfit/NAME, as the CLI's
code cache and CI's environments do (docs/install.md, "Files vramfit writes outside the package")."""
import os


def cache_dir(name):
    return os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "vramfit", name)
