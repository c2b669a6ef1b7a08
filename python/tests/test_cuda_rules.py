"""What the fake CUDA device follows from CUDA rather than the CPU: autocast's op lists, and the attention kernel
PyTorch's CUDA build would choose (vramfit_trace/attention.py cites sdp_utils.cpp)."""
import os

import torch

from vramfit_trace.attention import AttentionLog, select_kernel
from vramfit_trace.cli import parse
from vramfit_trace.fake_cuda import fake_mode
from vramfit_trace.sources import resolve
from vramfit_trace.tracer import trace_batch

CONFIGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "configs")


def fake(*shape, dtype=torch.float16, grad=True):
    return torch.empty(*shape, dtype=dtype, device="cuda", requires_grad=grad)


def test_autocast_runs_softmax_layer_norm_rms_norm_in_fp32():
    with fake_mode():
        x = fake(4, 64, dtype=torch.float32)
        with torch.autocast("cuda", dtype=torch.float16):
            assert (x @ x.T).dtype == torch.float16
            assert torch.softmax(x @ x.T, -1).dtype == torch.float32
            assert torch.nn.functional.layer_norm(x, (64,)).dtype == torch.float32
            assert torch.nn.functional.rms_norm(x, (64,)).dtype == torch.float32
            assert torch.log_softmax(x @ x.T, -1).dtype == torch.float32


def test_kernel_choice_follows_sdp_utils():
    with fake_mode():
        q, kv = fake(2, 8, 128, 64), fake(2, 8, 128, 64)
        gq, gkv = fake(2, 8, 128, 64, dtype=torch.float32), fake(2, 2, 128, 64, dtype=torch.float32)
        bq = fake(2, 8, 128, 64, dtype=torch.bfloat16)
        assert select_kernel((8, 0), q, kv, kv, None, 0.0, True, False, (2, 13)) == "flash"
        assert select_kernel((9, 0), bq, bq, bq, None, 0.0, True, False, (2, 14)) == "cudnn"  # cuDNN first on sm_90
        assert select_kernel((9, 0), bq, bq, bq, None, 0.0, True, False, (2, 13)) == "flash"
        assert select_kernel((7, 5), q, kv, kv, None, 0.0, True, False, (2, 13)) == "efficient"  # flash needs sm_80
        assert select_kernel((8, 0), gq, gq, gq, None, 0.0, True, False, (2, 13)) == "efficient"  # fp32: not flash
        assert select_kernel((8, 0), gq, gkv, gkv, None, 0.0, True, True, (2, 13)) == "math"  # fp32 with GQA
        mask = torch.empty(2, 1, 128, 128, dtype=torch.bool, device="cuda")
        assert select_kernel((8, 0), q, kv, kv, mask, 0.0, False, False, (2, 13)) == "efficient"  # flash takes no mask


def test_fused_attention_keeps_no_scores():
    """bf16 on sm_80: flash attention, whose memory is the output and the logsumexp, not b·h·s² scores."""
    seq, heads, batch = 256, 4, 2  # scores (2·4·256²·2 B = 1 MiB) outgrow the logits (2·256·256·4 B)
    options = parse(["--hf-config", os.path.join(CONFIGS, "tiny-llama.json"), "--seq", str(seq), "--precision", "bf16",
                     "--compute-capability", "8.0"])
    build, _env = resolve(options)
    log = AttentionLog(options.compute_capability)
    with log.recording():
        events, _recorder, _workload = trace_batch(build, options, batch)
    assert [e["kernel"] for e in log.entries] == ["flash", "flash"]
    assert [e["module"] for e in log.entries] == ["model.layers.0.self_attn", "model.layers.1.self_attn"]
    scores = batch * heads * seq * seq * 2
    assert not [e for e in events if e[0] == "a" and e[2] >= scores], "an s² tensor was allocated"
    assert any(e[4] == "aten::_scaled_dot_product_flash_attention" for e in events if e[0] == "a")


def test_amp_chooses_the_kernel_for_autocast_inputs():
    """Under fp16 autocast, SDPA's inputs are cast to fp16 before the kernel is chosen (rotary leaves k in fp32)."""
    options = parse(["--hf-config", os.path.join(CONFIGS, "tiny-llama.json"), "--seq", "16", "--precision", "amp",
                     "--compute-capability", "8.0"])
    build, _env = resolve(options)
    log = AttentionLog(options.compute_capability)
    with log.recording():
        trace_batch(build, options, 2)
    assert [e["kernel"] for e in log.entries] == ["flash", "flash"]
