"""PyTorch Lightning's BatchSizeFinder on examples/pytorch/train_mlp.py's model and step: what
scripts/bench-simulated-gpu.mjs sets beside `vramfit batch --exec`.

    python find_batch_lightning.py --mode binsearch|power [--seq N]      # prints `batch N seconds S`
    python find_batch_lightning.py --batch-size N [--seq N]              # one fit at N (for --exec)

Each trial runs Lightning's default 3 steps; the finder starts at 1 (init_val) and gives up after
25 trials (its default max_trials).
"""
import argparse
import os
import sys
import tempfile
import time

import torch
import pytorch_lightning as pl
from pytorch_lightning.tuner import Tuner
from torch.utils.data import DataLoader, TensorDataset

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_mlp import build  # noqa: E402


class Mlp(pl.LightningModule):
    def __init__(self, batch_size: int, seq: int, hidden: int = 1024, width: int = 4096):
        super().__init__()
        self.batch_size = batch_size
        self.seq, self.hidden = seq, hidden
        self.net = build(hidden, width)

    def train_dataloader(self):
        # Indices only: each step makes its own batch of sequences on the device, as train_mlp.py does.
        return DataLoader(TensorDataset(torch.zeros(1 << 20, 1)), batch_size=self.batch_size)

    def training_step(self, batch, _):
        x = torch.randn(batch[0].shape[0], self.seq, self.hidden, device=self.device)
        return self.net(x).float().pow(2).mean()

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-4)


def trainer(steps: int) -> pl.Trainer:
    # The finder saves and restores a checkpoint in default_root_dir: a temporary one, not the caller's folder.
    return pl.Trainer(accelerator="gpu", devices=1, max_steps=steps, logger=False, enable_checkpointing=False,
                      enable_progress_bar=False, enable_model_summary=False, default_root_dir=tempfile.mkdtemp())


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", choices=["binsearch", "power"])
    parser.add_argument("--batch-size", type=int)
    parser.add_argument("--seq", type=int, default=16384)
    args = parser.parse_args()
    if args.mode is None:
        trainer(1).fit(Mlp(args.batch_size, args.seq))
    else:
        started = time.perf_counter()
        found = Tuner(trainer(1)).scale_batch_size(Mlp(1, args.seq), mode=args.mode, init_val=1, max_trials=25)
        print(f"batch {found} seconds {time.perf_counter() - started:.1f}")
