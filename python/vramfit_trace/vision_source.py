"""A torchvision or timm image classifier by name: built on the meta device, a batch of images and class labels,
cross-entropy over the classes."""
import torch
import torch.nn.functional as F

from .errors import TraceError, missing
from .torchvision_import import import_torchvision
from .workload import Workload


def build(options, dtype, init_device="meta"):
    """The model on the meta device (no memory, no initialisation; "cpu" for a real step), its inputs and loss."""
    if options.torchvision:
        torchvision = import_torchvision()
        if torchvision is None:
            raise missing("torchvision", "torchvision")
        name = options.torchvision
        if name not in torchvision.models.list_models():
            raise TraceError(f"--torchvision: {name!r} is not a torchvision model (torchvision.models.list_models())")
        with torch.device(init_device):
            model = torchvision.models.get_model(name, weights=None)
        environment = {"torchvision": torchvision.__version__}
        source, default_size = "torchvision", 224
    else:
        import_torchvision()  # timm imports it
        try:
            import timm
        except ImportError:
            raise missing("timm", "timm") from None
        name = options.timm
        if not timm.is_model(name):
            raise TraceError(f"--timm: {name!r} is not a timm model (timm.list_models())")
        with torch.device(init_device):
            model = timm.create_model(name, pretrained=False)
        environment = {"timm": timm.__version__}
        source = "timm"
        default_size = model.default_cfg.get("input_size", (3, 224, 224))[-1]
    if dtype != torch.float32:
        model = model.to(dtype)
    size = options.image or default_size

    def make_inputs(batch, device):
        return {"images": torch.empty(batch, 3, size, size, device=device, dtype=torch.float32 if dtype == torch.float32 or options.precision == "amp" else dtype),
                "labels": torch.zeros(batch, dtype=torch.long, device=device)}

    def forward(model, inputs):
        return model(inputs["images"])

    def loss(output, inputs):
        return F.cross_entropy(output, inputs["labels"])

    return Workload(source, name, model, make_inputs, forward, loss, environment)
