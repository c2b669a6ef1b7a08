"""Resolves --hf-config / --torchvision / --timm / --torch to a workload builder and the versions it used."""
import torch

from .errors import TraceError
from .workload import materialize

DTYPES = {"fp32": torch.float32, "amp": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def resolve(options, real=False):
    """(build(device) -> Workload, environment extras). The model is made once on the meta device; each build gives
    it fresh (fake) parameters on the device, so the batches traced share nothing. `real`: made and initialised on
    the CPU instead, for a real step (the tests' reference), where buffers' values matter (position ids)."""
    dtype = DTYPES[options.precision]
    if options.hf_config:
        from . import hf_source

        workload, _kind = hf_source.build(options.hf_config, options, dtype, "cpu" if real else "meta")
    elif options.torchvision or options.timm:
        from . import vision_source

        workload = vision_source.build(options, dtype, "cpu" if real else "meta")
    else:
        from . import torch_source

        workload = torch_source.build(options, dtype)
    if options.lora_rank:
        from . import lora

        lora.apply(workload, options)
    if options.checkpointing:
        enable_checkpointing(workload.model, workload.name)
    meta_model = workload.model

    def build(device):
        import copy

        from torch._subclasses.fake_tensor import unset_fake_temporarily

        fresh = copy.copy(workload)
        with unset_fake_temporarily():  # a meta copy, made outside the fake mode that materialize() then fills
            model = copy.deepcopy(meta_model)
        fresh.model = model.to(device) if real else materialize(model, device, None)
        return fresh

    return build, workload.environment


CHECKPOINT_KWARGS = {"use_reentrant": False, "preserve_rng_state": False}  # no CUDA RNG state on a fake device
CONTAINERS = (torch.nn.Sequential, torch.nn.ModuleList)


def enable_checkpointing(model, name):
    """--checkpointing: Hugging Face's gradient checkpointing where the model has it (its own rule: each decoder or
    encoder layer), else torch.utils.checkpoint around each of the model's blocks (checkpoint_blocks)."""
    if hasattr(model, "gradient_checkpointing_enable") and getattr(model, "supports_gradient_checkpointing", False):
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=dict(CHECKPOINT_KWARGS))
        return
    if not checkpoint_blocks(model):
        raise TraceError(f"--checkpointing: {name} has no blocks to checkpoint (modules with layers of their own inside an "
                         "nn.Sequential or nn.ModuleList): call torch.utils.checkpoint in your model's forward and trace "
                         "without --checkpointing")


def blocks_of(model):
    """The model's blocks, the rule docs/trace-format.md states: every module that sits in a plain nn.Sequential or
    nn.ModuleList and has layers of its own (ResNet's BasicBlocks and Bottlenecks, a ViT's encoder blocks, timm's
    stages' blocks), the outermost such; a plain container inside a container is looked into, and a block's insides are
    not (one checkpoint per block, never nested)."""
    found = []

    def visit(module, in_container):
        for child in module.children():
            if type(child) in CONTAINERS:
                visit(child, True)
            elif in_container and next(child.children(), None) is not None:
                found.append(child)
            else:
                visit(child, False)

    visit(model, type(model) in CONTAINERS)
    return found


def _checkpointed_forward(self, *args, **kwargs):
    # The class's own forward, recomputed in backward. Bound to the module (types.MethodType), so copy.deepcopy of
    # the model rebinds it to each copy's block.
    return torch.utils.checkpoint.checkpoint(type(self).forward, self, *args, **CHECKPOINT_KWARGS, **kwargs)


def checkpoint_blocks(model):
    """Wraps each block's forward in non-reentrant torch.utils.checkpoint, as a training script that checkpoints every
    block does; returns how many."""
    import types

    import torch.utils.checkpoint  # noqa: F401

    blocks = blocks_of(model)
    for block in blocks:
        block.forward = types.MethodType(_checkpointed_forward, block)
    return len(blocks)
