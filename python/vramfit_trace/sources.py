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

        workload = vision_source.build(options, dtype)
    else:
        from . import torch_source

        workload = torch_source.build(options, dtype)
    if options.lora_rank:
        from . import lora

        lora.apply(workload, options)
    if options.checkpointing:
        enable_checkpointing(workload.model)
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


def enable_checkpointing(model):
    """Hugging Face's gradient checkpointing where the model has it, else torch.utils.checkpoint around each child."""
    kwargs = {"use_reentrant": False, "preserve_rng_state": False}  # no CUDA RNG state on a fake device
    if hasattr(model, "gradient_checkpointing_enable") and getattr(model, "supports_gradient_checkpointing", False):
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)
        return
    raise TraceError("--checkpointing: this model has no gradient_checkpointing_enable (only Hugging Face models do)")
