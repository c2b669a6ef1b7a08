"""accelerate's find_executable_batch_size on examples/pytorch/train_mlp.py's train(): what
scripts/bench-simulated-gpu.mjs sets beside `vramfit batch --exec`.

    python find_batch_accelerate.py --start N [--seq N]      # prints `batch N seconds S`

It runs train() from --start down, multiplying the batch by 0.9 after each out-of-memory error
(accelerate/utils/memory.py), so its answer is the first that fits going down, not the largest.
"""
import argparse
import os
import sys
import time

import torch
from accelerate.utils import find_executable_batch_size

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_mlp import train  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--start", type=int, default=128)
parser.add_argument("--seq", type=int, default=16384)
args = parser.parse_args()


@find_executable_batch_size(starting_batch_size=args.start)
def run(batch_size: int) -> int:
    torch.cuda.empty_cache()
    train(batch_size, steps=1, seq=args.seq)
    return batch_size


started = time.perf_counter()
found = run()
print(f"batch {found} seconds {time.perf_counter() - started:.1f}")
