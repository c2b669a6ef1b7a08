"""--lora-rank / --lora-targets: the model wrapped by PEFT's LoRA, as a fine-tuning script does (only the adapters
train: the optimizer's state and the gradients shrink, the frozen weights' activations stay)."""
from .errors import TraceError, missing
from .torchvision_import import import_torchvision


def apply(workload, options):
    import_torchvision()  # peft imports transformers, which imports it
    try:
        import peft
    except ImportError:
        raise missing("PEFT (peft)", "peft") from None
    targets = options.lora_targets.split(",") if options.lora_targets else None
    config = peft.LoraConfig(r=options.lora_rank, lora_alpha=2 * options.lora_rank, lora_dropout=0.0,
                             target_modules=targets)
    try:
        workload.model = peft.get_peft_model(workload.model, config)
    except ValueError as e:
        raise TraceError(f"--lora-targets: {str(e).splitlines()[0]}") from None
    workload.environment["peft"] = peft.__version__
