#!/usr/bin/env python3
# Produced test/fixtures/torch-saved-activations.json and -unet.json; reproduce: /usr/bin/python3 scripts/reference/measure-activations.py [--unet] (Debian's torch 1.13).
"""Measures what autograd saves for backward in torchvision models: the reference for vramfit's CNN/ViT model.

For each model, at 224x224, fp32, train mode, on the CPU, it runs one forward pass plus a
cross-entropy loss under torch.autograd.graph.saved_tensors_hooks and sums the bytes of the
*distinct storages* autograd saved (deduplicated by storage data pointer; a view keeps its whole
storage alive, so a storage is counted at its full size). Parameters and buffers (the model's
own state, which vramfit counts as parameters) are excluded. It does this at batch 1 and batch 2
and splits the result into fixed + per-sample bytes:

    perSampleBytes = bytes(2) - bytes(1)        fixedBytes = 2 * bytes(1) - bytes(2)

Usage (Debian's python3-torch / python3-torchvision; the system python, not a pyenv shim):

    /usr/bin/python3 scripts/reference/measure-activations.py > test/fixtures/torch-saved-activations.json

With `--unet` it measures Stable Diffusion 2.1's UNet instead (scripts/reference/sd21_unet.py, a plain
PyTorch rebuild of diffusers' UNet2DConditionModel, since diffusers is not installed here): one
forward pass at 512x512 images (64x64 latents, 4 channels) with a 77-token, 1024-wide text
context and a random timestep, plus the MSE loss against the noise, fp32, train mode, on the CPU:

    /usr/bin/python3 scripts/reference/measure-activations.py --unet > test/fixtures/torch-saved-activations-unet.json

`--latent N` measures at N×N latents instead (the model must match at any size; 64 is the fixture's).

The output records the torch and torchvision versions and this command.
"""
import json
import platform
import sys
from collections import Counter

import torch
import torchvision

MODELS = ["resnet50", "resnet152", "vgg16", "vit_b_16"]
IMAGE = 224
BATCHES = (1, 2)
COMMAND = "/usr/bin/python3 scripts/reference/measure-activations.py > test/fixtures/torch-saved-activations.json"


def storage_key(t: torch.Tensor) -> int:
    return t.storage().data_ptr()


def storage_bytes(t: torch.Tensor) -> int:
    return t.storage().nbytes()


def saved_while(model: torch.nn.Module, forward):
    """Runs `forward()` (one forward pass and its loss, which it returns) and records the distinct
    storages autograd saves meanwhile, parameters and buffers excluded: (loss, their bytes)."""
    excluded = {storage_key(p) for p in model.parameters()} | {storage_key(b) for b in model.buffers()}
    saved: dict[int, int] = {}
    dtypes: Counter = Counter()

    def pack(t: torch.Tensor):
        key = storage_key(t)
        if key not in excluded and key not in saved:
            saved[key] = storage_bytes(t)
            dtypes[str(t.dtype)] += storage_bytes(t)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = forward()
    return loss, {"bytes": sum(saved.values()), "tensors": len(saved), "bytesByDtype": dict(dtypes)}


def saved_bytes(model: torch.nn.Module, batch: int) -> dict:
    """Bytes of the distinct storages autograd saves in one forward pass and loss, at `batch`."""
    torch.manual_seed(0)
    images = torch.randn(batch, 3, IMAGE, IMAGE)
    targets = torch.randint(0, 1000, (batch,))
    loss, result = saved_while(model, lambda: torch.nn.functional.cross_entropy(model(images), targets))
    loss.backward()  # proves the graph is whole; the hooks above saw every saved tensor
    model.zero_grad(set_to_none=True)
    return result


def measure(name: str) -> dict:
    model = getattr(torchvision.models, name)(weights=None)
    model.train()
    parameters = sum(p.numel() for p in model.parameters())
    runs = {b: saved_bytes(model, b) for b in BATCHES}
    b1, b2 = runs[1]["bytes"], runs[2]["bytes"]
    return {
        "model": name,
        "image": IMAGE,
        "dtype": "float32",
        "parameterCount": parameters,
        "savedBytesByBatch": {str(b): runs[b]["bytes"] for b in BATCHES},
        "savedTensorsByBatch": {str(b): runs[b]["tensors"] for b in BATCHES},
        "savedBytesByDtypeAtBatch1": runs[1]["bytesByDtype"],
        "perSampleBytes": b2 - b1,
        "fixedBytes": 2 * b1 - b2,
    }


UNET_LATENT = 64  # 512 / 8
UNET_COMMAND = "/usr/bin/python3 scripts/reference/measure-activations.py --unet > test/fixtures/torch-saved-activations-unet.json"


def unet_latent() -> int:
    args = sys.argv[1:]
    return int(args[args.index("--latent") + 1]) if "--latent" in args else UNET_LATENT


def unet_saved_bytes(model: torch.nn.Module, batch: int) -> dict:
    """Like saved_bytes, for the UNet's inputs: latents, timesteps, text context; MSE loss against the noise."""
    torch.manual_seed(0)
    latent = unet_latent()
    latents = torch.randn(batch, 4, latent, latent)
    timesteps = torch.randint(0, 1000, (batch,))
    context = torch.randn(batch, 77, 1024)
    noise = torch.randn(batch, 4, latent, latent)
    loss, result = saved_while(model, lambda: torch.nn.functional.mse_loss(model(latents, timesteps, context), noise))
    del loss  # the graph, and with it every saved tensor, is freed before the next run
    return result


def measure_unet() -> dict:
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
    from sd21_unet import UNet2DConditionModel

    model = UNet2DConditionModel().train()
    runs = {b: unet_saved_bytes(model, b) for b in BATCHES}
    b1, b2 = runs[1]["bytes"], runs[2]["bytes"]
    return {
        "model": "sd2.1-unet",
        "latent": unet_latent(),
        "image": unet_latent() * 8,
        "dtype": "float32",
        "attention": "eager (diffusers' AttnProcessor: baddbmm, softmax, bmm)",
        "parameterCount": sum(p.numel() for p in model.parameters()),
        "savedBytesByBatch": {str(b): runs[b]["bytes"] for b in BATCHES},
        "savedTensorsByBatch": {str(b): runs[b]["tensors"] for b in BATCHES},
        "savedBytesByDtypeAtBatch1": runs[1]["bytesByDtype"],
        "perSampleBytes": b2 - b1,
        "fixedBytes": 2 * b1 - b2,
    }


def main() -> None:
    torch.set_num_threads(max(1, torch.get_num_threads()))
    if "--unet" in sys.argv[1:]:
        json.dump(
            {
                "description": "Bytes of distinct storages autograd saves for backward (torch.autograd.graph."
                "saved_tensors_hooks, deduplicated by storage data_ptr, parameters excluded) in one forward pass "
                "plus the MSE loss, Stable Diffusion 2.1's UNet rebuilt in plain PyTorch (scripts/reference/sd21_unet.py; "
                f"diffusers is not installed here), train mode, fp32, CPU, {unet_latent()}x{unet_latent()} latents "
                f"({unet_latent() * 8}x{unet_latent() * 8} images), 77-token text context, eager attention. "
                "perSampleBytes = bytes(batch 2) - bytes(batch 1).",
                "command": UNET_COMMAND if unet_latent() == UNET_LATENT else f"/usr/bin/python3 scripts/reference/measure-activations.py --unet --latent {unet_latent()}",
                "torch": torch.__version__,
                "python": platform.python_version(),
                "device": "cpu",
                "models": [measure_unet()],
            },
            sys.stdout,
            indent=2,
        )
        sys.stdout.write("\n")
        return
    results = [measure(name) for name in MODELS]
    json.dump(
        {
            "description": "Bytes of distinct storages autograd saves for backward (torch.autograd.graph."
            "saved_tensors_hooks, deduplicated by storage data_ptr, parameters and buffers excluded) in one "
            "forward pass plus cross-entropy loss, torchvision models, train mode, fp32, CPU, 224x224. "
            "perSampleBytes = bytes(batch 2) - bytes(batch 1); fixedBytes = 2*bytes(1) - bytes(2).",
            "command": COMMAND,
            "torch": torch.__version__,
            "torchvision": torchvision.__version__,
            "python": platform.python_version(),
            "device": "cpu",
            "models": results,
        },
        sys.stdout,
        indent=2,
    )
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
