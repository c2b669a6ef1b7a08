#!/usr/bin/env python3
# Produced test/fixtures/torch-step-peaks.json and -amp.json; reproduce: the `command` field of each fixture.
"""The real peak of a PyTorch training step, as a function of the batch: the reference for vramfit's timeline.

Runs real training steps (forward, loss, backward, optimizer.step, zero_grad) on the CPU with
Debian's python3-torch and counts every tensor allocation through an LD_PRELOAD shim
(scripts/reference/step-peak-shim.c, compiled here with gcc into a temporary directory): PyTorch's CPU
allocator takes every storage with posix_memalign, and the shim keeps the live total, each
allocation rounded up to 512 bytes as the CUDA caching allocator rounds it. That is the
"allocated bytes" of torch.cuda.memory_allocated(): no CUDA context, no segments, no cache.

What differs on CUDA is emulated so the CPU step allocates what a CUDA step would:
- dropout: CUDA runs the fused native_dropout, which keeps a 1-byte bool mask; the CPU path of
  torch 1.13 keeps a 4-byte float mask. F.dropout is replaced by torch.native_dropout (whose CPU
  kernel exists and keeps the bool mask).
- the optimizer step: torch 2.x's implementations (the default `foreach`, and the single-tensor
  loop), written out below as the tensor operations of torch/optim/sgd.py and adam.py of torch
  2.x (`_multi_tensor_sgd`, `_single_tensor_sgd`, `_multi_tensor_adam`, `_single_tensor_adam`),
  because torch 1.13's differ (its foreach Adam makes a second out-of-place copy, `denom =
  _foreach_add(exp_avg_sq_sqrt, eps)`, that torch 2 does in place). Adam's `step` counters stay
  Python numbers: on CUDA they live on the host unless `capturable`/`fused`.
- 0-dim tensors are not counted (scripts/reference/step-peak-shim.c): a Python number in an expression
  becomes a CPU scalar tensor on CUDA too, which the CPU cannot tell from a device scalar.
- convolution and matmul workspaces inside one op (oneDNN or BLAS buffers here, cuDNN/cuBLAS
  workspaces there) are backend-specific: the reference is the live bytes at op boundaries; the
  peak inside ops is recorded too (`insideOps`), for information.

The peak is not affine in the batch: the step is recorded at every op boundary t (a
TorchDispatchMode sees every aten op of forward, backward and the optimizer) at two batches, each
boundary's live bytes give F(t) + P(t)*b, and the peak at batch b is max_t F(t) + P(t)*b. It is
checked by measuring a larger batch. Every boundary is labelled with vramfit's phase (`forward
layers.3`, `backward fc`, `optimizer.step`; src/plan/stepPhases.ts) through module hooks.

amp (resnet50, resnet152, vgg16 only; test/fixtures/torch-step-peaks-amp.json): torch.autocast("cpu",
dtype=torch.bfloat16) around forward and the loss, backward and the optimizer outside, as
torch.cuda.amp users write it. torch 1.13's CPU autocast does bf16 only; for these models' ops it
casts and falls through as CUDA's fp16 autocast does (the document's `autocastKernels`, from this
torch's dispatch table), bf16 and fp16 are both 2 bytes, and the weight-cast cache (cached_cast)
serves both. The loss differs in form only: the CPU casts cross_entropy_loss's input to fp32, CUDA
runs its log_softmax in fp32: one fp32 copy of the logits either way. GradScaler is CUDA-only in
1.13 and not emulated: on CUDA scale() adds a 0-dim scaled loss and unscale_ works on the
gradients in place (plus a 1-element found_inf per device), nothing per parameter or per sample.
The transformers are refused: CUDA autocast runs layer_norm and softmax in fp32, the CPU in bf16.

Models (vramfit preset, as PyTorch builds it):
  resnet50, resnet152, vgg16   torchvision, 224x224, cross-entropy over 1000 classes
  gpt2                         Hugging Face GPT2LMHeadModel (transformers 4.35, eager attention),
                               seq 1024, labels = input_ids (the model shifts them)
  bert-base                    Hugging Face BertForSequenceClassification (2 labels), seq 512
transformers is not installed here: both are written out below op for op as transformers'
modeling_gpt2.py / modeling_bert.py (commit 0010f60284ab4b9d14b7df9c6525b1a2ad44e640) run them.

Usage (the system python, which has torch; OpenBLAS is used when installed, for speed only):
    /usr/bin/python3 scripts/reference/measure-step-peak.py --self-check
    /usr/bin/python3 scripts/reference/measure-step-peak.py --out test/fixtures/torch-step-peaks.json
    /usr/bin/python3 scripts/reference/measure-step-peak.py --cases gpt2/fp32/adam/foreach --batches 1,2 --check 4
    /usr/bin/python3 scripts/reference/measure-step-peak.py --cases resnet50/amp/sgd/foreach,... --out test/fixtures/torch-step-peaks-amp.json
"""
import argparse
import ctypes
import gc
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# The tracer's torchvision import, which also loads a torchvision whose compiled ops do not (a CUDA wheel beside
# a CPU torch, as in CI's torch 2.13 CPU venv): these models need none of those ops.
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
from vramfit_trace.torchvision_import import import_torchvision  # noqa: E402
SHIM_SOURCE = os.path.join(HERE, "step-peak-shim.c")
SHIM_ENV = "VRAMFIT_STEP_PEAK_SHIM"
OPENBLAS = "/usr/lib/x86_64-linux-gnu/openblas-pthread"
COMMAND = "/usr/bin/python3 scripts/reference/measure-step-peak.py --out test/fixtures/torch-step-peaks.json"
GiB = 2**30
BUDGET = 79 * GiB


# --- the shim ---------------------------------------------------------------------------------------

ON_CUDA = "--device" in sys.argv and sys.argv[sys.argv.index("--device") + 1:][:1] == ["cuda"]


def ensure_shim():
    """Re-executes this script with the shim preloaded, unless it already is (or runs on a GPU)."""
    if os.environ.get(SHIM_ENV) or ON_CUDA:
        return
    directory = tempfile.mkdtemp(prefix="vramfit-step-peak-")
    library = os.path.join(directory, "step-peak-shim.so")
    subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-o", library, SHIM_SOURCE, "-ldl", "-lpthread"], check=True)
    env = dict(os.environ)
    env[SHIM_ENV] = library
    env["LD_PRELOAD"] = library
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    if os.path.isdir(OPENBLAS):  # speed only: the reference BLAS is ~25x slower and allocates nothing PyTorch counts
        env["LD_LIBRARY_PATH"] = OPENBLAS + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    os.execve(sys.executable, [sys.executable] + sys.argv, env)


class Shim:
    def __init__(self):
        library = ctypes.CDLL(os.environ[SHIM_ENV])  # the preloaded copy: dlopen returns it
        for name in ("vramfit_live_bytes", "vramfit_peak_bytes", "vramfit_allocations", "vramfit_other_live_bytes"):
            getattr(library, name).restype = ctypes.c_longlong
        self.library = library

    def live(self):
        return self.library.vramfit_live_bytes()

    def peak(self):
        return self.library.vramfit_peak_bytes()

    def reset_peak(self):
        self.library.vramfit_reset_peak()

    def allocations(self):
        return self.library.vramfit_allocations()


ensure_shim()

import torch  # noqa: E402  (after the re-exec: the shim must see torch's first allocation)
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

SHIM = None if ON_CUDA else Shim()


def rounded(nbytes):
    return (nbytes + 511) // 512 * 512


# --- recording the step -----------------------------------------------------------------------------

class Recorder(TorchDispatchMode):
    """Live bytes after every aten op (forward, backward, optimizer), and the most live inside it."""

    def __init__(self):
        super().__init__()
        self.label = "start"
        self.records = []  # (label, op, live after the op, most live since the previous boundary)

    def mark(self, what):
        """A boundary that is no op: frees done by Python (zero_grad's set_to_none, dropped outputs)."""
        live = SHIM.live()
        self.records.append((self.label, what, live, max(live, SHIM.peak())))
        SHIM.reset_peak()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        live = SHIM.live()
        self.records.append((self.label, func.overloadpacket.__name__, live, SHIM.peak()))
        SHIM.reset_peak()
        return out


RECORDER = None  # the active recorder, for the labels


def set_label(label):
    if RECORDER is not None:
        RECORDER.label = label


def label_stages(stages):
    """Labels forward and backward of each (name, module) stage through hooks; returns the handles."""
    handles = []
    for name, module in stages:
        def pre(_module, _inputs, name=name):
            set_label(f"forward {name}")

        def post(_module, _inputs, output, name=name):
            tensors = output if isinstance(output, (tuple, list)) else (output,)
            for t in tensors:
                if isinstance(t, torch.Tensor) and t.requires_grad:
                    t.register_hook(lambda grad, name=name: set_label(f"backward {name}"))
                    break
        handles.append(module.register_forward_pre_hook(pre))
        handles.append(module.register_forward_hook(post))
    return handles


# --- what CUDA does differently ---------------------------------------------------------------------

_cpu_dropout = F.dropout


def cuda_dropout(input, p=0.5, training=True, inplace=False):
    """at::dropout on CUDA (aten/src/ATen/native/Dropout.cpp, is_fused_kernel_acceptable): native_dropout."""
    if training and 0 < p < 1 and input.numel() > 0 and not inplace:
        return torch.native_dropout(input, p, True)[0]
    return _cpu_dropout(input, p, training, inplace)


F.dropout = cuda_dropout


# --- Hugging Face GPT-2 and BERT, op for op (transformers 0010f602, modeling_gpt2.py / modeling_bert.py) -

class Conv1D(nn.Module):
    """transformers.pytorch_utils.Conv1D: addmm(bias, x.view(-1, nx), weight), weight stored (nx, nf)."""

    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.empty(nx, nf).normal_(std=0.02))
        self.bias = nn.Parameter(torch.zeros(nf))

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        return x.view(size_out)


def gelu_new(x):
    """transformers.activations.NewGELUActivation (GPT-2's "gelu_new"): the tanh approximation, op by op."""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class GPT2Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        n = c["positions"]
        self.register_buffer("bias", torch.tril(torch.ones((n, n), dtype=torch.bool)).view(1, 1, n, n))
        self.register_buffer("masked_bias", torch.tensor(-1e4))
        self.embed_dim, self.num_heads = c["hidden"], c["heads"]
        self.head_dim = self.embed_dim // self.num_heads
        self.c_attn = Conv1D(3 * self.embed_dim, self.embed_dim)
        self.c_proj = Conv1D(self.embed_dim, self.embed_dim)
        self.attn_dropout = nn.Dropout(0.1)
        self.resid_dropout = nn.Dropout(0.1)

    def _attn(self, query, key, value):
        attn_weights = torch.matmul(query, key.transpose(-1, -2))
        attn_weights = attn_weights / torch.full([], value.size(-1) ** 0.5, dtype=attn_weights.dtype, device=attn_weights.device)
        query_length, key_length = query.size(-2), key.size(-2)
        causal_mask = self.bias[:, :, key_length - query_length: key_length, :key_length]
        mask_value = torch.finfo(attn_weights.dtype).min
        mask_value = torch.full([], mask_value, dtype=attn_weights.dtype).to(attn_weights.device)
        attn_weights = torch.where(causal_mask, attn_weights.to(attn_weights.dtype), mask_value)
        attn_weights = nn.functional.softmax(attn_weights, dim=-1)
        attn_weights = attn_weights.type(value.dtype)
        attn_weights = self.attn_dropout(attn_weights)
        return torch.matmul(attn_weights, value), attn_weights

    def _split_heads(self, tensor):
        return tensor.view(tensor.size()[:-1] + (self.num_heads, self.head_dim)).permute(0, 2, 1, 3)

    def _merge_heads(self, tensor):
        tensor = tensor.permute(0, 2, 1, 3).contiguous()
        return tensor.view(tensor.size()[:-2] + (self.num_heads * self.head_dim,))

    def forward(self, hidden_states, use_cache):
        query, key, value = self.c_attn(hidden_states).split(self.embed_dim, dim=2)
        query, key, value = self._split_heads(query), self._split_heads(key), self._split_heads(value)
        present = (key, value) if use_cache else None
        attn_output, _ = self._attn(query, key, value)
        attn_output = self.resid_dropout(self.c_proj(self._merge_heads(attn_output)))
        return attn_output, present


class GPT2MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c_fc = Conv1D(4 * c["hidden"], c["hidden"])
        self.c_proj = Conv1D(c["hidden"], 4 * c["hidden"])
        self.dropout = nn.Dropout(0.1)

    def forward(self, hidden_states):
        return self.dropout(self.c_proj(gelu_new(self.c_fc(hidden_states))))


class GPT2Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.ln_1 = nn.LayerNorm(c["hidden"], eps=1e-5)
        self.attn = GPT2Attention(c)
        self.ln_2 = nn.LayerNorm(c["hidden"], eps=1e-5)
        self.mlp = GPT2MLP(c)

    def forward(self, hidden_states, use_cache):
        residual = hidden_states
        attn_output, present = self.attn(self.ln_1(hidden_states), use_cache)
        hidden_states = attn_output + residual
        residual = hidden_states
        hidden_states = residual + self.mlp(self.ln_2(hidden_states))
        return hidden_states, present


class GPT2LMHeadModel(nn.Module):
    """GPT2LMHeadModel with GPT2Config's defaults (use_cache=True: each block's key and value are
    returned as `presents`, alive until the caller drops the outputs), the LM head tied to wte."""

    def __init__(self, c):
        super().__init__()
        self.c = c
        self.wte = nn.Embedding(c["vocab"], c["hidden"])
        self.wpe = nn.Embedding(c["positions"], c["hidden"])
        self.drop = nn.Dropout(0.1)
        self.h = nn.ModuleList(GPT2Block(c) for _ in range(c["layers"]))
        self.ln_f = nn.LayerNorm(c["hidden"], eps=1e-5)
        self.lm_head = nn.Linear(c["hidden"], c["vocab"], bias=False)
        self.lm_head.weight = self.wte.weight
        self.embeddings = nn.Identity()  # a hook point: the stage `embeddings`

    def transformer(self, input_ids):
        """GPT2Model.forward: its locals (inputs_embeds, position_embeds) live until it returns."""
        input_shape = input_ids.size()
        input_ids = input_ids.view(-1, input_shape[-1])
        set_label("forward embeddings")
        position_ids = torch.arange(0, input_shape[-1], dtype=torch.long, device=input_ids.device)
        position_ids = position_ids.unsqueeze(0).view(-1, input_shape[-1])
        inputs_embeds = self.wte(input_ids)
        position_embeds = self.wpe(position_ids)
        hidden_states = inputs_embeds + position_embeds
        hidden_states = self.drop(hidden_states)
        hidden_states = self.embeddings(hidden_states)
        presents = ()
        for block in self.h:
            outputs = block(hidden_states, use_cache=True)
            hidden_states = outputs[0]
            presents = presents + (outputs[1],)
        hidden_states = self.ln_f(hidden_states)
        return hidden_states, presents

    def forward(self, input_ids, labels):
        hidden_states, presents = self.transformer(input_ids)
        lm_logits = self.lm_head(hidden_states)
        set_label("forward loss")
        labels = labels.to(lm_logits.device)
        shift_logits = lm_logits[..., :-1, :].contiguous()
        shift_labels = labels[..., 1:].contiguous()
        loss = nn.CrossEntropyLoss()(shift_logits.view(-1, shift_logits.size(-1)), shift_labels.view(-1))
        return {"loss": loss, "logits": lm_logits, "past_key_values": presents}


class BertEmbeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.word_embeddings = nn.Embedding(c["vocab"], c["hidden"], padding_idx=0)
        self.position_embeddings = nn.Embedding(c["positions"], c["hidden"])
        self.token_type_embeddings = nn.Embedding(2, c["hidden"])
        self.LayerNorm = nn.LayerNorm(c["hidden"], eps=1e-12)
        self.dropout = nn.Dropout(0.1)
        self.register_buffer("position_ids", torch.arange(c["positions"]).expand((1, -1)))
        self.register_buffer("token_type_ids", torch.zeros(self.position_ids.size(), dtype=torch.long))

    def forward(self, input_ids):
        seq_length = input_ids.size()[1]
        position_ids = self.position_ids[:, 0:seq_length]
        token_type_ids = self.token_type_ids[:, :seq_length].expand(input_ids.size()[0], seq_length)
        embeddings = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
        embeddings += self.position_embeddings(position_ids)
        return self.dropout(self.LayerNorm(embeddings))


class BertSelfAttention(nn.Module):
    """Eager self-attention. Its locals (the Q/K/V projections, the masked scores) live until it returns."""

    def __init__(self, c):
        super().__init__()
        h = c["hidden"]
        self.num_attention_heads, self.attention_head_size = c["heads"], h // c["heads"]
        self.all_head_size = h
        self.query, self.key, self.value = nn.Linear(h, h), nn.Linear(h, h), nn.Linear(h, h)
        self.dropout = nn.Dropout(0.1)

    def transpose_for_scores(self, x):
        return x.view(x.size()[:-1] + (self.num_attention_heads, self.attention_head_size)).permute(0, 2, 1, 3)

    def forward(self, hidden_states, attention_mask):
        mixed_query_layer = self.query(hidden_states)
        key_layer = self.transpose_for_scores(self.key(hidden_states))
        value_layer = self.transpose_for_scores(self.value(hidden_states))
        query_layer = self.transpose_for_scores(mixed_query_layer)
        attention_scores = torch.matmul(query_layer, key_layer.transpose(-1, -2))
        attention_scores = attention_scores / math.sqrt(self.attention_head_size)
        attention_scores = attention_scores + attention_mask
        attention_probs = nn.Softmax(dim=-1)(attention_scores)
        attention_probs = self.dropout(attention_probs)
        context_layer = torch.matmul(attention_probs, value_layer)
        context_layer = context_layer.permute(0, 2, 1, 3).contiguous()
        context_layer = context_layer.view(context_layer.size()[:-2] + (self.all_head_size,))
        return (context_layer,)


class BertSelfOutput(nn.Module):
    """BertSelfOutput and BertOutput: dense, dropout, LayerNorm(· + input)."""

    def __init__(self, inner, hidden):
        super().__init__()
        self.dense = nn.Linear(inner, hidden)
        self.LayerNorm = nn.LayerNorm(hidden, eps=1e-12)
        self.dropout = nn.Dropout(0.1)

    def forward(self, hidden_states, input_tensor):
        hidden_states = self.dense(hidden_states)
        hidden_states = self.dropout(hidden_states)
        hidden_states = self.LayerNorm(hidden_states + input_tensor)
        return hidden_states


class BertAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self = BertSelfAttention(c)
        self.output = BertSelfOutput(c["hidden"], c["hidden"])

    def forward(self, hidden_states, attention_mask):
        self_outputs = self.self(hidden_states, attention_mask)
        attention_output = self.output(self_outputs[0], hidden_states)
        return (attention_output,) + self_outputs[1:]


class BertIntermediate(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden"], 4 * c["hidden"])

    def forward(self, hidden_states):
        hidden_states = self.dense(hidden_states)
        return F.gelu(hidden_states)  # ACT2FN["gelu"]: GELUActivation, nn.functional.gelu


class BertLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = BertAttention(c)
        self.intermediate = BertIntermediate(c)
        self.output = BertSelfOutput(4 * c["hidden"], c["hidden"])

    def forward(self, hidden_states, attention_mask):
        self_attention_outputs = self.attention(hidden_states, attention_mask)
        attention_output = self_attention_outputs[0]
        layer_output = self.feed_forward_chunk(attention_output)  # apply_chunking_to_forward, chunk size 0
        return (layer_output,)

    def feed_forward_chunk(self, attention_output):
        intermediate_output = self.intermediate(attention_output)
        layer_output = self.output(intermediate_output, attention_output)
        return layer_output


class BertForSequenceClassification(nn.Module):
    """BertModel (embeddings, post-LN layers, pooler) + dropout + a 2-way classifier, cross-entropy,
    with transformers' module boundaries (the Python locals of each forward live until it returns)."""

    def __init__(self, c):
        super().__init__()
        h = c["hidden"]
        self.c = c
        self.embeddings = BertEmbeddings(c)
        self.layer = nn.ModuleList(BertLayer(c) for _ in range(c["layers"]))
        self.pooler = nn.Linear(h, h)
        self.dropout = nn.Dropout(0.1)
        self.classifier = nn.Linear(h, c["labels"])
        self.head = nn.Identity()  # a hook point: the stage `head`

    def bert(self, input_ids):
        """BertModel.forward: the extended attention mask, embeddings, encoder, pooler."""
        batch_size, seq_length = input_ids.size()
        set_label("forward embeddings")
        attention_mask = torch.ones((batch_size, seq_length), device=input_ids.device)
        extended_attention_mask = attention_mask[:, None, None, :]
        extended_attention_mask = extended_attention_mask.to(dtype=torch.float32)
        extended_attention_mask = (1.0 - extended_attention_mask) * torch.finfo(torch.float32).min
        embedding_output = self.embeddings(input_ids)
        hidden_states = embedding_output
        for layer_module in self.layer:
            layer_outputs = layer_module(hidden_states, extended_attention_mask)
            hidden_states = layer_outputs[0]
        sequence_output = hidden_states
        set_label("forward head")
        first_token_tensor = sequence_output[:, 0]  # BertPooler
        pooled_output = torch.tanh(self.pooler(first_token_tensor))
        return (sequence_output, pooled_output)

    def forward(self, input_ids, labels):
        outputs = self.bert(input_ids)
        pooled_output = self.dropout(outputs[1])
        logits = self.head(self.classifier(pooled_output))
        set_label("forward loss")
        loss = nn.CrossEntropyLoss()(logits.view(-1, self.c["labels"]), labels.view(-1))
        return {"loss": loss, "logits": logits}


GPT2 = {"hidden": 768, "layers": 12, "heads": 12, "vocab": 50257, "positions": 1024, "seq": 1024}
BERT_BASE = {"hidden": 768, "layers": 12, "heads": 12, "vocab": 30522, "positions": 512, "seq": 512, "labels": 2}
DRY = {"hidden": 64, "layers": 2, "heads": 4, "vocab": 97, "positions": 32, "seq": 32, "labels": 2}


# --- the workloads --------------------------------------------------------------------------------

class Workload:
    """A model, its stages (for the labels) and a batch maker; `step_loss(batch)` runs forward and the loss."""

    def __init__(self, name, dry_run=False, precision="fp32", device="cpu"):
        self.name = name
        # amp: torch.autocast around forward and the loss, backward and the optimizer outside, as
        # torch.cuda.amp users write it. On the CPU torch 1.13 autocasts to bf16 only; for the CNNs'
        # ops its policy matches CUDA's fp16 one (docs/memory-model.md, "amp, measured"), and both
        # are 2 bytes. The transformers are refused: CUDA runs layer_norm and softmax in fp32, the
        # CPU in bf16, so their activations would differ.
        self.autocast = {"cpu": torch.bfloat16, "cuda": torch.float16}[device] if precision == "amp" else None
        self.device = device
        if precision not in ("fp32", "amp") or (precision == "amp" and name not in ("resnet50", "resnet152", "vgg16")):
            raise SystemExit(f"{name}/{precision}: only fp32, and amp for resnet50/resnet152/vgg16, are measured "
                             "(see docs/memory-model.md on amp)")
        torch.manual_seed(0)
        if name in ("resnet50", "resnet152", "vgg16"):
            torchvision = import_torchvision()
            self.model = getattr(torchvision.models, name)(weights=None)
            self.image = 64 if dry_run else 224
            if name == "vgg16":
                stages = [(f"features.{i}", m) for i, m in enumerate(self.model.features)]
                stages += [("avgpool", self.model.avgpool)]
                stages += [(f"classifier.{i}", m) for i, m in enumerate(self.model.classifier)]
            else:
                stages = [(n, getattr(self.model, n)) for n in ("conv1", "bn1", "relu", "maxpool")]
                for group in ("layer1", "layer2", "layer3", "layer4"):
                    stages += [(f"{group}.{i}", block) for i, block in enumerate(getattr(self.model, group))]
                stages += [("avgpool", self.model.avgpool), ("fc", self.model.fc)]
            self.stages = stages
            self.kind = "cnn"
        elif name == "gpt2":
            self.c = DRY if dry_run else GPT2
            self.model = GPT2LMHeadModel(self.c)
            self.stages = [("embeddings", self.model.embeddings)] + [(f"layers.{i}", b) for i, b in enumerate(self.model.h)]
            self.stages += [("head", self.model.ln_f)]
            self.kind = "lm"
        elif name == "bert-base":
            self.c = DRY if dry_run else BERT_BASE
            self.model = BertForSequenceClassification(self.c)
            self.stages = [("embeddings", self.model.embeddings)] + [(f"layers.{i}", b) for i, b in enumerate(self.model.layer)]
            self.stages += [("head", self.model.head)]
            self.kind = "classifier"
        else:
            raise SystemExit(f"unknown model {name}")
        self.model.train()
        # Buffers (GPT-2's causal masks, BERT's position ids) are model state like the weights.
        self.parameter_count = sum(p.numel() for p in self.model.parameters())

    def make_batch(self, batch):
        torch.manual_seed(1)
        if self.kind == "cnn":
            return torch.randn(batch, 3, self.image, self.image), torch.randint(0, 1000, (batch,))
        ids = torch.randint(0, self.c["vocab"], (batch, self.c["seq"]))
        if self.kind == "lm":
            return ids, ids  # labels = input_ids: the same tensor, as the usual call passes it
        return ids, torch.randint(0, self.c["labels"], (batch,))

    def loss(self, inputs, labels):
        """Forward and loss as a training loop calls them: the model's other outputs are dropped at once."""
        if self.kind == "cnn":
            if self.autocast is None:
                logits = self.model(inputs)
                set_label("forward loss")
                return F.cross_entropy(logits, labels)
            # Leaving the outermost autocast clears its weight-cast cache; the 16-bit weight copies
            # that autograd saved stay live until backward has used them, as on CUDA.
            with torch.autocast(self.device, dtype=self.autocast):
                logits = self.model(inputs)
                set_label("forward loss")
                return F.cross_entropy(logits, labels)
        return self.model(inputs, labels)["loss"]


# --- torch 2.x's optimizer steps, written out (see the module docstring) --------------------------------

class Optimizer:
    """SGD (optionally with momentum) and Adam with torch's defaults (lr aside), as torch 2.x steps them:
    `foreach` (_multi_tensor_*: one op over all tensors, PyTorch 2's default on CUDA) or `single`
    (_single_tensor_*: a loop over the tensors)."""

    def __init__(self, params, kind, implementation):
        self.params = [p for p in params if p.requires_grad]
        self.kind, self.implementation = kind, implementation
        self.state = {}
        self.steps = 0

    def zero_grad(self):
        for p in self.params:
            p.grad = None  # set_to_none=True, torch 2's default

    @torch.no_grad()
    def step(self):
        params = [p for p in self.params if p.grad is not None]
        grads = [p.grad for p in params]
        self.steps += 1
        if self.kind == "sgd":
            (torch._foreach_add_(params, grads, alpha=-1e-3) if self.implementation == "foreach"
             else [p.add_(g, alpha=-1e-3) for p, g in zip(params, grads)])
        elif self.kind == "momentum":
            self._momentum(params, grads, 0.9)
        else:
            self._adam(params, grads, 0.9, 0.999, 1e-8, 1e-3)

    def _momentum(self, params, grads, momentum):
        # _multi_tensor_sgd / _single_tensor_sgd, dampening 0, no nesterov, no weight decay.
        first = "momentum_buffer" not in self.state
        if first:
            self.state["momentum_buffer"] = [torch.clone(g).detach() for g in grads]
            bufs = self.state["momentum_buffer"]
        else:
            bufs = self.state["momentum_buffer"]
            if self.implementation == "foreach":
                torch._foreach_mul_(bufs, momentum)
                torch._foreach_add_(bufs, grads, alpha=1)
            else:
                for buf, g in zip(bufs, grads):
                    buf.mul_(momentum).add_(g, alpha=1)
        if self.implementation == "foreach":
            torch._foreach_add_(params, bufs, alpha=-1e-3)
        else:
            for p, buf in zip(params, bufs):
                p.add_(buf, alpha=-1e-3)

    def _adam(self, params, grads, beta1, beta2, eps, lr):
        if "exp_avg" not in self.state:
            self.state["exp_avg"] = [torch.zeros_like(p, memory_format=torch.preserve_format) for p in params]
            self.state["exp_avg_sq"] = [torch.zeros_like(p, memory_format=torch.preserve_format) for p in params]
        exp_avgs, exp_avg_sqs = self.state["exp_avg"], self.state["exp_avg_sq"]
        step = self.steps
        bias_correction1 = 1 - beta1 ** step
        bias_correction2 = 1 - beta2 ** step
        step_size = lr / bias_correction1
        bias_correction2_sqrt = bias_correction2 ** 0.5
        if self.implementation == "foreach":
            # _multi_tensor_adam: lerp_ (here mul_ + add_, both in place), mul_, addcmul_, then one
            # out-of-place sqrt over every tensor, divided and shifted in place, and addcdiv_.
            torch._foreach_mul_(exp_avgs, beta1)
            torch._foreach_add_(exp_avgs, grads, alpha=1 - beta1)
            torch._foreach_mul_(exp_avg_sqs, beta2)
            torch._foreach_addcmul_(exp_avg_sqs, grads, grads, 1 - beta2)
            exp_avg_sq_sqrt = torch._foreach_sqrt(exp_avg_sqs)
            torch._foreach_div_(exp_avg_sq_sqrt, bias_correction2_sqrt)
            torch._foreach_add_(exp_avg_sq_sqrt, eps)
            torch._foreach_addcdiv_(params, exp_avgs, exp_avg_sq_sqrt, -step_size)
            del exp_avg_sq_sqrt
        else:
            # _single_tensor_adam: denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps).
            for param, grad, exp_avg, exp_avg_sq in zip(params, grads, exp_avgs, exp_avg_sqs):
                exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
                param.addcdiv_(exp_avg, denom, value=-step_size)
                del denom


# --- one measured step ----------------------------------------------------------------------------

def measure(model_name, precision, optimizer, implementation, batch, dry_run=False):
    """Records one steady-state step at `batch`: after a warm-up step (optimizer states exist) and
    zero_grad, forward + loss, backward, optimizer.step, zero_grad. Returns the records and totals."""
    global RECORDER
    gc.collect()
    empty = SHIM.live()
    workload = Workload(model_name, dry_run, precision)
    opt = Optimizer(workload.model.parameters(), optimizer, implementation)
    weights = SHIM.live() - empty
    warm_inputs = workload.make_batch(1)
    workload.loss(*warm_inputs).backward()
    opt.step()
    opt.zero_grad()
    del warm_inputs
    gc.collect()
    states = SHIM.live()
    inputs = workload.make_batch(batch)
    start = SHIM.live()
    handles = label_stages(workload.stages)
    recorder = Recorder()
    RECORDER = recorder
    SHIM.reset_peak()
    started = time.perf_counter()
    with recorder:
        recorder.mark("step start")
        loss = workload.loss(*inputs)
        set_label("backward loss")
        recorder.mark("outputs dropped")
        loss.backward()
        set_label("optimizer.step")
        recorder.mark("backward done")
        opt.step()
        set_label("zero_grad")
        opt.zero_grad()
        recorder.mark("zero_grad")
    seconds = time.perf_counter() - started
    RECORDER = None
    for h in handles:
        h.remove()
    del loss, inputs
    result = {
        "records": recorder.records,
        "modelStateBytes": states - empty,
        "inputBytes": start - states,
        "weightBytes": weights,
        "parameterCount": workload.parameter_count,
        "seconds": round(seconds, 1),
    }
    del opt, workload
    gc.collect()
    return result


def fit(r1, r2, b1, b2):
    """Each boundary's live bytes as F + P*b from two batches; the boundaries must be the same ops."""
    if [(l, o) for l, o, _, _ in r1] != [(l, o) for l, o, _, _ in r2]:
        diverge = next(i for i, (x, y) in enumerate(zip(r1, r2)) if x[:2] != y[:2]) if len(r1) == len(r2) else min(len(r1), len(r2))
        raise RuntimeError(f"batches {b1} and {b2} ran different ops (from boundary {diverge}: {r1[diverge][:2]} vs {r2[diverge][:2]})")
    lines = []
    for (label, op, live1, inside1), (_, _, live2, inside2) in zip(r1, r2):
        p = (live2 - live1) / (b2 - b1)
        lines.append({"phase": label, "op": op, "fixed": live1 - p * b1, "perSample": p,
                      "insideFixed": inside1 - (inside2 - inside1) / (b2 - b1) * b1, "insidePerSample": (inside2 - inside1) / (b2 - b1)})
    return lines


def peak_at(lines, batch, inside=False):
    key_f, key_p = ("insideFixed", "insidePerSample") if inside else ("fixed", "perSample")
    best = max(range(len(lines)), key=lambda i: lines[i][key_f] + lines[i][key_p] * batch)
    return lines[best][key_f] + lines[best][key_p] * batch, best


def max_batch(lines, budget):
    """The largest b with max_t F(t) + P(t)*b <= budget (the peak is increasing in b)."""
    low, high = 0, 1
    while peak_at(lines, high)[0] <= budget:
        low, high = high, high * 2
    while high - low > 1:
        middle = (low + high) // 2
        if peak_at(lines, middle)[0] <= budget:
            low = middle
        else:
            high = middle
    return low


def envelope(lines, up_to):
    """The boundaries that are the peak for some batch in [1, up_to]: what the peak curve is made of."""
    chosen, b = [], 1
    while b <= up_to:
        _, i = peak_at(lines, b)
        if i not in chosen:
            chosen.append(i)
        # the next batch at which another line overtakes line i
        f, p = lines[i]["fixed"], lines[i]["perSample"]
        nxt = up_to + 1
        for other in lines:
            if other["perSample"] > p:
                crossing = (f - other["fixed"]) / (other["perSample"] - p)
                nxt = min(nxt, max(b + 1, math.floor(crossing) + 1))
        b = nxt
    return chosen


def phase_curve(lines, batch):
    """The most live bytes in each labelled phase at a batch, in step order."""
    curve = {}
    for line in lines:
        value = line["fixed"] + line["perSample"] * batch
        curve[line["phase"]] = max(curve.get(line["phase"], 0), value)
    return [{"phase": phase, "bytes": round(value)} for phase, value in curve.items()]


# The aten ops torchvision's CNNs and F.cross_entropy reach under autocast. Which of them autocast
# registers a kernel for (a cast policy) or lets fall through (run in the input's dtype), on the CPU
# and on CUDA, read from this torch's own dispatch table: the stand-in holds where they agree.
AUTOCAST_OPS = ["aten::conv2d", "aten::batch_norm", "aten::relu_", "aten::max_pool2d", "aten::adaptive_avg_pool2d",
                "aten::flatten.using_ints", "aten::add_.Tensor", "aten::linear", "aten::addmm", "aten::dropout",
                "aten::cross_entropy_loss", "aten::log_softmax.int", "aten::nll_loss_nd", "aten::nll_loss"]


def autocast_kernels():
    table = {}
    for op in AUTOCAST_OPS:
        rows = dict(line.split(": ", 1) for line in torch._C._dispatch_dump_table(op).splitlines() if ": " in line)
        table[op] = {key: "fallthrough" if "fallthrough" in rows.get(key, "fallthrough") else "kernel" for key in ("AutocastCPU", "AutocastCUDA")}
    return table


def run_case(case, batches, check, dry_run):
    model, precision, optimizer, implementation = case.split("/")
    runs = {b: measure(model, precision, optimizer, implementation, b, dry_run) for b in sorted(set(batches + [check]))}
    b1, b2 = batches
    lines = fit(runs[b1]["records"], runs[b2]["records"], b1, b2)
    predicted, _ = peak_at(lines, check)
    measured_check = max(live for _, _, live, _ in runs[check]["records"])
    real_batch = max_batch(lines, BUDGET)
    chosen = envelope(lines, max(real_batch, check) + 1)
    peak_line = lines[peak_at(lines, real_batch)[1]]
    inside_check, _ = peak_at(lines, check, inside=True)
    result = {
        "case": case, "model": model, "precision": precision, "optimizer": optimizer, "optimizerImpl": implementation,
        "parameterCount": runs[b1]["parameterCount"],
        "modelStateBytes": runs[b1]["modelStateBytes"],
        "inputBytesPerBatch": {str(b): runs[b]["inputBytes"] for b in runs},
        "batches": [b1, b2],
        "boundaries": len(lines),
        "envelope": [{k: (round(v) if isinstance(v, float) else v) for k, v in lines[i].items()} | {"index": i} for i in chosen],
        "checkBatch": check,
        "predictedPeakAtCheckBytes": round(predicted),
        "measuredPeakAtCheckBytes": measured_check,
        "insideOpsPeakAtCheckBytes": round(inside_check),
        "budgetBytes": BUDGET,
        "maxBatchForBudget": real_batch,
        "peakAtMaxBatchBytes": round(peak_at(lines, real_batch)[0]),
        "peakPhaseAtMaxBatch": peak_line["phase"],
        "peakOpAtMaxBatch": peak_line["op"],
        "peakPhaseAtCheck": lines[peak_at(lines, check)[1]]["phase"],
        "phasesAtMaxBatch": phase_curve(lines, real_batch),
        "phasesAtCheck": phase_curve(lines, check),
        "seconds": {str(b): runs[b]["seconds"] for b in runs},
    }
    return result


# --- the self-check: one nn.Linear, by hand ---------------------------------------------------------

def is_view(op):
    """Whether an aten op returns a view of its input: its schema marks the result as an alias (`-> Tensor(a)`)."""
    result = getattr(torch.ops.aten, op).default._schema.returns[0]
    return result.alias_info is not None and not result.alias_info.is_write


def self_check():
    """One Linear(1000 -> 300) step at batch 7, every boundary's live bytes derived by hand."""
    gc.collect()
    base = SHIM.live()
    torch.manual_seed(0)
    layer = nn.Linear(1000, 300)
    x = torch.randn(7, 1000)
    w, b, xb = rounded(300 * 1000 * 4), rounded(300 * 4), rounded(7 * 1000 * 4)
    assert (w, b, xb) == (1200128, 1536, 28160), (w, b, xb)
    assert SHIM.live() - base == w + b + xb, (SHIM.live() - base, w + b + xb)
    out_b, scalar = rounded(7 * 300 * 4), 0  # the loss and its gradient are 0-dim: not counted
    recorder = Recorder()
    with recorder:
        loss = layer(x).sum()
        loss.backward()
    got = [(op, live - base) for _, op, live, _ in recorder.records]
    # By hand, the aten ops that make a tensor for F.linear, sum and their backward. A boundary is
    # recorded as the op returns, while its inputs are still referenced: an input nothing else
    # holds is freed just after. Between them run views (t, expand, view, detach), which allocate
    # nothing: how many, and where, is the dispatcher's business, not the step's. torch 1.13's
    # dispatch mode sees each detach() twice (one Tensor.detach() records ['detach', 'detach']), torch
    # 2.13's once, so AccumulateGrad's detach of the two .grad tensors was 4 boundaries under 1.13 and
    # is 2 under 2.13 (15 boundaries against 13). The check counts the ops that allocate, each to the
    # byte, and that every view boundary left the live bytes as they were.
    states = w + b + xb  # weight, bias, input
    after_forward = states + 2 * scalar  # the loss, and backward's ones_like gradient of it
    with_grad_weight = after_forward + w
    with_grads = with_grad_weight + b
    expected = [
        ("addmm", states + out_b),  # out = bias + x @ w.t(): 7x300 fp32
        ("sum", states + out_b + scalar),  # the loss; out is freed next (nothing saved it)
        ("ones_like", after_forward),  # backward starts: d loss / d loss
        ("mm", with_grad_weight),  # grad of the weight: 300x1000 fp32
        ("sum", with_grads),  # grad of the bias: 300 fp32; AccumulateGrad keeps both as .grad (detached views)
    ]
    views = [(i, op, live) for i, (op, live) in enumerate(got) if is_view(op)]
    for i, op, live in views:
        before = got[i - 1][1] if i > 0 else states
        if live != before:
            raise SystemExit(f"self-check: boundary {i}, the view {op}, changed the live bytes from {before} to {live}: {got}")
    if not any(op == "detach" for _, op, _ in views) or got[-1][0] != "detach":
        raise SystemExit(f"self-check: expected AccumulateGrad's detach() to end the step, measured {got}")
    allocating = [(op, live) for op, live in got if not is_view(op)]
    if allocating != expected:
        raise SystemExit(f"self-check: expected the ops that allocate to be {expected}, measured {allocating} (all boundaries: {got})")
    # Dropout as CUDA runs it: the output and a 1-byte bool mask (7000 B), not a float mask.
    noisy = torch.randn(7, 1000, requires_grad=True)
    before = SHIM.live()
    dropped = F.dropout(noisy, 0.5, True)
    if SHIM.live() - before != rounded(7 * 1000 * 4) + rounded(7 * 1000):
        raise SystemExit(f"self-check: dropout kept {SHIM.live() - before} bytes, expected {rounded(28000) + rounded(7000)}")
    del dropped
    return {"layer": "Linear(1000, 300), batch 7, fp32", "boundaries": got, "expected": expected, "views": len(views),
            "dropout": "7x1000 fp32: output 28160 B + bool mask 7168 B"}


def measure_cuda(model_name, precision, optimizer, implementation, batches):
    """On a GPU (not yet run: docs/validation.md): one step per batch, as measure() runs it, with
    torch.optim's own implementation, reporting torch.cuda.max_memory_allocated() (to compare with
    vramfit's timeline) and max_memory_reserved() (with its allocator emulation). amp runs fp16
    autocast with a GradScaler, as torch.cuda.amp's examples do: what the CPU's bf16 stand-in leaves out."""
    device = torch.device("cuda")
    workload = Workload(model_name, precision=precision, device="cuda")
    workload.model.to(device)
    params = [p for p in workload.model.parameters() if p.requires_grad]
    flags = {"foreach": implementation == "foreach"} | ({"fused": True} if implementation == "fused" else {})
    if optimizer == "adam":
        opt = torch.optim.Adam(params, lr=1e-3, **flags)
    else:
        opt = torch.optim.SGD(params, lr=1e-3, momentum=0.9 if optimizer == "momentum" else 0, **flags)
    on = lambda tensors: [t.to(device) for t in tensors]  # noqa: E731
    scaler = torch.cuda.amp.GradScaler(enabled=precision == "amp")

    def step(inputs):
        scaler.scale(workload.loss(*inputs)).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)

    step(on(workload.make_batch(1)))
    runs = []
    for batch in batches:
        inputs = on(workload.make_batch(batch))
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        step(inputs)
        torch.cuda.synchronize()
        runs.append({"batch": batch, "allocatedBeforeBytes": before, "maxAllocatedBytes": torch.cuda.max_memory_allocated(),
                     "maxReservedBytes": torch.cuda.max_memory_reserved()})
        del inputs
    return runs


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--self-check", action="store_true", help="one Linear layer's step, checked to the byte by hand")
    parser.add_argument("--cases", default=None, help="model/precision/optimizer/impl, comma-separated (default: the fixture's)")
    parser.add_argument("--batches", default="2,3", help="the two batches the lines are fitted from (not 1: at batch 1 some reshapes are views that copy at larger batches)")
    parser.add_argument("--check", type=int, default=4, help="the batch measured to check the fit")
    parser.add_argument("--dry-run", action="store_true", help="tiny shapes, for tests")
    parser.add_argument("--out", default=None)
    parser.add_argument("--merge", action="store_true", help="with --out and --cases: replace those cases in the existing file, keep the others")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                        help="cuda: measure torch.cuda.max_memory_allocated()/max_memory_reserved() on a GPU instead (no shim)")
    args = parser.parse_args()
    if args.device == "cuda":
        cases = (args.cases or "resnet50/fp32/adam/foreach,resnet152/fp32/momentum/foreach,vgg16/fp32/adam/foreach,"
                 "gpt2/fp32/adam/foreach,bert-base/fp32/adam/foreach,resnet50/amp/sgd/foreach,vgg16/amp/adam/foreach").split(",")
        batches = [int(b) for b in args.batches.split(",")] + [args.check]
        results = []
        for case in cases:
            model, precision, optimizer, implementation = case.split("/")
            results.append({"case": case, "runs": measure_cuda(model, precision, optimizer, implementation, batches)})
        document = {"description": "One training step per batch on a GPU: torch.cuda.max_memory_allocated() and max_memory_reserved() "
                    "(reset before each step), the models and steps of the CPU reference.",
                    "command": "python3 scripts/reference/measure-step-peak.py --device cuda " + " ".join(a for a in sys.argv[1:] if a not in ("--device", "cuda")),
                    "torch": torch.__version__, "gpu": torch.cuda.get_device_name(), "cases": results}
        text = json.dumps(document, indent=1) + "\n"
        (open(args.out, "w").write(text) if args.out else sys.stdout.write(text))
        return
    torch.set_num_threads(1)
    if args.self_check:
        json.dump(self_check(), sys.stdout, indent=1)
        sys.stdout.write("\nself-check passed\n")
        return
    cases = args.cases.split(",") if args.cases else [
        f"{m}/fp32/{o}/foreach" for m in ("bert-base", "gpt2", "resnet50", "resnet152", "vgg16") for o in ("sgd", "momentum", "adam")
    ] + ["vgg16/fp32/adam/single", "gpt2/fp32/adam/single"]
    batches = [int(b) for b in args.batches.split(",")]
    results = []
    for case in cases:
        started = time.perf_counter()
        results.append(run_case(case, batches, args.check, args.dry_run))
        r = results[-1]
        print(f"{case}: real max batch {r['maxBatchForBudget']} for 79 GiB, peak in {r['peakPhaseAtMaxBatch']}; "
              f"batch {args.check}: predicted {r['predictedPeakAtCheckBytes']} measured {r['measuredPeakAtCheckBytes']} "
              f"({time.perf_counter() - started:.0f} s)", file=sys.stderr, flush=True)
    document = {
        "description": "The peak of allocated bytes (each tensor's storage rounded up to 512 B, as torch.cuda."
        "memory_allocated counts it: no CUDA context, no allocator segments) over one steady-state training "
        "step (forward, loss, backward, optimizer.step, zero_grad), measured on the CPU at every aten op "
        "boundary at two batches and fitted per boundary as fixed + perSample * batch; CUDA's native_dropout "
        "and torch 2.x's optimizer steps emulated. `envelope` holds the boundaries that are the peak for some "
        "batch up to maxBatchForBudget.",
        "command": COMMAND if args.out and not args.cases else "/usr/bin/python3 scripts/reference/measure-step-peak.py " + " ".join(sys.argv[1:]),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "device": "cpu",
        "cases": results,
    }
    if any(r["precision"] == "amp" for r in results):
        document["autocast"] = (
            "amp cases: torch.autocast('cpu', dtype=torch.bfloat16) around forward and the loss, backward and the "
            "optimizer outside: torch 1.13's CPU stand-in for torch.cuda.amp's fp16 autocast (both 2 bytes; "
            "not measured on a GPU). No GradScaler (CUDA-only in 1.13): on CUDA it adds a scaled 0-dim loss "
            "and unscales the gradients in place. `autocastKernels`: which ops autocast casts (kernel) or "
            "leaves to the input's dtype (fallthrough) on each device, from this torch's dispatch table.")
        document["autocastKernels"] = autocast_kernels()
    if args.merge and args.out and os.path.exists(args.out):
        with open(args.out) as f:
            previous = json.load(f)
        fresh = {r["case"]: r for r in results}
        merged = [fresh.pop(r["case"], r) for r in previous["cases"]] + list(fresh.values())
        document = dict(previous, cases=merged, torch=torch.__version__)
    text = json.dumps(document, indent=1) + "\n"
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
