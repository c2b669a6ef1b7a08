# Reference model only (no fixture of its own): imported by measure-activations.py --unet for test/fixtures/torch-saved-activations-unet.json.
"""Stable Diffusion 2.1's UNet in plain PyTorch: the reference vramfit's `sd2.1-unet` preset is checked against.

diffusers is not installed here (only Debian's python3-torch 1.13), so this rebuilds
`UNet2DConditionModel` with the configuration of stabilityai/stable-diffusion-2-1 (unet/config.json):

    block_out_channels [320, 640, 1280, 1280], layers_per_block 2, cross_attention_dim 1024,
    attention_head_dim [5, 10, 20, 20] (diffusers reads these as head counts: 64 channels a head),
    use_linear_projection true, upcast_attention true, norm_num_groups 32, norm_eps 1e-5,
    in/out channels 4, down blocks CrossAttnDownBlock2D ×3 + DownBlock2D,
    up blocks UpBlock2D + CrossAttnUpBlock2D ×3, act_fn silu, flip_sin_to_cos true, freq_shift 0.

Module names and the order of operations follow diffusers (models/unet_2d_condition.py,
unet_2d_blocks.py, resnet.py, transformer_2d.py, attention.py, attention_processor.py with the
classic `AttnProcessor`, the one diffusers uses without torch 2's scaled_dot_product_attention),
so the parameter count and the tensors autograd saves are those of the diffusers model.
"""
import math

import torch
import torch.nn.functional as F
from torch import nn

CONFIG = {
    "in_channels": 4,
    "out_channels": 4,
    "block_out_channels": (320, 640, 1280, 1280),
    "layers_per_block": 2,
    "cross_attention_dim": 1024,
    "heads": (5, 10, 20, 20),
    "norm_num_groups": 32,
    "norm_eps": 1e-5,
    "upcast_attention": True,
}


class Timesteps(nn.Module):
    """Sinusoidal timestep features (no parameters), flip_sin_to_cos=True, downscale_freq_shift=0."""

    def __init__(self, channels: int):
        super().__init__()
        self.channels = channels

    def forward(self, timesteps: torch.Tensor) -> torch.Tensor:
        half = self.channels // 2
        exponent = -math.log(10000) * torch.arange(half, dtype=torch.float32) / half
        emb = timesteps[:, None].float() * torch.exp(exponent)[None, :]
        emb = torch.cat([torch.sin(emb), torch.cos(emb)], dim=-1)
        return torch.cat([emb[:, half:], emb[:, :half]], dim=-1)


class TimestepEmbedding(nn.Module):
    def __init__(self, in_channels: int, time_embed_dim: int):
        super().__init__()
        self.linear_1 = nn.Linear(in_channels, time_embed_dim)
        self.act = nn.SiLU()
        self.linear_2 = nn.Linear(time_embed_dim, time_embed_dim)

    def forward(self, sample):
        return self.linear_2(self.act(self.linear_1(sample)))


class ResnetBlock2D(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, temb_channels: int = 1280):
        super().__init__()
        groups, eps = CONFIG["norm_num_groups"], CONFIG["norm_eps"]
        self.norm1 = nn.GroupNorm(groups, in_channels, eps=eps, affine=True)
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, stride=1, padding=1)
        self.time_emb_proj = nn.Linear(temb_channels, out_channels)
        self.norm2 = nn.GroupNorm(groups, out_channels, eps=eps, affine=True)
        self.dropout = nn.Dropout(0.0)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, stride=1, padding=1)
        self.nonlinearity = nn.SiLU()
        self.conv_shortcut = nn.Conv2d(in_channels, out_channels, 1) if in_channels != out_channels else None

    def forward(self, input_tensor, temb):
        hidden_states = self.norm1(input_tensor)
        hidden_states = self.nonlinearity(hidden_states)
        hidden_states = self.conv1(hidden_states)
        temb = self.time_emb_proj(self.nonlinearity(temb))[:, :, None, None]
        hidden_states = hidden_states + temb
        hidden_states = self.norm2(hidden_states)
        hidden_states = self.nonlinearity(hidden_states)
        hidden_states = self.dropout(hidden_states)
        hidden_states = self.conv2(hidden_states)
        if self.conv_shortcut is not None:
            input_tensor = self.conv_shortcut(input_tensor)
        return (input_tensor + hidden_states) / 1.0  # output_scale_factor


class Attention(nn.Module):
    """diffusers' Attention with the classic AttnProcessor (baddbmm, softmax, bmm)."""

    def __init__(self, query_dim: int, heads: int, dim_head: int, cross_attention_dim=None):
        super().__init__()
        inner = heads * dim_head
        context = cross_attention_dim or query_dim
        self.heads = heads
        self.scale = dim_head**-0.5
        self.upcast_attention = CONFIG["upcast_attention"]
        self.to_q = nn.Linear(query_dim, inner, bias=False)
        self.to_k = nn.Linear(context, inner, bias=False)
        self.to_v = nn.Linear(context, inner, bias=False)
        self.to_out = nn.ModuleList([nn.Linear(inner, query_dim), nn.Dropout(0.0)])

    def head_to_batch_dim(self, tensor):
        b, s, dim = tensor.shape
        tensor = tensor.reshape(b, s, self.heads, dim // self.heads).permute(0, 2, 1, 3)
        return tensor.reshape(b * self.heads, s, dim // self.heads)

    def batch_to_head_dim(self, tensor):
        b, s, dim = tensor.shape
        tensor = tensor.reshape(b // self.heads, self.heads, s, dim)
        return tensor.permute(0, 2, 1, 3).reshape(b // self.heads, s, dim * self.heads)

    def get_attention_scores(self, query, key):
        dtype = query.dtype
        if self.upcast_attention:
            query = query.float()
            key = key.float()
        baddbmm_input = torch.empty(query.shape[0], query.shape[1], key.shape[1], dtype=query.dtype, device=query.device)
        scores = torch.baddbmm(baddbmm_input, query, key.transpose(-1, -2), beta=0, alpha=self.scale)
        probs = scores.softmax(dim=-1)
        return probs.to(dtype)

    def forward(self, hidden_states, encoder_hidden_states=None):
        query = self.to_q(hidden_states)
        context = hidden_states if encoder_hidden_states is None else encoder_hidden_states
        key = self.to_k(context)
        value = self.to_v(context)
        query = self.head_to_batch_dim(query)
        key = self.head_to_batch_dim(key)
        value = self.head_to_batch_dim(value)
        probs = self.get_attention_scores(query, key)
        hidden_states = torch.bmm(probs, value)
        hidden_states = self.batch_to_head_dim(hidden_states)
        hidden_states = self.to_out[0](hidden_states)
        hidden_states = self.to_out[1](hidden_states)
        return hidden_states / 1.0  # rescale_output_factor


class GEGLU(nn.Module):
    def __init__(self, dim_in: int, dim_out: int):
        super().__init__()
        self.proj = nn.Linear(dim_in, dim_out * 2)

    def forward(self, hidden_states):
        hidden_states, gate = self.proj(hidden_states).chunk(2, dim=-1)
        return hidden_states * F.gelu(gate)


class FeedForward(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.net = nn.ModuleList([GEGLU(dim, 4 * dim), nn.Dropout(0.0), nn.Linear(4 * dim, dim)])

    def forward(self, hidden_states):
        for module in self.net:
            hidden_states = module(hidden_states)
        return hidden_states


class BasicTransformerBlock(nn.Module):
    def __init__(self, dim: int, heads: int):
        super().__init__()
        head_dim = dim // heads
        self.norm1 = nn.LayerNorm(dim)
        self.attn1 = Attention(dim, heads, head_dim)
        self.norm2 = nn.LayerNorm(dim)
        self.attn2 = Attention(dim, heads, head_dim, cross_attention_dim=CONFIG["cross_attention_dim"])
        self.norm3 = nn.LayerNorm(dim)
        self.ff = FeedForward(dim)

    def forward(self, hidden_states, encoder_hidden_states):
        hidden_states = self.attn1(self.norm1(hidden_states)) + hidden_states
        hidden_states = self.attn2(self.norm2(hidden_states), encoder_hidden_states) + hidden_states
        return self.ff(self.norm3(hidden_states)) + hidden_states


class Transformer2DModel(nn.Module):
    """One transformer block between linear projections (use_linear_projection=True)."""

    def __init__(self, channels: int, heads: int):
        super().__init__()
        self.norm = nn.GroupNorm(CONFIG["norm_num_groups"], channels, eps=1e-6, affine=True)
        self.proj_in = nn.Linear(channels, channels)
        self.transformer_blocks = nn.ModuleList([BasicTransformerBlock(channels, heads)])
        self.proj_out = nn.Linear(channels, channels)

    def forward(self, hidden_states, encoder_hidden_states):
        batch, channels, height, width = hidden_states.shape
        residual = hidden_states
        hidden_states = self.norm(hidden_states)
        hidden_states = hidden_states.permute(0, 2, 3, 1).reshape(batch, height * width, channels)
        hidden_states = self.proj_in(hidden_states)
        for block in self.transformer_blocks:
            hidden_states = block(hidden_states, encoder_hidden_states)
        hidden_states = self.proj_out(hidden_states)
        hidden_states = hidden_states.reshape(batch, height, width, channels).permute(0, 3, 1, 2).contiguous()
        return hidden_states + residual


class Downsample2D(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, stride=2, padding=1)

    def forward(self, hidden_states):
        return self.conv(hidden_states)


class Upsample2D(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, hidden_states):
        return self.conv(F.interpolate(hidden_states, scale_factor=2.0, mode="nearest"))


class DownBlock(nn.Module):
    """CrossAttnDownBlock2D (with attention) or DownBlock2D (without)."""

    def __init__(self, in_channels: int, out_channels: int, heads, add_downsample: bool):
        super().__init__()
        layers = CONFIG["layers_per_block"]
        self.resnets = nn.ModuleList([ResnetBlock2D(in_channels if i == 0 else out_channels, out_channels) for i in range(layers)])
        self.attentions = nn.ModuleList([Transformer2DModel(out_channels, heads) for _ in range(layers)]) if heads else None
        self.downsamplers = nn.ModuleList([Downsample2D(out_channels)]) if add_downsample else None

    def forward(self, hidden_states, temb, encoder_hidden_states):
        output_states = ()
        for i, resnet in enumerate(self.resnets):
            hidden_states = resnet(hidden_states, temb)
            if self.attentions is not None:
                hidden_states = self.attentions[i](hidden_states, encoder_hidden_states)
            output_states += (hidden_states,)
        if self.downsamplers is not None:
            hidden_states = self.downsamplers[0](hidden_states)
            output_states += (hidden_states,)
        return hidden_states, output_states


class UpBlock(nn.Module):
    """CrossAttnUpBlock2D (with attention) or UpBlock2D (without)."""

    def __init__(self, in_channels: int, prev_output_channel: int, out_channels: int, heads, add_upsample: bool):
        super().__init__()
        layers = CONFIG["layers_per_block"] + 1
        resnets = []
        for i in range(layers):
            res_skip = in_channels if i == layers - 1 else out_channels
            resnet_in = prev_output_channel if i == 0 else out_channels
            resnets.append(ResnetBlock2D(resnet_in + res_skip, out_channels))
        self.resnets = nn.ModuleList(resnets)
        self.attentions = nn.ModuleList([Transformer2DModel(out_channels, heads) for _ in range(layers)]) if heads else None
        self.upsamplers = nn.ModuleList([Upsample2D(out_channels)]) if add_upsample else None

    def forward(self, hidden_states, res_hidden_states_tuple, temb, encoder_hidden_states):
        for i, resnet in enumerate(self.resnets):
            res_hidden_states = res_hidden_states_tuple[-1]
            res_hidden_states_tuple = res_hidden_states_tuple[:-1]
            hidden_states = torch.cat([hidden_states, res_hidden_states], dim=1)
            hidden_states = resnet(hidden_states, temb)
            if self.attentions is not None:
                hidden_states = self.attentions[i](hidden_states, encoder_hidden_states)
        if self.upsamplers is not None:
            hidden_states = self.upsamplers[0](hidden_states)
        return hidden_states


class MidBlock(nn.Module):
    """UNetMidBlock2DCrossAttn: resnet, attention, resnet."""

    def __init__(self, channels: int, heads: int):
        super().__init__()
        self.resnets = nn.ModuleList([ResnetBlock2D(channels, channels), ResnetBlock2D(channels, channels)])
        self.attentions = nn.ModuleList([Transformer2DModel(channels, heads)])

    def forward(self, hidden_states, temb, encoder_hidden_states):
        hidden_states = self.resnets[0](hidden_states, temb)
        hidden_states = self.attentions[0](hidden_states, encoder_hidden_states)
        return self.resnets[1](hidden_states, temb)


class UNet2DConditionModel(nn.Module):
    def __init__(self):
        super().__init__()
        channels = CONFIG["block_out_channels"]
        heads = CONFIG["heads"]
        time_embed_dim = channels[0] * 4
        self.conv_in = nn.Conv2d(CONFIG["in_channels"], channels[0], 3, padding=1)
        self.time_proj = Timesteps(channels[0])
        self.time_embedding = TimestepEmbedding(channels[0], time_embed_dim)
        with_attention = (True, True, True, False)  # CrossAttnDownBlock2D ×3, DownBlock2D
        self.down_blocks = nn.ModuleList()
        output_channel = channels[0]
        for i, out in enumerate(channels):
            input_channel, output_channel = output_channel, out
            final = i == len(channels) - 1
            self.down_blocks.append(DownBlock(input_channel, output_channel, heads[i] if with_attention[i] else None, not final))
        self.mid_block = MidBlock(channels[-1], heads[-1])
        reversed_channels = list(reversed(channels))
        reversed_heads = list(reversed(heads))
        up_attention = (False, True, True, True)  # UpBlock2D, CrossAttnUpBlock2D ×3
        self.up_blocks = nn.ModuleList()
        output_channel = reversed_channels[0]
        for i in range(len(channels)):
            prev_output_channel = output_channel
            output_channel = reversed_channels[i]
            input_channel = reversed_channels[min(i + 1, len(channels) - 1)]
            final = i == len(channels) - 1
            heads_i = reversed_heads[i] if up_attention[i] else None
            self.up_blocks.append(UpBlock(input_channel, prev_output_channel, output_channel, heads_i, not final))
        self.conv_norm_out = nn.GroupNorm(CONFIG["norm_num_groups"], channels[0], eps=CONFIG["norm_eps"])
        self.conv_act = nn.SiLU()
        self.conv_out = nn.Conv2d(channels[0], CONFIG["out_channels"], 3, padding=1)

    def forward(self, sample, timesteps, encoder_hidden_states):
        emb = self.time_embedding(self.time_proj(timesteps))
        sample = self.conv_in(sample)
        down_block_res_samples = (sample,)
        for block in self.down_blocks:
            sample, res_samples = block(sample, emb, encoder_hidden_states)
            down_block_res_samples += res_samples
        sample = self.mid_block(sample, emb, encoder_hidden_states)
        for block in self.up_blocks:
            res_samples = down_block_res_samples[-len(block.resnets):]
            down_block_res_samples = down_block_res_samples[: -len(block.resnets)]
            sample = block(sample, res_samples, emb, encoder_hidden_states)
        return self.conv_out(self.conv_act(self.conv_norm_out(sample)))


if __name__ == "__main__":
    model = UNet2DConditionModel()
    print(sum(p.numel() for p in model.parameters()))
