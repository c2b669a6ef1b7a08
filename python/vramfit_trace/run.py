"""Traces the step at three batches, fits it, writes the trace file (docs/trace-format.md); caches by inputs.

A trace asked for again is answered from the cache before torch is imported (the key needs only the packages'
versions, read from their metadata): seconds of imports saved where the step itself was already traced."""
import hashlib
import importlib.metadata
import json
import os
import platform
import sys

from . import TRACER_VERSION
from .cache_dir import cache_dir
from .errors import TraceError, missing

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def import_torch():
    try:
        import torch  # noqa: F401
    except ImportError:
        raise missing("PyTorch (torch)", "torch") from None
    return torch


def source_text(options):
    """The bytes the trace depends on beyond the options: the config or the user's file."""
    path = options.hf_config or (options.torch.rsplit(":", 1)[0] if options.torch else None)
    if path is None:
        return b""
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        flag = "--hf-config" if options.hf_config else "--torch"
        raise TraceError(f"{flag}: cannot read {path}: {e.strerror}") from None


def tracer_digest():
    h = hashlib.sha256()
    for name in sorted(os.listdir(PACKAGE_DIR)):
        if name.endswith((".py", ".cpp")):
            with open(os.path.join(PACKAGE_DIR, name), "rb") as f:
                h.update(name.encode() + f.read())
    return h.hexdigest()


def recorded_options(options):
    return {
        "mode": options.mode, "seq": options.seq, "image": options.image, "precision": options.precision,
        "optimizer": options.optimizer if options.mode == "train" else None,
        "optimizerImpl": options.optimizer_impl if options.mode == "train" else None,
        "checkpointing": options.checkpointing, "loraRank": options.lora_rank, "loraTargets": options.lora_targets,
        "attention": options.attention, "gpu": options.gpu,
        "computeCapability": "%d.%d" % options.compute_capability,
        "batches": options.batches, "batch": options.batch,
    }


def cache_path(options, environment):
    key = json.dumps({"source": [options.hf_config and "hf", options.torchvision, options.timm, options.torch and options.torch.rsplit(":", 1)[1]],
                      "options": recorded_options(options), "environment": environment}, sort_keys=True).encode()
    h = hashlib.sha256(key + source_text(options) + tracer_digest().encode()).hexdigest()[:24]
    root = os.environ.get("VRAMFIT_TRACE_CACHE") or cache_dir("traces")
    return os.path.join(root, h + ".json")


# The packages each source runs on, beside torch, with the names `missing` gives them: what `environment` records.
PACKAGES = {"transformers": "transformers", "torchvision": "torchvision", "timm": "timm", "peft": "PEFT (peft)"}


def packages_for(options):
    names = []
    if options.hf_config:
        names.append("transformers")
    if options.torchvision:
        names.append("torchvision")
    if options.timm:
        names.append("timm")
    if options.lora_rank:
        names.append("peft")
    return names


def version_of(package, label):
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        raise missing(label, package) from None


def environment_of(options):
    """Versions of what runs the step, from the installed packages' metadata (no import): the cache key's and the
    trace's `environment`. A package the source needs and this Python lacks is exit 4, naming the pip line."""
    env = {"python": platform.python_version(), "torch": version_of("torch", "PyTorch (torch)"), "tracer": TRACER_VERSION}
    for name in packages_for(options):
        env[name] = version_of(name, PACKAGES[name])
    return env


def run(options):
    environment = environment_of(options)
    path = cache_path(options, environment)
    if not options.no_cache and os.path.exists(path):
        with open(path) as f:
            text = f.read()
        print(f"vramfit trace: cached {path}", file=sys.stderr)
    else:
        from . import fake_cuda

        if "torch" not in sys.modules:
            fake_cuda.preload()  # the fake CUDA device before torch (fake_cuda.py says why)
        import_torch()
        from .sources import resolve

        fake_cuda.answer_torch_cuda(options.compute_capability)
        source, _extra = resolve(options)
        text = json.dumps(trace(options, source, environment), separators=(",", ":")) + "\n"
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    if options.out:
        try:
            with open(options.out, "w") as f:
                f.write(text)
        except OSError as e:
            raise TraceError(f"--out: cannot write {options.out}: {e.strerror}") from None
    else:
        sys.stdout.write(text)
    return 0


def trace(options, source, environment):
    from .attention import AttentionLog
    from .fit import fit, single
    from .step import INFER_PHASES, TRAIN_PHASES
    from .tracer import trace_batch, trace_batches
    from . import charged

    from . import forked

    log = AttentionLog(options.compute_capability)
    each = None
    if forked.wanted():
        def each(trace_one, batches):
            done = forked.each_in_a_child(trace_one, batches, keep=lambda: log.entries)
            if done is None:  # a backward ran in this process before: here, one after another
                return [trace_one(batch) for batch in batches]
            events, log.entries = done
            return events
    with log.recording():
        steps, workload = trace_batches(source, options, options.batches, each=each)
    events, reason = fit([(b, events) for b, (events, _recorder) in zip(options.batches, steps)])
    total, trainable = workload.counts()
    doc = {
        "format": "vramfit-step-trace", "version": 1,
        "workload": {"source": workload.source, "name": workload.name, "parameterCount": total,
                     "trainableParameterCount": trainable},
        "options": recorded_options(options),
        "environment": environment,
        "batches": options.batches,
        "affine": events is not None,
    }
    if events is None:
        if options.batch in options.batches:  # traced already (the default: B1)
            one = steps[options.batches.index(options.batch)][0]
        else:
            with log.recording():
                one, _recorder, _workload = trace_batch(source, options, options.batch)
        events = single(one)
        doc["batch"] = options.batch
        doc["affineReason"] = reason
    doc["phases"] = INFER_PHASES if options.mode == "infer" else TRAIN_PHASES
    doc["events"] = events
    doc["attention"] = log.entries
    doc["charged"] = charged.bytes_for(options.compute_capability, options.mode)
    return doc
