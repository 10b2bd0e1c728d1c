"""The bits a whole model takes when some of its linear layers are blr
layers, counted honestly: every parameter is in the count.

    model_bits(parameter_shapes, blr_layers, dense_bits=16) -> dict

parameter_shapes: {state-dict name: shape} of every parameter of the model
(LlamaConfig.parameter_shapes); blr_layers: {weight name: load_blr.BlrLayer}.
A parameter with a blr layer counts that layer's bits as vkblr-fit counts
them (load_blr.layer_bits: its signs, its scales in their dtype, and 128 bits
of metadata); every other parameter (embeddings, norms, the head, layers
left dense) counts `dense_bits` per value (16: a bf16 or f16 checkpoint).
Returns the totals and the two parts: {"weights", "bits", "bpw",
"blr": {"layers", "weights", "bits", "bpw"}, "dense": {"weights", "bits",
"bits_per_value"}}.
"""
from __future__ import annotations

import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "vkblr-fit", "python"))
from load_blr import layer_bits  # noqa: E402


def model_bits(parameter_shapes: dict, blr_layers: dict, dense_bits: int = 16) -> dict:
    unknown = sorted(set(blr_layers) - set(parameter_shapes))
    if unknown:
        raise ValueError(f"blr layers {unknown[:3]} are not parameters of the model")
    blr_weights = blr_bits = dense_weights = 0
    for name, shape in parameter_shapes.items():
        count = math.prod(shape)
        layer = blr_layers.get(name)
        if layer is None:
            dense_weights += count
            continue
        if (layer.m, layer.n) != tuple(shape):
            raise ValueError(f"blr layer {name} is {layer.m}x{layer.n}, the parameter {list(shape)}")
        blr_weights += count
        blr_bits += layer_bits(layer.m, layer.n, layer.rank, len(layer.paths), layer.scale_dtype)
    dense = dense_weights * dense_bits
    weights = blr_weights + dense_weights
    return {"weights": weights, "bits": blr_bits + dense, "bpw": (blr_bits + dense) / weights,
            "blr": {"layers": len(blr_layers), "weights": blr_weights, "bits": blr_bits,
                    "bpw": blr_bits / blr_weights if blr_weights else None},
            "dense": {"weights": dense_weights, "bits": dense, "bits_per_value": dense_bits}}
