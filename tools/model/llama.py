"""The reference model: a Llama-architecture causal language model in plain
PyTorch, with Hugging Face's module names, so that its state dict is the one
transformers' LlamaForCausalLM holds.

    LlamaConfig(...), LlamaConfig.preset("reference" | "toy")
    LlamaForCausalLM(config)          model(input_ids [B][T]) -> logits [B][T][vocab] (f32)

Modules: model.embed_tokens; per layer N model.layers.N.input_layernorm,
.self_attn.{q,k,v,o}_proj, .post_attention_layernorm, .mlp.{gate,up,down}_proj;
model.norm; lm_head (not tied to the embedding). No biases.

The arithmetic is transformers' Llama (modeling_llama.py, version 4.4x), so
that a checkpoint loads there with the same outputs:
  RMSNorm      weight · (x / sqrt(mean(x²) + eps)), computed in f32, cast back
               to x's dtype before the weight multiplies
  rotary       inv_freq_i = theta^(-2i/head_dim), the angles of position p are
               p·inv_freq repeated twice ([f, f]); q·cos + rotate_half(q)·sin with
               rotate_half(x) = [-x₂, x₁] (the halves of the head's vector)
  attention    grouped-query: query head h reads key/value head h // (heads /
               kv_heads); softmax(q·kᵀ / sqrt(head_dim)) causal
  MLP          down(silu(gate(x)) · up(x))
  block        x += attn(input_layernorm(x)); x += mlp(post_attention_layernorm(x))
"""
from __future__ import annotations

import dataclasses
import math

import torch
import torch.nn.functional as F
from torch import nn

PRESETS = {
    # ~25.4 M parameters: 8 blocks of 3.15 M, embedding and head 272 x 512 each
    "reference": dict(hidden_size=512, intermediate_size=1536, num_hidden_layers=8, num_attention_heads=8,
                      num_key_value_heads=4, max_position_embeddings=1024),
    # for tests on the CPU: every linear layer's sides still multiples of 16, and heads of 32 (the
    # smallest head dim the engine's attention runs, so vkblr::model runs the toy too)
    "toy": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2,
                num_key_value_heads=1, max_position_embeddings=64),
}


class ConfigError(ValueError):
    pass


@dataclasses.dataclass(frozen=True)
class LlamaConfig:
    vocab_size: int = 272
    hidden_size: int = 512
    intermediate_size: int = 1536
    num_hidden_layers: int = 8
    num_attention_heads: int = 8
    num_key_value_heads: int = 4
    max_position_embeddings: int = 1024
    rms_norm_eps: float = 1e-5
    rope_theta: float = 10000.0
    bos_token_id: int = 256
    eos_token_id: int = 256
    initializer_range: float = 0.02

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads

    @staticmethod
    def preset(name: str, **overrides) -> "LlamaConfig":
        if name not in PRESETS:
            raise ConfigError(f"preset '{name}': want one of {sorted(PRESETS)}")
        return LlamaConfig(**{**PRESETS[name], **overrides}).checked()

    def checked(self, where: str = "config") -> "LlamaConfig":
        for field in ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                      "num_key_value_heads", "max_position_embeddings"):
            value = getattr(self, field)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"{where}: {field} = {value!r}: want a positive integer")
        if self.hidden_size % self.num_attention_heads or self.head_dim % 2:
            raise ConfigError(f"{where}: hidden_size {self.hidden_size} is not num_attention_heads "
                              f"{self.num_attention_heads} times an even head_dim")
        if self.num_attention_heads % self.num_key_value_heads:
            raise ConfigError(f"{where}: num_attention_heads {self.num_attention_heads} is not a multiple of "
                              f"num_key_value_heads {self.num_key_value_heads}")
        for field in ("rms_norm_eps", "rope_theta", "initializer_range"):
            value = getattr(self, field)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value) \
                    or value <= 0:
                raise ConfigError(f"{where}: {field} = {value!r}: want a positive number")
        for field in ("bos_token_id", "eos_token_id"):
            value = getattr(self, field)
            if not isinstance(value, int) or not 0 <= value < self.vocab_size:
                raise ConfigError(f"{where}: {field} = {value!r}: want an id below vocab_size {self.vocab_size}")
        return self

    def linear_shapes(self) -> dict:
        """{module name: (out, in)} of every nn.Linear."""
        h, kv = self.hidden_size, self.num_key_value_heads * self.head_dim
        shapes = {}
        for n in range(self.num_hidden_layers):
            p = f"model.layers.{n}."
            shapes.update({p + "self_attn.q_proj": (h, h), p + "self_attn.k_proj": (kv, h),
                           p + "self_attn.v_proj": (kv, h), p + "self_attn.o_proj": (h, h),
                           p + "mlp.gate_proj": (self.intermediate_size, h),
                           p + "mlp.up_proj": (self.intermediate_size, h),
                           p + "mlp.down_proj": (h, self.intermediate_size)})
        shapes["lm_head"] = (self.vocab_size, h)
        return shapes

    def parameter_shapes(self) -> dict:
        """{state-dict name: shape} of every parameter, in the order of the model's state dict."""
        shapes = {"model.embed_tokens.weight": (self.vocab_size, self.hidden_size)}
        linear = self.linear_shapes()
        for n in range(self.num_hidden_layers):
            p = f"model.layers.{n}."
            for name in ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
                         "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"):
                shapes[p + name + ".weight"] = linear[p + name]
            shapes[p + "input_layernorm.weight"] = (self.hidden_size,)
            shapes[p + "post_attention_layernorm.weight"] = (self.hidden_size,)
        shapes["model.norm.weight"] = (self.hidden_size,)
        shapes["lm_head.weight"] = linear["lm_head"]
        return shapes


class RMSNorm(nn.Module):
    def __init__(self, size: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.eps = eps

    def forward(self, x):
        dtype = x.dtype
        x = x.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x.to(dtype)


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class Rotary(nn.Module):
    """cos and sin of the angles of positions 0..T-1, [T][head_dim], f32."""

    def __init__(self, config: LlamaConfig):
        super().__init__()
        d = config.head_dim
        inv_freq = 1.0 / (config.rope_theta ** (torch.arange(0, d, 2, dtype=torch.int64).float() / d))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, length: int, device):
        positions = torch.arange(length, device=device, dtype=torch.float32)
        angles = positions[:, None] * self.inv_freq.to(device)[None, :]
        emb = torch.cat((angles, angles), dim=-1)
        return emb.cos(), emb.sin()


class Attention(nn.Module):
    def __init__(self, config: LlamaConfig):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = (config.num_attention_heads, config.num_key_value_heads,
                                                    config.head_dim)
        h = config.hidden_size
        self.q_proj = nn.Linear(h, self.heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(h, self.kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(h, self.kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(self.heads * self.head_dim, h, bias=False)

    def forward(self, x, cos, sin):
        b, t, _ = x.shape
        q = self.q_proj(x).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        cos, sin = cos.to(q.dtype), sin.to(q.dtype)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        repeat = self.heads // self.kv_heads
        if repeat > 1:  # query head h reads key/value head h // repeat
            k = k.repeat_interleave(repeat, dim=1)
            v = v.repeat_interleave(repeat, dim=1)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o_proj(y.transpose(1, 2).reshape(b, t, self.heads * self.head_dim))


class MLP(nn.Module):
    def __init__(self, config: LlamaConfig):
        super().__init__()
        self.gate_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.up_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.down_proj = nn.Linear(config.intermediate_size, config.hidden_size, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, config: LlamaConfig):
        super().__init__()
        self.self_attn = Attention(config)
        self.mlp = MLP(config)
        self.input_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps)

    def forward(self, x, cos, sin):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin)
        return x + self.mlp(self.post_attention_layernorm(x))


class LlamaModel(nn.Module):
    def __init__(self, config: LlamaConfig):
        super().__init__()
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList([DecoderLayer(config) for _ in range(config.num_hidden_layers)])
        self.norm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.rotary_emb = Rotary(config)

    def forward(self, input_ids, layers=None):
        x = self.embed_tokens(input_ids)
        cos, sin = self.rotary_emb(input_ids.shape[1], input_ids.device)
        for layer in (self.layers if layers is None else layers):
            x = layer(x, cos, sin)
        return self.norm(x)


class LlamaForCausalLM(nn.Module):
    def __init__(self, config: LlamaConfig):
        super().__init__()
        self.config = config.checked()
        self.model = LlamaModel(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)

    def forward(self, input_ids):
        if input_ids.shape[1] > self.config.max_position_embeddings:
            raise ValueError(f"{input_ids.shape[1]} positions: the model has {self.config.max_position_embeddings}")
        return self.lm_head(self.model(input_ids)).float()

    @torch.no_grad()
    def initialize(self, seed: int) -> None:
        """Normal(0, initializer_range) embeddings and linear weights from `seed` (o_proj and
        down_proj, which write into the residual stream, scaled by 1/sqrt(2·layers)), norms at 1."""
        gen = torch.Generator().manual_seed(seed)
        std = self.config.initializer_range
        for name, p in self.named_parameters():
            if name.endswith("norm.weight") or name.endswith("layernorm.weight"):
                p.fill_(1.0)
                continue
            scale = std / math.sqrt(2 * self.config.num_hidden_layers) \
                if name.endswith(("o_proj.weight", "down_proj.weight")) else std
            p.copy_(torch.randn(p.shape, generator=gen) * scale)
