"""Fake CUDA devices for a CPU-only PyTorch: compiles fake_cuda.cpp once, loads it before torch, answers torch.cuda.

A CPU build refuses autograd on FakeTensorMode's `cuda` tensors ("PyTorch is not linked with support for cuda
devices"): it has no device guard and no CUDA hooks. fake_cuda.cpp registers both. It must be loaded before
`import torch`, because at::detail::getCUDAHooks() asks its registry once and keeps the answer; so it is compiled
in a child process (torch.utils.cpp_extension needs torch imported) and loaded here with ctypes first.
A CUDA build of torch has its own and needs none of this.
"""
import hashlib
import importlib.metadata
import importlib.util
import os
import subprocess
import sys

from .cache_dir import cache_dir
from .errors import TraceError, missing

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_cuda.cpp")
NAME = "vramfit_fake_cuda"


def torch_lib_dir():
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        raise missing("PyTorch (torch)", "torch")
    return os.path.join(spec.submodule_search_locations[0], "lib")


def is_cpu_build():
    return not os.path.exists(os.path.join(torch_lib_dir(), "libtorch_cuda.so"))


def build_dir():
    """$XDG_CACHE_HOME (or ~/.cache)/vramfit/torch-extensions/<torch version>-<source hash>: one build per torch and
    per source."""
    with open(SOURCE, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()[:12]
    version = importlib.metadata.version("torch")
    root = os.environ.get("VRAMFIT_TORCH_EXTENSIONS") or cache_dir("torch-extensions")
    return os.path.join(root, f"{version}-{digest}")


def library_path():
    return os.path.join(build_dir(), NAME + ".so")


def compile_extension():
    """Builds the library in a child process (it imports torch, which this process must not do yet)."""
    directory = build_dir()
    os.makedirs(directory, exist_ok=True)
    code = (
        "import sys\nfrom torch.utils.cpp_extension import load\n"
        f"load(name={NAME!r}, sources=[{SOURCE!r}], build_directory={directory!r}, is_python_module=False, "
        "extra_cflags=['-O1'], verbose=False)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if result.returncode != 0 or not os.path.exists(library_path()):
        text = result.stderr + result.stdout
        if "ninja" in text.lower() and "required" in text.lower():
            raise missing("ninja (to compile the fake CUDA device)", "ninja")
        if "c++: not found" in text or "No such file or directory: 'c++'" in text or "command 'c++'" in text:
            raise TraceError("vramfit trace: a C++ compiler is needed to build the fake CUDA device once: install g++ (apt-get install g++)", 4)
        last = [line for line in text.splitlines() if "error" in line.lower()][-1:] or text.splitlines()[-1:]
        raise TraceError(f"vramfit trace: compiling the fake CUDA device failed: {last[0] if last else 'no output'}", 4)


def preload():
    """Loads the fake CUDA device into this process; must run before `import torch`. Returns the ctypes handle."""
    import ctypes

    if "torch" in sys.modules:
        raise RuntimeError("vramfit_trace.fake_cuda.preload() must run before torch is imported")
    if not is_cpu_build():
        return None
    if not os.path.exists(library_path()):
        compile_extension()
    lib_dir = torch_lib_dir()
    for name in ("libc10.so", "libtorch_cpu.so"):
        ctypes.CDLL(os.path.join(lib_dir, name), mode=ctypes.RTLD_GLOBAL)
    return ctypes.CDLL(library_path(), mode=ctypes.RTLD_GLOBAL)


def answer_torch_cuda(capability):
    """torch.cuda's Python answers for one device of the given compute capability (autocast and SDPA ask them)."""
    import torch

    major, minor = capability
    torch.cuda.is_available = lambda: True
    torch.cuda.device_count = lambda: 1
    torch.cuda.current_device = lambda: 0
    torch.cuda._lazy_init = lambda: None
    torch.cuda.is_initialized = lambda: True
    torch.cuda.get_device_capability = lambda device=None: (major, minor)
    # bf16 needs sm_80 (torch/cuda/__init__.py is_bf16_supported); below it autocast refuses bf16 as CUDA would.
    torch.cuda.is_bf16_supported = lambda including_emulation=True: major >= 8
    claim_cuda_kernels()


_library = None


def claim_cuda_kernels():
    """Ops with a CPU kernel and a CompositeImplicitAutograd one (silu_backward, mish_backward): with no CUDA kernel
    registered, the CPU build's dispatcher sends CUDA tensors through the composite decomposition (sigmoid, fill_, sub_,
    mul: temporaries a GPU's single kernel never makes). A CUDA kernel registered for each restores the op as the GPU
    sees it; it never runs, FakeTensorMode answers first (the Python key)."""
    global _library
    import torch

    if _library is not None or not is_cpu_build():
        return
    _library = torch.library.Library("aten", "IMPL")

    def never(*_args, **_kwargs):
        raise RuntimeError("vramfit's fake CUDA device runs no kernels (only fake tensors reach CUDA)")

    has = torch._C._dispatch_has_kernel_for_dispatch_key
    for op in torch._C._dispatch_get_all_op_names():
        if op.startswith("aten::") and has(op, "CPU") and has(op, "CompositeImplicitAutograd") and not has(op, "CUDA"):
            _library.impl(op[len("aten::"):], never, "CUDA")



def fake_mode():
    """FakeTensorMode that never runs a real CUDA kernel: its constant propagation (torch.tensor(0.0, device="cuda"))
    would, since torch.cuda.is_available() now says yes; `avoid_device_init` is its own switch for a missing device."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    import torch

    local_scalar = torch.ops.aten._local_scalar_dense.default

    class FakeCudaTensorMode(FakeTensorMode):
        @property
        def avoid_device_init(self):
            return True

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            # A Python value read from a device tensor (`if mask.all():`, `.item()`): a real step reads the data,
            # fake tensors have none (but for constants: Adam's step count). The traced batch is synthetic (no padding, every mask all-true), so a bool reads
            # True, as it would on the GPU; a number reads 0 (a count that shapes tensors makes the trace non-affine,
            # which the fit then reports).
            if func is local_scalar and getattr(args[0], "constant", None) is None:  # constants answer themselves
                return True if args[0].dtype == torch.bool else 0
            return super().__torch_dispatch__(func, types, args, kwargs)

    return FakeCudaTensorMode(allow_non_fake_inputs=True)
