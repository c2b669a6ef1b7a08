"""The attention kernel a CUDA build of PyTorch would run, chosen as it chooses, and run for its memory.

On fake CUDA tensors, F.scaled_dot_product_attention takes the math path (the CPU build has no CUDA kernel
chooser), which keeps the s² scores: a real GPU runs a fused kernel that keeps the output and the logsumexp. This
module replaces F.scaled_dot_product_attention while tracing: it picks the backend the way
aten/src/ATen/native/transformers/cuda/sdp_utils.cpp (select_sdp_backend; read at pytorch/pytorch 001f694a, the
rules torch 2.13 and 2.14 share unless noted) does for the target's compute capability, and calls that backend's
aten op, whose fake (meta) kernel allocates what the real one does.
"""
import contextlib

import torch
import torch.nn.functional as F

_original_sdpa = F.scaled_dot_product_attention


def sm_between(cc, low, high):
    return low <= cc <= high


def select_kernel(cc, q, k, v, attn_mask, dropout_p, is_causal, enable_gqa, torch_version):
    """flash | efficient | cudnn | math, for dense 4-d inputs (sdp_utils.cpp's filters, in its priority order)."""
    if q.dim() != 4 or k.dim() != 4 or v.dim() != 4:
        return "math"
    dtype = q.dtype
    half = dtype in (torch.float16, torch.bfloat16)
    low_precision_ok = dtype == torch.float16 or (dtype == torch.bfloat16 and cc >= (8, 0))
    d_qk, d_v = q.shape[-1], v.shape[-1]
    s_q, s_k = q.shape[-2], k.shape[-2]
    same_heads = q.shape[1] == k.shape[1] == v.shape[1]
    grad = torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v))
    nonzero = q.numel() > 0 and k.numel() > 0

    def heads_ok(supports_gqa):
        # check_batch_size_and_num_heads_dense: different head counts only with enable_gqa and a GQA-capable kernel
        return same_heads or (enable_gqa and supports_gqa and q.shape[1] % k.shape[1] == 0)

    def flash():
        if attn_mask is not None or not (d_qk == k.shape[-1] == d_v and d_qk <= 256):
            return False
        if not sm_between(cc, (8, 0), (12, 1)) or not low_precision_ok:
            return False
        if grad and (sm_between(cc, (8, 6), (8, 9)) or sm_between(cc, (12, 0), (12, 1))):
            if not (d_qk <= 192 or (dropout_p == 0 and d_qk > 224)):
                return False
        if is_causal and s_q != s_k:
            return False
        return heads_ok(True) and nonzero

    def efficient():
        if not sm_between(cc, (5, 0), (12, 1)):
            return False
        # minimum_gemm_alignment: 4 on sm80+, widened to 128 bits / element under tensor cores
        tensor_cores = cc >= (8, 0) or (cc >= (7, 0) and half)
        align = 4 if cc >= (8, 0) else 1
        if tensor_cores:
            align = max(align, 128 // (16 if half else 32))
        if not (d_qk == k.shape[-1] and d_qk % align == 0 and d_v % align == 0):
            return False
        allowed = (torch.float16, torch.float32, torch.bfloat16) if cc >= (8, 0) else (torch.float16, torch.float32)
        # GQA in the memory-efficient kernel is newer than torch 2.14 (the 2.13/2.14 filters require equal heads).
        return dtype in allowed and heads_ok(False) and nonzero

    def cudnn():
        if not sm_between(cc, (8, 0), (12, 1)) or not low_precision_ok:
            return False
        limit = 256 if cc[0] in (9, 10) and cc != (10, 7) else 128
        if not (d_qk <= limit and d_v <= limit and d_qk % 8 == 0 and d_v % 8 == 0 and s_k != 1):
            return False
        if grad and cc[0] in (9, 10) and not (max(d_qk, d_v) <= 128 or (d_qk, d_v) in ((192, 128), (256, 256))):
            return False
        if dropout_p * 16 != int(dropout_p * 16):
            return False
        return heads_ok(True) and nonzero

    # priority_order: cuDNN first on sm 9.x/10.x where the cuDNN at run time is newer than 9.15 (CUDA 13 wheels
    # ship 9.17); torch 2.13 puts flash first everywhere.
    prefer_cudnn = torch_version >= (2, 14) and cc[0] in (9, 10)
    order = [cudnn, flash, efficient] if prefer_cudnn else [flash, efficient]
    for kernel in order:
        if kernel():
            return kernel.__name__
    return "math"


def run_kernel(kernel, q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa):
    """The chosen backend's aten op (its output is the first result)."""
    grad = torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v))
    if kernel == "flash":
        return torch.ops.aten._scaled_dot_product_flash_attention(q, k, v, dropout_p, is_causal, False, scale=scale)[0]
    if kernel == "efficient":
        return torch.ops.aten._scaled_dot_product_efficient_attention(q, k, v, attn_mask, grad, dropout_p, is_causal, scale=scale)[0]
    if kernel == "cudnn":
        return torch.ops.aten._scaled_dot_product_cudnn_attention(q, k, v, attn_mask, grad, dropout_p, is_causal, False, scale=scale)[0]
    return _original_sdpa(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)


class AttentionLog:
    """Which kernel each attention module ran (docs/trace-format.md's `attention`)."""

    def __init__(self, capability):
        self.capability = tuple(capability)
        self.entries = []
        self.seen = set()
        self.module = None
        version = torch.__version__.split("+")[0].split(".")
        self.torch_version = (int(version[0]), int(version[1]))

    @contextlib.contextmanager
    def recording(self):
        log = self

        def sdpa(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
            if query.device.type == "cuda" and torch.is_autocast_enabled("cuda"):
                # scaled_dot_product_attention is on CUDA autocast's lower-precision list (autocast_mode.cpp): the
                # kernel is chosen for the cast inputs, which autocast would make before the op runs.
                low = torch.get_autocast_dtype("cuda")
                query, key, value = (t.to(low) if t.is_floating_point() else t for t in (query, key, value))
            kernel = select_kernel(log.capability, query, key, value, attn_mask, dropout_p, is_causal, enable_gqa,
                                   log.torch_version)
            if query.device.type != "cuda":
                kernel = "math"
            if log.module is not None and log.module not in log.seen:
                log.seen.add(log.module)
                log.entries.append({"module": log.module, "kernel": kernel})
            # Grouped K/V go to the fused kernels as they are: they read them in place (the meta kernels size the
            # output from the query).
            return run_kernel(kernel, query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)

        F.scaled_dot_product_attention = sdpa
        handle = torch.nn.modules.module.register_module_forward_pre_hook(self._enter)
        try:
            yield self
        finally:
            handle.remove()
            F.scaled_dot_product_attention = _original_sdpa

    def _enter(self, module, _inputs):
        name = getattr(module, "_vramfit_name", None)
        if name is not None and "attention" in type(module).__name__.lower():
            self.module = name
