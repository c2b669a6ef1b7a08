"""A real PyTorch training script, for `vramfit batch --exec` on a GPU or a simulated one:

    vramfit batch --exec 'python examples/pytorch/train_mlp.py --batch-size {batch}' --gpu T4

Two AdamW steps of a two-layer MLP over sequences of token embeddings (fp32, or bf16 autocast with
--amp), the shape of a transformer's feed-forward block. Exits 0 when the steps ran; PyTorch's own
torch.OutOfMemoryError (exit status 1) when they did not fit.
"""
import argparse

import torch
from torch import nn


def build(hidden: int, width: int) -> nn.Module:
    return nn.Sequential(nn.Linear(hidden, width), nn.GELU(), nn.Linear(width, hidden))


def train(batch_size: int, steps: int = 2, seq: int = 2048, hidden: int = 1024, width: int = 4096, amp: bool = False) -> torch.Tensor:
    model = build(hidden, width).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for _ in range(steps):
        x = torch.randn(batch_size, seq, hidden, device="cuda")
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp):
            loss = model(x).float().pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    return loss.detach()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, required=True)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--seq", type=int, default=2048)
    parser.add_argument("--amp", action="store_true")
    parser.add_argument("--item", action="store_true", help="read the loss back with .item() (a device-to-host read)")
    args = parser.parse_args()
    loss = train(args.batch_size, args.steps, args.seq, amp=args.amp)
    if args.item:
        print("loss", loss.item())
