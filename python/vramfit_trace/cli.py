"""The tracer's options: the names vramfit's own CLI uses (docs/trace-format.md's `options`)."""
import argparse
import re

from .errors import TraceError

PRECISIONS = ["fp32", "fp16", "bf16", "amp"]
OPTIMIZERS = ["sgd", "momentum", "adam", "adamw"]
IMPLS = ["foreach", "single", "fused"]


class Parser(argparse.ArgumentParser):
    def error(self, message):
        raise TraceError(f"vramfit trace: {message}")


def positive(name):
    def check(text):
        if not re.fullmatch(r"[1-9][0-9]*", text):
            raise TraceError(f"{name}: {text!r} is not a positive integer")
        return int(text)
    return check


def capability(text):
    m = re.fullmatch(r"([0-9]+)\.([0-9]+)", text)
    if not m:
        raise TraceError(f"--compute-capability: {text!r} is not MAJOR.MINOR (e.g. 9.0)")
    return int(m.group(1)), int(m.group(2))


def parser():
    p = Parser(prog="python -m vramfit_trace", description="Trace one PyTorch step on a fake CUDA device.")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--hf-config", metavar="FILE", help="a Hugging Face config.json")
    src.add_argument("--torchvision", metavar="NAME", help="a torchvision.models name (resnet50, vit_b_16, ...)")
    src.add_argument("--timm", metavar="NAME", help="a timm model name")
    src.add_argument("--torch", metavar="FILE.py:FUNCTION", help="your own model: see examples/trace-own-model.py")
    p.add_argument("--mode", choices=["train", "infer"], default="train")
    p.add_argument("--seq", type=positive("--seq"), default=512)
    p.add_argument("--image", type=positive("--image"), default=None)
    p.add_argument("--precision", choices=PRECISIONS, default="fp32")
    p.add_argument("--optimizer", choices=OPTIMIZERS, default="adamw")
    p.add_argument("--optimizer-impl", choices=IMPLS, default="foreach")
    p.add_argument("--checkpointing", action="store_true")
    p.add_argument("--lora-rank", type=positive("--lora-rank"), default=None)
    p.add_argument("--lora-targets", default=None, help="comma-separated module names (default: PEFT's for the model)")
    p.add_argument("--attention", choices=["sdpa", "eager"], default="sdpa", help="Hugging Face attention implementation")
    p.add_argument("--gpu", default=None, help="the target GPU's name (recorded; --compute-capability decides)")
    p.add_argument("--compute-capability", type=capability, default=(9, 0))
    p.add_argument("--batches", default="2,3,4", help="B1,B2,B3: fitted at B1 and B2, checked at B3 (batch 1 is avoided: some copies become views there)")
    p.add_argument("--batch", type=positive("--batch"), default=None, help="the batch traced when the fit fails")
    p.add_argument("--out", metavar="FILE", default=None, help="where to write the trace (default: stdout)")
    p.add_argument("--no-cache", action="store_true", help="trace even when a cached trace exists")
    return p


def parse(argv):
    options = parser().parse_args(argv)
    try:
        batches = [int(x) for x in options.batches.split(",")]
    except ValueError:
        batches = []
    if len(batches) != 3 or not (0 < batches[0] < batches[1] < batches[2]):
        raise TraceError(f"--batches: {options.batches!r} is not three increasing positive integers B1,B2,B3")
    options.batches = batches
    if options.batch is None:
        options.batch = batches[0]
    if options.lora_targets is not None and options.lora_rank is None:
        raise TraceError("--lora-targets: needs --lora-rank")
    if options.mode == "infer" and options.checkpointing:
        raise TraceError("--checkpointing: applies to --mode train only")
    return options
