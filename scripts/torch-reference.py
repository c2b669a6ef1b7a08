#!/usr/bin/env python3
"""The batch-size search users write today, in PyTorch: the reference vramfit is compared with.

Finds the largest batch that trains by running real training steps (forward, backward, optimizer
step) and catching CUDA out-of-memory, doubling then bisecting exactly as Lightning's
``Tuner.scale_batch_size(mode="binsearch")`` does (``_run_binary_scaling`` in
src/lightning/pytorch/tuner/batch_size_scaling.py of Lightning-AI/pytorch-lightning, read at commit
a9ca6b1bb4d1150088290a4529ba1b6c6d5c5965; defaults init_val=2, steps_per_trial=3, max_trials=25).

    python3 scripts/torch-reference.py [--models resnet152,bert-large,gpt2-medium] [--out FILE]
    python3 scripts/torch-reference.py --dry-run      # CPU, tiny shapes, a simulated OOM: tests
    python3 scripts/torch-reference.py --one-step --models resnet152 --batch 64
                                                      # one trial, for vramfit batch --exec

--one-step runs one model's trial at one batch size (--batch, else $VRAMFIT_BATCH) and exits: 0
when it trained, after printing VRAMFIT_PEAK_BYTES=<torch.cuda.max_memory_reserved()> and a JSON
line with the trial; 1 with PyTorch's out-of-memory traceback when it did not fit. It is the job
`vramfit batch --exec` runs (docs/validation.md, "The real job on a GPU").

Models, as vramfit's presets describe them (scripts/gpu-compare.sh runs both sides):
  resnet152    torchvision resnet152, 224x224, fp32, SGD with momentum 0.9
  bert-large   BERT-large encoder + pooler (+ a 2-way classifier for a loss), seq 512, AMP, AdamW
  gpt2-medium  GPT-2 medium with its tied LM head, seq 1024, AMP, AdamW
BERT and GPT-2 come from ``transformers`` (with SDPA attention where it offers it) when it is
importable, else (and in --dry-run) from the hand-written blocks below, which have the same shapes. AMP is
``torch.autocast(float16)`` with a ``GradScaler``, the fp32 weights being the master copy.

Reports JSON: per model the largest batch, the trials and steps run, the seconds taken, and
``torch.cuda.max_memory_allocated()`` / ``max_memory_reserved()`` over steps at that batch.
"""
import argparse
import gc
import json
import math
import os
import platform
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

# The tracer's torchvision import, which also loads a torchvision whose compiled ops do not (a CUDA wheel beside
# a CPU torch, as in CI's torch 2.13 CPU venv): these models need none of those ops.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from vramfit_trace.torchvision_import import import_torchvision  # noqa: E402

MODELS = {
    "resnet152": {"kind": "resnet", "image": 224, "precision": "fp32", "optimizer": "momentum"},
    "bert-large": {"kind": "bert", "seq": 512, "precision": "amp", "optimizer": "adamw",
                   "hidden": 1024, "layers": 24, "heads": 16, "vocab": 30522, "positions": 512},
    "gpt2-medium": {"kind": "gpt2", "seq": 1024, "precision": "amp", "optimizer": "adamw",
                    "hidden": 1024, "layers": 24, "heads": 16, "vocab": 50257, "positions": 1024},
}

# --dry-run: the same code paths at shapes a CPU trains in milliseconds.
DRY_RUN_SHAPES = {
    "resnet152": {"image": 64, "classes": 10, "resnet": "resnet18"},
    "bert-large": {"seq": 16, "hidden": 64, "layers": 2, "heads": 4, "vocab": 128, "positions": 16},
    "gpt2-medium": {"seq": 16, "hidden": 64, "layers": 2, "heads": 4, "vocab": 128, "positions": 16},
}

HAS_SDPA = hasattr(F, "scaled_dot_product_attention")


def grad_scaler(**kwargs):
    """torch.amp.GradScaler("cuda") where it exists (torch >= 2.3), else torch.cuda.amp.GradScaler."""
    if hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler"):
        return torch.amp.GradScaler("cuda", **kwargs)
    return torch.cuda.amp.GradScaler(**kwargs)


class SimulatedOutOfMemory(RuntimeError):
    """--dry-run's stand-in for running out of GPU memory (a CPU never does at these sizes)."""


def is_oom_error(error):
    """What Lightning's is_oom_error accepts (lightning.pytorch.utilities.memory), plus the dry run's."""
    if isinstance(error, SimulatedOutOfMemory):
        return True
    oom_class = getattr(torch.cuda, "OutOfMemoryError", None)
    if oom_class is not None and isinstance(error, oom_class):
        return True
    if not isinstance(error, RuntimeError) or len(error.args) != 1:
        return False
    message = str(error.args[0])
    return ("CUDA" in message and "out of memory" in message) \
        or "cuDNN error: CUDNN_STATUS_NOT_SUPPORTED." in message \
        or "DefaultCPUAllocator: can't allocate memory" in message


def freeze_imports(names):
    """Moves what the imports made out of the collector's sight (gc.freeze), before any model is built.

    Lightning collects before every trial (garbage_collection below); with torch, torch._dynamo (imported by the first
    optimizer, torch/_compile.py's _disable_dynamo) and torchvision loaded, each gc.collect() walks their objects:
    about 0.16 s, seven times per model, most of a --dry-run search. Frozen objects are never collected, so this
    happens after every import and before anything a search allocates: the models, tensors and optimizers stay
    collectable as before. torch 1.13 has no torch._dynamo."""
    try:
        import torch._dynamo  # noqa: F401
    except ImportError:
        pass
    if any(MODELS[n]["kind"] == "resnet" for n in names):
        import_torchvision()
    gc.collect()
    gc.freeze()


def garbage_collection(device):
    """Lightning's garbage_collection_cuda: collect, then return cached blocks to the driver."""
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


# --- hand-written BERT and GPT-2 (used when transformers is not importable) -----------------------

def attention(q, k, v, dropout, causal, training):
    """(batch, heads, seq, head_dim) attention: PyTorch's fused kernel where there is one."""
    if HAS_SDPA:
        return F.scaled_dot_product_attention(q, k, v, dropout_p=dropout if training else 0.0, is_causal=causal)
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.size(-1))
    if causal:
        s = q.size(-2)
        mask = torch.ones(s, s, dtype=torch.bool, device=q.device).triu(1)
        scores = scores.masked_fill(mask, float("-inf"))
    probs = F.dropout(scores.softmax(-1), dropout, training)
    return probs @ v


class SelfAttention(nn.Module):
    def __init__(self, hidden, heads, dropout, causal):
        super().__init__()
        self.heads, self.dropout, self.causal = heads, dropout, causal
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.out = nn.Linear(hidden, hidden)

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, h // self.heads).permute(2, 0, 3, 1, 4)
        y = attention(q, k, v, self.dropout, self.causal, self.training)
        return self.out(y.transpose(1, 2).reshape(b, s, h))


class Block(nn.Module):
    """A BERT layer (post-LN) or a GPT-2 block (pre-LN): attention, then a GeLU FFN of 4h."""

    def __init__(self, hidden, heads, dropout, pre_norm):
        super().__init__()
        self.pre_norm = pre_norm
        self.attention = SelfAttention(hidden, heads, dropout, causal=pre_norm)
        self.norm1 = nn.LayerNorm(hidden)
        self.norm2 = nn.LayerNorm(hidden)
        self.ffn = nn.Sequential(nn.Linear(hidden, 4 * hidden), nn.GELU(), nn.Linear(4 * hidden, hidden))
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        if self.pre_norm:
            x = x + self.drop(self.attention(self.norm1(x)))
            return x + self.drop(self.ffn(self.norm2(x)))
        x = self.norm1(x + self.drop(self.attention(x)))
        return self.norm2(x + self.drop(self.ffn(x)))


class HandBert(nn.Module):
    """BertModel (embeddings with token types and a norm, post-LN layers, pooler) + a classifier."""

    def __init__(self, c):
        super().__init__()
        h = c["hidden"]
        self.words = nn.Embedding(c["vocab"], h)
        self.positions = nn.Embedding(c["positions"], h)
        self.token_types = nn.Embedding(2, h)
        self.norm = nn.LayerNorm(h)
        self.drop = nn.Dropout(0.1)
        self.layers = nn.ModuleList(Block(h, c["heads"], 0.1, pre_norm=False) for _ in range(c["layers"]))
        self.pooler = nn.Linear(h, h)
        self.classifier = nn.Linear(h, 2)

    def forward(self, ids, labels):
        positions = torch.arange(ids.size(1), device=ids.device)
        x = self.drop(self.norm(self.words(ids) + self.positions(positions) + self.token_types(torch.zeros_like(ids))))
        for layer in self.layers:
            x = layer(x)
        logits = self.classifier(self.drop(torch.tanh(self.pooler(x[:, 0]))))
        return F.cross_entropy(logits.float(), labels)


class HandGpt2(nn.Module):
    """GPT2LMHeadModel: learned positions, pre-LN blocks, a final norm, the LM head tied to the embeddings."""

    def __init__(self, c):
        super().__init__()
        h = c["hidden"]
        self.words = nn.Embedding(c["vocab"], h)
        self.positions = nn.Embedding(c["positions"], h)
        self.drop = nn.Dropout(0.1)
        self.layers = nn.ModuleList(Block(h, c["heads"], 0.1, pre_norm=True) for _ in range(c["layers"]))
        self.norm = nn.LayerNorm(h)

    def forward(self, ids):
        positions = torch.arange(ids.size(1), device=ids.device)
        x = self.drop(self.words(ids) + self.positions(positions))
        for layer in self.layers:
            x = layer(x)
        logits = self.norm(x) @ self.words.weight.t()
        return F.cross_entropy(logits[:, :-1].float().reshape(-1, logits.size(-1)), ids[:, 1:].reshape(-1))


# --- the models and their steps -------------------------------------------------------------------

def transformers_model(kind, c):
    """The model from transformers with SDPA attention where the version offers it; None without transformers."""
    import_torchvision()  # transformers imports it where it is installed
    try:
        import transformers
    except ImportError:
        return None
    if kind == "bert":
        config = transformers.BertConfig(vocab_size=c["vocab"], hidden_size=c["hidden"], num_hidden_layers=c["layers"],
                                         num_attention_heads=c["heads"], intermediate_size=4 * c["hidden"],
                                         max_position_embeddings=c["positions"], num_labels=2)
        model_class = transformers.BertForSequenceClassification
    else:
        config = transformers.GPT2Config(vocab_size=c["vocab"], n_embd=c["hidden"], n_layer=c["layers"], n_head=c["heads"],
                                         n_positions=c["positions"])
        model_class = transformers.GPT2LMHeadModel
    version = f"transformers {transformers.__version__}"
    for attn in ("sdpa", "eager"):
        try:  # versions differ in how they take it (and whether a model has SDPA at all)
            model = model_class._from_config(config, attn_implementation=attn)
            return model, version, getattr(model.config, "_attn_implementation", attn)
        except Exception:  # noqa: BLE001
            pass
        try:
            config._attn_implementation = attn
            model = model_class(config)
            return model, version, getattr(model.config, "_attn_implementation", attn)
        except Exception:  # noqa: BLE001
            pass
    return model_class(config), version, "default"


def build(name, dry_run, device):
    """(model, make_batch(b) -> loss closure, description) for one model."""
    c = dict(MODELS[name])
    if dry_run:
        c.update(DRY_RUN_SHAPES[name])
    info = {"model": name, "precision": c["precision"], "optimizer": c["optimizer"]}
    if c["kind"] == "resnet":
        torchvision = import_torchvision()
        arch = c.get("resnet", "resnet152")
        model = getattr(torchvision.models, arch)(num_classes=c.get("classes", 1000))
        info.update(implementation=f"torchvision {torchvision.__version__} {arch}", image=c["image"])

        def make_batch(b):
            x = torch.randn(b, 3, c["image"], c["image"], device=device)
            y = torch.randint(0, c.get("classes", 1000), (b,), device=device)
            return lambda: F.cross_entropy(model(x), y)
    else:
        # The dry run checks plumbing with the hand-written blocks: importing transformers (about 10 s of a loaded
        # machine's CPU, in each of --exec's processes) would cost more than its tiny steps.
        loaded = None if dry_run else transformers_model(c["kind"], c)
        if loaded is not None:
            model, implementation, attn = loaded
        else:
            model = HandBert(c) if c["kind"] == "bert" else HandGpt2(c)
            implementation, attn = "hand-written", ("sdpa" if HAS_SDPA else "eager")
        info.update(implementation=implementation, attention=attn, seq=c["seq"],
                    shape={k: c[k] for k in ("hidden", "layers", "heads", "vocab")})
        hugging_face = loaded is not None

        def make_batch(b):
            ids = torch.randint(0, c["vocab"], (b, c["seq"]), device=device)
            if c["kind"] == "bert":
                labels = torch.randint(0, 2, (b,), device=device)
                if hugging_face:
                    return lambda: model(input_ids=ids, labels=labels).loss
                return lambda: model(ids, labels)
            if hugging_face:
                return lambda: model(input_ids=ids, labels=ids).loss
            return lambda: model(ids)
    model.to(device).train()
    info["parameterCount"] = sum(p.numel() for p in model.parameters())
    return model, make_batch, info, c


class Trainer:
    """Training steps at a batch size, as a user's loop runs them; OOM surfaces as an exception."""

    def __init__(self, model, make_batch, c, device, simulate_oom_above):
        self.model, self.make_batch, self.device = model, make_batch, device
        self.amp = c["precision"] == "amp" and device.type == "cuda"
        if c["optimizer"] == "momentum":
            self.optimizer = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
        else:
            self.optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
        self.scaler = grad_scaler() if self.amp else None
        self.simulate_oom_above = simulate_oom_above
        self.steps = 0
        self.skipped_steps = 0

    def steps_at(self, batch, count):
        closure = self.make_batch(batch)
        for _ in range(count):
            self.optimizer.zero_grad(set_to_none=True)
            with torch.autocast(device_type="cuda", dtype=torch.float16, enabled=self.amp):
                loss = closure()
            if self.simulate_oom_above is not None and batch > self.simulate_oom_above:
                # Worded as PyTorch words it, so that a caller reading the output (vramfit --exec) sees out of memory.
                raise SimulatedOutOfMemory(f"CUDA out of memory (simulated): batch {batch} > {self.simulate_oom_above}")
            if self.scaler is not None:
                scale = self.scaler.get_scale()
                self.scaler.scale(loss).backward()
                self.scaler.step(self.optimizer)
                self.scaler.update()
                if self.scaler.get_scale() < scale:
                    self.skipped_steps += 1  # inf/NaN gradients: the optimizer did not step
            else:
                loss.backward()
                self.optimizer.step()
            self.steps += 1
            del loss
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def after_oom(self):
        self.optimizer.zero_grad(set_to_none=True)
        if self.scaler is not None:
            # A scaler interrupted between unscale_/step and update refuses the next step: start
            # a fresh one at the scale reached.
            self.scaler = grad_scaler(init_scale=self.scaler.get_scale())
        garbage_collection(self.device)

    def warm_up(self, max_steps=24):
        """Steps at batch 1 until the optimizer has really stepped (an AMP scaler skips steps while its
        scale is too high), so that the optimizer states exist before the search, as in training."""
        for _ in range(max_steps):
            skipped = self.skipped_steps
            self.steps_at(1, 1)
            if self.skipped_steps == skipped:
                return
        raise RuntimeError(f"warm-up: every one of {max_steps} steps was skipped (inf/NaN gradients)")


def trial(trainer, batch, steps, device):
    """One Lightning trial: `steps` training steps at `batch`; False on out-of-memory."""
    garbage_collection(device)  # as Lightning does before every trial
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    started = time.perf_counter()
    steps_before = trainer.steps
    fits = True
    try:
        trainer.steps_at(batch, steps)
    except Exception as error:  # noqa: BLE001 - only OOM is a result; anything else propagates
        if not is_oom_error(error):
            raise
        fits = False
    record = {"batch": batch, "fits": fits, "steps": trainer.steps - steps_before,
              "seconds": round(time.perf_counter() - started, 4)}
    if device.type == "cuda":
        record["maxMemoryAllocatedBytes"] = torch.cuda.max_memory_allocated(device)
    if not fits:
        trainer.after_oom()  # outside the except block: the traceback's frames are gone
    return record


def lightning_binsearch(run_trial, init_val=2, max_trials=25):
    """_run_binary_scaling, step for step (see the module docstring); returns (batch, trials)."""
    trials = []
    new_size, low, high, count = init_val, 1, None, 0
    while True:
        record = run_trial(new_size)
        trials.append(record)
        if record["fits"]:
            count += 1
            if count > max_trials:
                break
            low = new_size
            if high:
                if high - low <= 1:
                    break
                next_size = (high + low) // 2
            else:
                next_size = int(new_size * 2.0)
            changed = next_size != new_size
            new_size = next_size
            if not changed:
                break
        else:
            high = new_size
            new_size = (high + low) // 2
            if high - low <= 1:
                break
    return new_size, trials


def reference(name, args, device):
    started = time.perf_counter()
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    model, make_batch, info, c = build(name, args.dry_run, device)
    trainer = Trainer(model, make_batch, c, device, args.simulate_oom_above)
    trainer.warm_up()
    setup_seconds = time.perf_counter() - started
    warm_up_steps = trainer.steps
    info["weightsBytes"] = sum(p.numel() * p.element_size() for p in model.parameters())
    if device.type == "cuda":
        # What persists between steps: the weights and the optimizer states (gradients freed first).
        trainer.optimizer.zero_grad(set_to_none=True)
        garbage_collection(device)
        info["allocatedBetweenStepsBytes"] = torch.cuda.memory_allocated(device)

    search_started = time.perf_counter()
    batch, trials = lightning_binsearch(lambda b: trial(trainer, b, args.steps_per_trial, device),
                                        init_val=args.init_val, max_trials=args.max_trials)
    search_seconds = time.perf_counter() - search_started

    # The memory at the answer: the same steps again, from a reset peak.
    at_batch = trial(trainer, batch, args.steps_per_trial, device)
    if device.type == "cuda":
        at_batch["maxMemoryReservedBytes"] = torch.cuda.max_memory_reserved(device)
        # The segments the caching allocator holds after those steps (largest first), to set against
        # vramfit's emulation of it, and what the process holds besides them: its CUDA context and
        # the kernels cuBLAS and cuDNN loaded by now (vramfit's --job-context; docs/memory-model.md).
        # total - free counts every process: run on an otherwise idle GPU.
        at_batch["segmentBytes"] = sorted((s["total_size"] for s in torch.cuda.memory_snapshot()), reverse=True)
        free, total = torch.cuda.mem_get_info(device)
        at_batch["contextBytes"] = total - free - torch.cuda.memory_reserved(device)
    else:
        at_batch["maxMemoryAllocatedBytes"] = None
        at_batch["maxMemoryReservedBytes"] = None

    result = dict(info)
    result.update(
        search="lightning binsearch",
        initVal=args.init_val, stepsPerTrial=args.steps_per_trial, maxTrials=args.max_trials,
        batchSize=batch,
        trialCount=len(trials),
        stepsRun=sum(t["steps"] for t in trials),
        warmUpSteps=warm_up_steps,
        skippedSteps=trainer.skipped_steps,
        setupSeconds=round(setup_seconds, 3),
        searchSeconds=round(search_seconds, 3),
        seconds=round(time.perf_counter() - started, 3),
        atBatch=at_batch,
        trials=trials,
    )
    del trainer, model
    garbage_collection(device)
    return result


def one_step(args, device):
    """One trial at one batch size, as a training job run by vramfit --exec: see the module docstring."""
    name = args.models.split(",")[0].strip()
    batch = args.batch if args.batch is not None else int(os.environ.get("VRAMFIT_BATCH", "0"))
    if batch < 1:
        print("torch-reference: --one-step needs --batch N or VRAMFIT_BATCH", file=sys.stderr)
        sys.exit(2)
    started = time.perf_counter()
    model, make_batch, info, c = build(name, args.dry_run, device)
    trainer = Trainer(model, make_batch, c, device, args.simulate_oom_above)
    trainer.warm_up()
    if device.type == "cuda":
        trainer.optimizer.zero_grad(set_to_none=True)
        torch.cuda.reset_peak_memory_stats(device)
    trial_started = time.perf_counter()
    trainer.steps_at(batch, args.steps_per_trial)  # out of memory propagates: PyTorch's traceback, exit 1
    record = {"model": name, "batch": batch, "steps": args.steps_per_trial,
              "trialSeconds": round(time.perf_counter() - trial_started, 4),
              "seconds": round(time.perf_counter() - started, 4)}
    if device.type == "cuda":
        record["maxMemoryAllocatedBytes"] = torch.cuda.max_memory_allocated(device)
        record["maxMemoryReservedBytes"] = torch.cuda.max_memory_reserved(device)
        print(f"VRAMFIT_PEAK_BYTES={record['maxMemoryReservedBytes']}")
    print(json.dumps(record), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=",".join(MODELS), help="comma-separated: " + ", ".join(MODELS))
    parser.add_argument("--out", help="write the JSON report here (it also goes to stdout)")
    parser.add_argument("--device", type=int, default=0, help="CUDA ordinal (default 0)")
    parser.add_argument("--dry-run", action="store_true",
                        help="CPU, tiny shapes, one step per trial, out-of-memory simulated above batch 5")
    parser.add_argument("--steps-per-trial", type=int, default=None, help="default 3 (Lightning's); 1 with --dry-run")
    parser.add_argument("--init-val", type=int, default=2, help="the first batch size tried (Lightning's default 2)")
    parser.add_argument("--max-trials", type=int, default=25, help="Lightning's max_trials (default 25)")
    parser.add_argument("--simulate-oom-above", type=int, default=None, help="raise OOM above this batch (default 5 with --dry-run)")
    parser.add_argument("--one-step", action="store_true",
                        help="one trial of the first --models at --batch (or $VRAMFIT_BATCH), for vramfit batch --exec")
    parser.add_argument("--batch", type=int, default=None, help="with --one-step: the batch size")
    args = parser.parse_args()
    if args.steps_per_trial is None:
        args.steps_per_trial = 1 if args.dry_run else 3
    if args.dry_run and args.simulate_oom_above is None:
        args.simulate_oom_above = 5
    names = [n.strip() for n in args.models.split(",") if n.strip()]
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        parser.error(f"--models: unknown {', '.join(unknown)}; expected some of {', '.join(MODELS)}")

    if args.dry_run:
        device = torch.device("cpu")
        torch.manual_seed(0)
    else:
        if not torch.cuda.is_available():
            print("torch-reference: no CUDA device is available (use --dry-run to test on the CPU)", file=sys.stderr)
            sys.exit(3)
        device = torch.device("cuda", args.device)
        torch.cuda.set_device(device)

    report = {
        "startedAt": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "dryRun": args.dry_run,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "device": str(device),
        "simulateOomAbove": args.simulate_oom_above,
    }
    if device.type == "cuda":
        properties = torch.cuda.get_device_properties(device)
        free, total = torch.cuda.mem_get_info(device)
        report.update(deviceName=properties.name, totalBytes=total, freeBytesAtStart=free)
    if args.one_step:
        one_step(args, device)
        return
    freeze_imports(names)
    report["models"] = []
    for name in names:
        print(f"torch-reference: {name} ...", file=sys.stderr, flush=True)
        result = reference(name, args, device)
        print(f"torch-reference: {name}: batch {result['batchSize']} after {result['trialCount']} trials, "
              f"{result['seconds']} s", file=sys.stderr, flush=True)
        report["models"].append(result)

    text = json.dumps(report, indent=2)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
