"""A Hugging Face model from its config.json: built by transformers on the meta device, the head chosen by the
model type (causal LM, seq2seq LM, masked LM, image classification), inputs of random token ids or pixels."""
import json

import torch
import torch.nn.functional as F

from .errors import TraceError, missing
from .workload import Workload


def import_transformers():
    from .torchvision_import import import_torchvision

    import_torchvision()  # transformers imports it where it is installed
    try:
        import transformers  # noqa: F401
        import transformers.utils.import_utils as import_utils
    except ImportError:
        raise missing("transformers", "transformers") from None
    # transformers skips its data-dependent checks (is the mask all-true?) on fake tensors; a real step makes them,
    # and their temporaries are part of the step: fake_cuda.fake_mode() answers them as the synthetic batch would.
    import_utils.is_fake_tensor = lambda tensor: False
    return transformers


def read_config(path, attention):
    transformers = import_transformers()
    try:
        with open(path) as f:
            raw = json.load(f)
    except OSError as e:
        raise TraceError(f"--hf-config: cannot read {path}: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise TraceError(f"--hf-config: {path} is not JSON ({e.msg} at line {e.lineno})") from None
    if not isinstance(raw, dict) or "model_type" not in raw:
        raise TraceError(f"--hf-config: {path} has no model_type (expected a Hugging Face config.json)")
    model_type = raw.pop("model_type")
    try:
        config = transformers.AutoConfig.for_model(model_type, **raw)
    except ValueError:
        raise TraceError(f"--hf-config: model_type {model_type!r} is unknown to transformers {transformers.__version__}") from None
    config._attn_implementation = attention
    return config


def head_class(config):
    """The training head for the config: the Auto mapping that knows its class, in this order (an encoder such as BERT
    has a causal-LM class too, but trains as a masked LM; no decoder-only model has a masked-LM class). A config whose
    `architectures` names the bare model (what save_pretrained writes for BertModel) is that model, pooler included."""
    transformers = import_transformers()
    bare = transformers.AutoModel._model_mapping.get(type(config), None)
    if bare is not None and (getattr(config, "architectures", None) or [None])[0] == bare.__name__:
        return transformers.AutoModel, "base"
    for auto, kind in (
        (transformers.AutoModelForSeq2SeqLM, "seq2seq"),
        (transformers.AutoModelForMaskedLM, "masked"),
        (transformers.AutoModelForCausalLM, "causal"),
        (transformers.AutoModelForImageClassification, "image"),
    ):
        if type(config) in auto._model_mapping:
            return auto, kind
    return transformers.AutoModel, "base"


def text_config(config):
    return config.get_text_config() if hasattr(config, "get_text_config") else config


def build(path, options, dtype, init_device="meta"):
    """The model on the meta device (no memory, no initialisation; "cpu" for a real step), with its inputs and loss."""
    transformers = import_transformers()
    from transformers.loss.loss_utils import LOSS_MAPPING

    config = read_config(path, "sdpa" if options.attention == "sdpa" else "eager")
    auto, kind = head_class(config)
    with torch.device(init_device):
        model = auto.from_config(config, dtype=dtype)
    text = text_config(config)
    vocab = getattr(text, "vocab_size", None)
    seq = options.seq
    image = options.image

    def make_inputs(batch, device):
        if kind == "image":
            size = image or getattr(config, "image_size", 224)
            channels = getattr(config, "num_channels", 3)
            return {"pixel_values": torch.empty(batch, channels, size, size, device=device, dtype=torch.float32),
                    "labels": torch.zeros(batch, dtype=torch.long, device=device)}
        ids = torch.zeros(batch, seq, dtype=torch.long, device=device)
        inputs = {"input_ids": ids, "labels": torch.zeros(batch, seq, dtype=torch.long, device=device)}
        if kind == "seq2seq":
            inputs["decoder_input_ids"] = torch.zeros(batch, seq, dtype=torch.long, device=device)
        return inputs

    def forward(model, inputs):
        args = {k: v for k, v in inputs.items() if k != "labels"}
        if options.mode == "infer":
            args["use_cache"] = kind in ("causal", "seq2seq")
        elif kind in ("causal", "seq2seq"):
            args["use_cache"] = False
        return model(**args)

    def loss(output, inputs):
        logits = output.logits if hasattr(output, "logits") else output.last_hidden_state
        labels = inputs["labels"]
        # The loss the model computes itself when given labels (transformers/loss/loss_utils.py), called outside its
        # forward so that the trace tells the loss's memory from the forward's.
        if kind == "image":
            return LOSS_MAPPING["ForImageClassification"](labels=labels, pooled_logits=logits, config=config)
        if kind == "causal":
            return LOSS_MAPPING["ForCausalLM"](logits=logits, labels=labels, vocab_size=vocab)
        if kind == "masked":
            return LOSS_MAPPING["ForMaskedLM"](logits=logits, labels=labels, vocab_size=vocab)
        if kind == "seq2seq":
            return F.cross_entropy(logits.reshape(-1, logits.size(-1)), labels.reshape(-1), ignore_index=-100)
        # The bare model: its pooler's output where it has one (what a classifier fine-tuned on it reads), else its
        # last hidden state.
        pooled = getattr(output, "pooler_output", None)
        return (pooled if pooled is not None else logits).float().mean()

    return Workload("hf-config", config.model_type, model, make_inputs, forward, loss,
                    {"transformers": transformers.__version__}), kind
