"""The reference model's checkpoint in Hugging Face's layout: a directory that
transformers' LlamaForCausalLM.from_pretrained and AutoTokenizer.from_pretrained
read.

    save_checkpoint(model, directory)   config.json, model.safetensors, tokenizer files
    load_checkpoint(directory) -> LlamaForCausalLM (f32, CPU, eval mode)
    read_config(directory) -> LlamaConfig

config.json holds LlamaForCausalLM's fields (architectures, model_type "llama",
the sizes, rms_norm_eps, rope_theta, the token ids, hidden_act "silu", no
biases, untied embeddings, torch_dtype "float32"). model.safetensors holds
every parameter of the state dict under its name, f32, with metadata
{"format": "pt"} (transformers refuses other formats). It is written with
the `safetensors` package when installed, else with the repository's
writer; read with the repository's reader (safetensors_file.py), which
checks the layout. Every file is written atomically; a checkpoint that
does not match its config (a missing or extra tensor, a shape, a dtype) is
refused naming the file and the tensor.
"""
from __future__ import annotations

import json
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "vkblr-fit", "python"))
from atomic_file import write_json_atomic  # noqa: E402
from byte_tokenizer import write_tokenizer_files  # noqa: E402
from dump_calibration import save_tensors  # noqa: E402
from llama import ConfigError, LlamaConfig, LlamaForCausalLM  # noqa: E402
from safetensors_file import SafetensorsError, SafetensorsFile  # noqa: E402

_FIELDS = ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
           "num_key_value_heads", "max_position_embeddings", "rms_norm_eps", "rope_theta", "bos_token_id",
           "eos_token_id", "initializer_range")
# fields transformers reads whose value this model fixes
_FIXED = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_act": "silu",
          "attention_bias": False, "attention_dropout": 0.0, "mlp_bias": False, "tie_word_embeddings": False,
          "pretraining_tp": 1, "rope_scaling": None}


def config_dict(config: LlamaConfig) -> dict:
    d = {**_FIXED, **{f: getattr(config, f) for f in _FIELDS}}
    d.update({"head_dim": config.head_dim, "torch_dtype": "float32", "use_cache": True})
    return d


def read_config(directory: str) -> LlamaConfig:
    path = os.path.join(directory, "config.json")
    try:
        with open(path, encoding="utf-8") as f:
            d = json.load(f)
    except OSError as e:
        raise ConfigError(f"{path}: {e.strerror}") from None
    except ValueError as e:
        raise ConfigError(f"{path}: not JSON: {e}") from None
    if not isinstance(d, dict):
        raise ConfigError(f"{path}: not a JSON object")
    rope = d.get("rope_parameters")  # transformers 5 writes rope_theta here, beside rope_type
    if rope is not None:
        if not isinstance(rope, dict) or any(k not in ("rope_theta", "rope_type") for k in rope) \
                or rope.get("rope_type", "default") != "default":
            raise ConfigError(f"{path}: rope_parameters = {rope!r}; this model has plain rotary positions")
        if "rope_theta" in rope:
            if "rope_theta" in d and d["rope_theta"] != rope["rope_theta"]:
                raise ConfigError(f"{path}: rope_theta {d['rope_theta']!r} and rope_parameters.rope_theta "
                                  f"{rope['rope_theta']!r} disagree")
            d["rope_theta"] = rope["rope_theta"]
    for key, want in _FIXED.items():
        if key in d and d[key] != want:
            raise ConfigError(f"{path}: {key} = {d[key]!r}; this model has {want!r}")
    missing = [f for f in _FIELDS if f not in d]
    if missing:
        raise ConfigError(f"{path}: missing {missing}")
    config = LlamaConfig(**{f: d[f] for f in _FIELDS}).checked(path)
    if "head_dim" in d and d["head_dim"] != config.head_dim:
        raise ConfigError(f"{path}: head_dim {d['head_dim']} is not hidden_size / num_attention_heads = "
                          f"{config.head_dim}")
    return config


def save_checkpoint(model: LlamaForCausalLM, directory: str) -> None:
    os.makedirs(directory, exist_ok=True)
    config = model.config
    tensors = {name: t.detach().float() for name, t in model.state_dict().items()}
    if list(tensors) != list(config.parameter_shapes()):
        raise ValueError(f"the model's state dict {list(tensors)[:4]}... is not the config's parameters")
    save_tensors(os.path.join(directory, "model.safetensors"), tensors, {"format": "pt"})
    write_json_atomic(os.path.join(directory, "config.json"), config_dict(config))
    write_tokenizer_files(directory, config.max_position_embeddings)


def load_checkpoint(directory: str) -> LlamaForCausalLM:
    config = read_config(directory)
    path = os.path.join(directory, "model.safetensors")
    try:
        f = SafetensorsFile(path)
    except SafetensorsError as e:
        raise ConfigError(str(e)) from None
    want = config.parameter_shapes()
    extra = sorted(set(f.tensors) - set(want))
    missing = [n for n in want if n not in f.tensors]
    if extra or missing:
        raise ConfigError(f"{path}: tensors missing {missing[:5]}, not in the model {extra[:5]} (config.json's "
                          "sizes name other tensors)")
    model = LlamaForCausalLM(config)
    state = {}
    for name, shape in want.items():
        info = f.tensors[name]
        if info.shape != tuple(shape) or info.dtype not in ("F32", "BF16", "F16"):
            raise ConfigError(f"{path}: tensor {info.describe()}, want F32, BF16 or F16 {list(shape)}")
        array = f.array(name)
        if not np.isfinite(array).all():
            raise ConfigError(f"{path}: tensor {name} holds NaN or Inf")
        state[name] = torch.from_numpy(np.array(array, dtype=np.float32))
    model.load_state_dict(state, strict=True)
    return model.eval()
