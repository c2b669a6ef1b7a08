"""torchvision, timm, the user's own file (examples/trace-own-model.py) and LoRA through PEFT trace a step."""
import os

import pytest

from vramfit_trace.cli import parse
from vramfit_trace.errors import TraceError
from vramfit_trace.sources import blocks_of, resolve
from vramfit_trace.tracer import trace_batch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIGS = os.path.join(ROOT, "python", "tests", "configs")


def by_category(argv, batch=2):
    options = parse(argv)
    build, _env = resolve(options)
    events, _recorder, workload = trace_batch(build, options, batch)
    totals = {}
    for e in events:
        if e[0] == "a":
            totals[e[5]] = totals.get(e[5], 0) + e[2]
    return totals, workload


def test_torchvision_resnet18():
    totals, workload = by_category(["--torchvision", "resnet18", "--image", "32"])
    assert workload.counts() == (11_689_512, 11_689_512)  # torchvision's resnet18, as its docs list it
    assert totals["optimizerStates"] == 2 * totals["gradients"]


def test_timm_vit_tiny():
    totals, workload = by_category(["--timm", "vit_tiny_patch16_224"])
    assert workload.counts()[0] == 5_717_416  # timm's vit_tiny_patch16_224 (ImageNet-1k head)
    assert totals["activations"] > 0


def test_own_model_example():
    totals, workload = by_category(["--torch", os.path.join(ROOT, "examples", "trace-own-model.py") + ":make"])
    # 512·2048 + 2048 + 2·2048 (LayerNorm) + 2048·2048 + 2048 + 2048·10 + 10
    assert workload.counts()[0] == 512 * 2048 + 2048 + 2 * 2048 + 2048 * 2048 + 2048 + 2048 * 10 + 10
    assert totals["gradients"] >= 4 * workload.counts()[0]


def test_lora_trains_only_the_adapters():
    totals, workload = by_category(["--hf-config", os.path.join(CONFIGS, "tiny-llama.json"), "--seq", "16", "--lora-rank", "4"])
    total, trainable = workload.counts()
    # PEFT's llama default targets q_proj and v_proj: rank 4 × (in + out) per adapter, 2 layers.
    assert trainable == 2 * (4 * (64 + 64) + 4 * (64 + 32))
    assert totals["optimizerStates"] == 2 * totals["gradients"] < 4 * 512 * 8 * 2


def test_missing_function_is_one_line():
    with pytest.raises(TraceError, match="has no function 'nope'"):
        resolve(parse(["--torch", os.path.join(ROOT, "examples", "trace-own-model.py") + ":nope"]))


def test_inference_records_the_kv_cache():
    totals, _workload = by_category(["--hf-config", os.path.join(CONFIGS, "tiny-llama.json"), "--seq", "16", "--mode", "infer"])
    # 2 layers × (K and V) × batch 2 × 2 KV heads × seq 16 × head dim 16 × 4 bytes (fp32)
    assert totals["kvCache"] == 2 * 2 * 2 * 2 * 16 * 16 * 4
    assert "gradients" not in totals and "optimizerStates" not in totals


def test_checkpointing_wraps_each_block_of_torchvision_and_timm_models():
    # The rule (sources.blocks_of): the modules with layers of their own inside an nn.Sequential or nn.ModuleList.
    plain, _ = by_category(["--torchvision", "resnet18", "--image", "32"])
    checkpointed, workload = by_category(["--torchvision", "resnet18", "--image", "32", "--checkpointing"])
    assert [type(b).__name__ for b in blocks_of(workload.model)] == ["BasicBlock"] * 8  # layer1..layer4, two each
    # Each block keeps only its input for backward: fewer activations, the same states.
    assert checkpointed["activations"] < plain["activations"]
    assert checkpointed["gradients"] == plain["gradients"]
    vit, workload = by_category(["--timm", "vit_tiny_patch16_224", "--checkpointing"])
    assert len(blocks_of(workload.model)) == 12  # timm's ViT-Ti: its twelve encoder blocks
    assert vit["activations"] < by_category(["--timm", "vit_tiny_patch16_224"])[0]["activations"] / 4


def test_checkpointing_refuses_a_model_without_blocks_saying_why():
    # The example's layers sit in one nn.Sequential with no block of layers of its own: nothing to checkpoint.
    with pytest.raises(TraceError, match=r"^--checkpointing: \S+/examples/trace-own-model.py:make has no blocks to checkpoint \(modules with layers of their own inside an nn.Sequential or nn.ModuleList\)"):
        resolve(parse(["--torch", os.path.join(ROOT, "examples", "trace-own-model.py") + ":make", "--checkpointing"]))


def test_a_config_saved_from_the_bare_model_traces_it_with_its_pooler(tmp_path):
    # tiny-bert.json as save_pretrained writes it for BertModel: the encoder and its pooler, no masked-LM head.
    import json

    with open(os.path.join(CONFIGS, "tiny-bert.json")) as f:
        config = json.load(f)
    bare = tmp_path / "bert-model.json"
    bare.write_text(json.dumps({**config, "architectures": ["BertModel"]}))
    _totals, masked = by_category(["--hf-config", os.path.join(CONFIGS, "tiny-bert.json"), "--seq", "16"])
    _totals, model = by_category(["--hf-config", str(bare), "--seq", "16"])
    h, vocab, positions = 64, 256, 64
    embeddings = (vocab + positions + 2) * h + 2 * h
    layer = 4 * (h * h + h) + 2 * h + (h * 128 + 128) + (128 * h + h) + 2 * h
    pooler = h * h + h
    assert model.counts()[0] == embeddings + 2 * layer + pooler
    # BertForMaskedLM: no pooler; its head's transform (dense, LayerNorm) and the decoder's bias (weight tied).
    assert masked.counts()[0] == embeddings + 2 * layer + (h * h + h) + 2 * h + vocab
