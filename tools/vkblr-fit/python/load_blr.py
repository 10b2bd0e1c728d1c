#!/usr/bin/env python3
"""Reads vkblr-fit's blr layers and rebuilds their dense weights, to put them
back into a PyTorch model.

    python3 load_blr.py FILE                                # list the layers
    python3 load_blr.py FILE --dense OUT.safetensors [--dtype f32]
    python3 load_blr.py FILE --model MODEL --inputs INPUTS [--rows N]

FILE is the model file of `vkblr-fit --manifest` (every layer under its
name) or a single layer's result file. --dense writes every layer's Ŵ under
its name (for a result file: "weight"), in f32 unless --dtype says
otherwise: with the manifest's default names these are the model's
state-dict keys (they are all held in memory at once). --model and --inputs
(as dump_calibration.py takes them) put each Ŵ into the nn.Linear it names
and print how much the model's outputs change on the inputs:
‖y_blr − y‖ / ‖y‖ over all batches.

A layer of shape m×n (out×in), rank r and P paths is

    Ŵ = Σ_p diag(h_p)·S_U,p·diag(ℓ_p)·S_V,pᵀ·diag(g_p)        [m][n]

with S_U,p ±1 [m][r] and S_V,p ±1 [n][r] stored as u32 bitmaps [rows][r/32]
(bit j, least significant first, of word w of a row is the sign of rank
32w + j; 1 = +1, 0 = −1) in NAME.path{p}.bits_u and .bits_v, and the scales
h_p [m], ℓ_p [r], g_p [n] in NAME.path{p}.h, .l, .g (F16 or F32). dense()
forms Ŵ in f64 from the stored values (F16 scales widened exactly).

From Python:

    from load_blr import read_blr_model, replace_linear_weights
    layers = read_blr_model("compressed.safetensors")   # {name: BlrLayer}, validated
    w = layers["model.layers.0.mlp.up_proj.weight"].dense()  # numpy f64 [m][n]
    replace_linear_weights(model, layers)   # the nn.Linear "model.layers.0.mlp.up_proj" gets Ŵ

Files are validated as vkblr-fit's C++ readers validate them (blr_model.hpp,
blr_result.hpp): the safetensors layout, format and version, the XXH3
checksum of every tensor and of the metadata, each layer's shape, tensor
dtypes and shapes, finite scales and recorded bits per weight. A file that
fails is refused with a BlrFileError naming the file and what is wrong.
"""
from __future__ import annotations

import json
import math
import os
import re
import sys
from dataclasses import dataclass

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from command_line import add_model_arguments, parser_from_doc, run  # noqa: E402
from safetensors_file import SafetensorsError, SafetensorsFile, write_safetensors  # noqa: E402
from xxh3 import checksum_hex, xxh3_64  # noqa: E402

MODEL_FORMAT, MODEL_VERSION = "vkblr-blr-model", "1"
RESULT_FORMAT, RESULT_VERSION = "vkblr-blr", "2"
_CHECKSUM = "xxh3:"


class BlrFileError(ValueError):
    pass


@dataclass
class BlrPath:
    bits_u: np.ndarray  # u32 [m][r/32]
    bits_v: np.ndarray  # u32 [n][r/32]
    h: np.ndarray       # f32 [m]
    l: np.ndarray       # f32 [r]
    g: np.ndarray       # f32 [n]


@dataclass
class BlrLayer:
    m: int
    n: int
    rank: int
    scale_dtype: str    # "F16" or "F32": how the scales are stored
    paths: list         # of BlrPath
    weight_xxh3: str    # checksums of the W and X the layer was fitted to
    activations_xxh3: str

    def dense(self) -> np.ndarray:
        """Ŵ = Σ_p diag(h)·S_U·diag(ℓ)·S_Vᵀ·diag(g), f64 [m][n]."""
        w = np.zeros((self.m, self.n))
        for p in self.paths:
            left = signs(p.bits_u, self.rank) * p.l.astype(np.float64)        # S_U·diag(ℓ)
            right = signs(p.bits_v, self.rank) * p.g.astype(np.float64)[:, None]  # diag(g)·S_V
            w += p.h.astype(np.float64)[:, None] * (left @ right.T)
        return w


def signs(bits: np.ndarray, rank: int) -> np.ndarray:
    """A bitmap u32 [rows][r/32] as ±1, f64 [rows][rank]: bit j of word w is column 32w + j."""
    as_bytes = np.ascontiguousarray(bits, dtype="<u4").view(np.uint8)  # byte b of a word: bits 8b..8b+7
    return np.unpackbits(as_bytes, axis=1, bitorder="little")[:, :rank].astype(np.float64) * 2 - 1


def layer_bits(m: int, n: int, rank: int, paths: int, scale_dtype: str) -> int:
    """bpw.hpp: P·r·(m+n) sign bits + s·P·(m+n+r) scale bits (s = 16 for F16, 32 for F32) + 128."""
    s = 16 if scale_dtype == "F16" else 32
    return paths * rank * (m + n) + s * paths * (m + n + rank) + 128


def bits_per_weight(layer: BlrLayer) -> float:
    return layer_bits(layer.m, layer.n, layer.rank, len(layer.paths), layer.scale_dtype) / (layer.m * layer.n)


class _Reader:
    """One validated vkblr-fit file: its format and checksums checked on opening."""

    def __init__(self, path: str, formats: dict):
        try:
            self.file = SafetensorsFile(path)
        except SafetensorsError as e:
            raise BlrFileError(str(e)) from None
        self.path, self.metadata = path, self.file.metadata
        found = self.value("format")
        if found not in formats:
            raise BlrFileError(f"{path}: not a vkblr-fit blr file (metadata 'format' is '{found[:200]}', want "
                               + " or ".join(f"'{f}'" for f in formats) + ")")
        self.format = found
        version = self.value("format_version")
        if version != formats[found]:
            raise BlrFileError(f"{path}: {found} format version '{version[:200]}'; this reader reads version "
                               f"{formats[found]}")
        self._verify_checksums()
        self.tensors_read = set()

    def value(self, key: str) -> str:
        if key not in self.metadata:
            raise BlrFileError(f"{self.path}: metadata '{key[:200]}' is missing")
        return self.metadata[key]

    def _verify_checksums(self) -> None:
        """file_checksums.hpp: "xxh3:T" of every tensor T's bytes, "xxh3:__metadata__" of every
        other metadata entry in key order, each as key, NUL, value, NUL."""
        damaged = "the file was changed or damaged"
        text = b"".join(k.encode() + b"\0" + v.encode() + b"\0"
                        for k, v in sorted(self.metadata.items(), key=lambda kv: kv[0].encode())
                        if not k.startswith(_CHECKSUM))
        recorded, actual = self.value(_CHECKSUM + "__metadata__"), checksum_hex(xxh3_64(text))
        if recorded != actual:
            raise BlrFileError(f"{self.path}: the metadata does not match its checksum (recorded {recorded[:40]}, "
                               f"the file's {actual}): {damaged}")
        for name in self.file.tensors:
            recorded = self.metadata.get(_CHECKSUM + name)
            if recorded is None:
                raise BlrFileError(f"{self.path}: tensor '{name[:200]}' has no checksum: {damaged}")
            actual = checksum_hex(xxh3_64(self.file.raw(name)))
            if recorded != actual:
                raise BlrFileError(f"{self.path}: tensor '{name[:200]}' does not match its checksum (recorded "
                                   f"{recorded[:40]}, the file's {actual}): {damaged}")
        for key in self.metadata:
            if key.startswith(_CHECKSUM) and key != _CHECKSUM + "__metadata__" \
                    and key[len(_CHECKSUM):] not in self.file.tensors:
                raise BlrFileError(f"{self.path}: metadata '{key[:200]}' is the checksum of a tensor the file does "
                                   f"not hold: {damaged}")

    def bpw(self, key: str, actual: float, where: str) -> None:
        """Refuses a recorded bits per weight other than `actual` (both the correctly rounded
        quotient of two integers: equal as numbers)."""
        recorded = self.value(key)
        if not re.fullmatch(r"[0-9.e+-]+", recorded) or float(recorded) != actual:
            raise BlrFileError(f"{where}: metadata '{key}' = '{recorded[:200]}' but it takes {actual} bpw")

    def count(self, key: str) -> int:
        text = self.value(key)
        if not re.fullmatch(r"[0-9]+", text) or int(text) >= 2**32:
            raise BlrFileError(f"{self.path}: metadata '{key[:200]}' = '{text[:200]}' is not a u32")
        return int(text)

    def tensor(self, name: str, dtype: str, shape: tuple) -> np.ndarray:
        if name not in self.file.tensors:
            raise BlrFileError(f"{self.path}: tensor '{name[:200]}' is missing")
        t = self.file.tensors[name]
        if t.dtype != dtype or t.shape != shape:
            raise BlrFileError(f"{self.path}: tensor {t.describe()}, want {name} {dtype} {list(shape)}")
        self.tensors_read.add(name)
        return self.file.array(name)

    def layer(self, prefix: str) -> BlrLayer:
        """blr_result.hpp's layer under `prefix` ("" in a result file, "NAME." in a model file)."""
        where = f"{self.path}: layer '{prefix[:-1]}'" if prefix else self.path
        m, n, rank, paths = (self.count(prefix + k) for k in ("m", "n", "rank", "paths"))
        max_rank = (min(m, n) + 31) // 32 * 32
        if m < 1 or n < 1 or paths < 1 or rank < 32 or rank % 32 or rank > max_rank:
            raise BlrFileError(f"{where}: {m}x{n}, rank {rank}, {paths} paths is not a blr layer (rank a multiple "
                               f"of 32 in [32, {max_rank}], at least one path)")
        scale_dtype = self.value(prefix + "scale_dtype")
        if scale_dtype not in ("F16", "F32"):
            raise BlrFileError(f"{where}: metadata '{prefix}scale_dtype' = '{scale_dtype[:200]}', want F16 or F32")
        self.bpw(prefix + "bpw", layer_bits(m, n, rank, paths, scale_dtype) / (m * n), where)
        words = rank // 32
        layer = BlrLayer(m, n, rank, scale_dtype, [], self.value(prefix + "weight_xxh3"),
                         self.value(prefix + "activations_xxh3"))
        for p in range(paths):
            name = f"{prefix}path{p}."
            path = BlrPath(self.tensor(name + "bits_u", "U32", (m, words)), self.tensor(name + "bits_v", "U32", (n, words)),
                           *(self.tensor(name + field, scale_dtype, (size,)).astype(np.float32)
                             for field, size in (("h", m), ("l", rank), ("g", n))))
            for field in ("h", "l", "g"):
                bad = np.flatnonzero(~np.isfinite(getattr(path, field)))
                if bad.size:
                    raise BlrFileError(f"{where}: scale {field}[{bad[0]}] of path {p} is "
                                       f"{getattr(path, field)[bad[0]]}: every scale must be finite")
            layer.paths.append(path)
        return layer

    def check_all_tensors_read(self) -> None:
        for name in self.file.tensors:
            if name not in self.tensors_read:
                raise BlrFileError(f"{self.path}: tensor '{name[:200]}' belongs to none of its layers")


def _model_layers(r: _Reader) -> dict:
    try:
        names = json.loads(r.value("layers"))
    except ValueError:
        names = None
    if not isinstance(names, list) or not names or not all(isinstance(x, str) and x for x in names) \
            or len(set(names)) != len(names):
        raise BlrFileError(f"{r.path}: metadata 'layers' is not a list of distinct layer names")
    layers = {name: r.layer(name + ".") for name in names}
    r.check_all_tensors_read()
    bits = sum(layer_bits(x.m, x.n, x.rank, len(x.paths), x.scale_dtype) for x in layers.values())
    r.bpw("bpw", bits / sum(x.m * x.n for x in layers.values()), r.path)
    return layers


def _result_layer(r: _Reader) -> BlrLayer:
    layer = r.layer("")
    r.check_all_tensors_read()
    r.value("tool_version")
    try:
        command_line = json.loads(r.value("command_line"))
    except ValueError:
        command_line = None
    if not isinstance(command_line, list) or not all(isinstance(x, str) for x in command_line):
        raise BlrFileError(f"{r.path}: metadata 'command_line' is not a list of strings")
    return layer


def read_blr_model(path: str) -> dict:
    """A model file of `vkblr-fit --manifest` (blr_model.hpp): {name: BlrLayer} in the file's order."""
    return _model_layers(_Reader(path, {MODEL_FORMAT: MODEL_VERSION}))


def read_blr_result(path: str) -> BlrLayer:
    """One layer's result file of vkblr-fit (blr_result.hpp)."""
    return _result_layer(_Reader(path, {RESULT_FORMAT: RESULT_VERSION}))


def read_blr(path: str) -> dict:
    """A model file's layers, or a result file's one layer under the name "weight"."""
    r = _Reader(path, {MODEL_FORMAT: MODEL_VERSION, RESULT_FORMAT: RESULT_VERSION})
    return _model_layers(r) if r.format == MODEL_FORMAT else {"weight": _result_layer(r)}


def replace_linear_weights(model, layers: dict) -> list:
    """Copies each layer's Ŵ into the torch.nn.Linear it names (the layer name without a final
    ".weight"), rounded to the weight's dtype; returns the module names. Raises ValueError,
    changing nothing, when a name is not an nn.Linear of the model or its shape is not [m][n]."""
    import torch
    modules = dict(model.named_modules())
    targets = []
    for name, layer in layers.items():
        module_name = name[:-len(".weight")] if name.endswith(".weight") else name
        module = modules.get(module_name)
        if not isinstance(module, torch.nn.Linear):
            raise ValueError(f"layer '{name}': the model has no nn.Linear '{module_name}'")
        if tuple(module.weight.shape) != (layer.m, layer.n):
            raise ValueError(f"layer '{name}' is {layer.m}x{layer.n} but the model's {module_name}.weight is "
                             f"{list(module.weight.shape)}")
        targets.append((module_name, module, layer))
    with torch.no_grad():
        for _, module, layer in targets:
            module.weight.copy_(torch.from_numpy(layer.dense()))
    return [module_name for module_name, _, _ in targets]


def output_change(model, layers: dict, batches) -> float:
    """‖y_blr − y‖ / ‖y‖ of the model's outputs over `batches` (in f64), before and after
    replace_linear_weights (which it applies)."""
    from torch_model import run_model
    before = [run_model(model, b).double() for b in batches]
    replace_linear_weights(model, layers)
    diff = norm = 0.0
    for b, y in zip(batches, before):
        diff += float(((run_model(model, b).double() - y) ** 2).sum())
        norm += float((y ** 2).sum())
    return math.sqrt(diff / norm)


def main(argv=None) -> int:
    parser = parser_from_doc(__doc__)
    parser.add_argument("file", help="a vkblr-fit model file (--manifest) or result file")
    parser.add_argument("--dense", metavar="OUT", help="write every layer's Ŵ to OUT (safetensors)")
    parser.add_argument("--dtype", choices=["f16", "f32", "f64"], default="f32", help="Ŵ's dtype in --dense")
    add_model_arguments(parser, False, "batches to compare the model's outputs on")
    args = parser.parse_args(argv)
    if (args.model is None) != (args.inputs is None):
        parser.error("--model and --inputs go together")

    def body():
        layers = read_blr(args.file)
        for name, x in layers.items():
            print(f"{name}: {x.m}x{x.n}, {len(x.paths)} paths of rank {x.rank}, {x.scale_dtype} scales, "
                  f"{bits_per_weight(x):.4f} bpw")
        if args.dense:
            dtype = {"f16": np.float16, "f32": np.float32, "f64": np.float64}[args.dtype]
            write_safetensors(args.dense, {name: x.dense().astype(dtype) for name, x in layers.items()})
            print(f"wrote {args.dense}: {len(layers)} dense weights, {args.dtype}")
        if args.model:
            from torch_model import load_batches, load_model
            batches = load_batches(args.inputs, args.rows)
            change = output_change(load_model(args.model), layers, batches)
            print(f"{len(layers)} nn.Linear weights replaced; the model's outputs changed by {change:.4e} "
                  f"(‖y_blr − y‖ / ‖y‖ over {len(batches)} batches)")
    return run("load_blr", body)


if __name__ == "__main__":
    sys.exit(main())
