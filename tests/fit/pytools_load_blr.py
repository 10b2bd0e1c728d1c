"""load_blr.py's reading of vkblr-fit's blr files, against vkblr-fit's C++
readers: files built here as blr_model.hpp and blr_result.hpp describe them
are read by both to the same Ŵ, and every kind of damage is refused by both,
load_blr with a message that says what is wrong.

    python3 pytools_load_blr.py --work DIR --fit VKBLR_FIT --read-back VKBLR_FIT_READ_BACK

vkblr-fit-read-back (tests/fit/read_back.cpp) `dense FILE OUT` reads FILE
with read_blr_model / read_blr_result and writes every layer's
Ŵ = Σ_p DensePath::weight() in f64.
"""
import json
import os

from pytools_support import Failure, check, dense_tolerance, main, options, raises, require_modules, run

require_modules("numpy")
import numpy as np  # noqa: E402
from load_blr import BlrFileError, read_blr, read_blr_model, read_blr_result, signs  # noqa: E402
from safetensors_file import RawTensor, SafetensorsFile, encode_header, raw_tensor  # noqa: E402
from xxh3 import checksum_hex, xxh3_64  # noqa: E402

args = options()

# name: (m, n, rank, paths, scale dtype); the first and a single-layer result use F16 scales
LAYERS = {"a.weight": (64, 96, 32, 2, "F16"), "b.weight": (32, 48, 32, 1, "F32")}


def layer_bits(m, n, rank, paths, dtype):
    return paths * rank * (m + n) + (16 if dtype == "F16" else 32) * paths * (m + n + rank) + 128


def layer_file_entries(prefix, shape, seed):
    """Tensors and metadata of one layer under `prefix`, as blr_result.cpp's add_blr_layer writes them."""
    m, n, rank, paths, dtype = shape
    rng = np.random.default_rng(seed)
    scale = np.float16 if dtype == "F16" else np.float32
    tensors = {}
    for p in range(paths):
        tensors[f"{prefix}path{p}.bits_u"] = rng.integers(0, 2**32, (m, rank // 32), dtype=np.uint32)
        tensors[f"{prefix}path{p}.bits_v"] = rng.integers(0, 2**32, (n, rank // 32), dtype=np.uint32)
        for field, size in (("h", m), ("l", rank), ("g", n)):
            tensors[f"{prefix}path{p}.{field}"] = (rng.standard_normal(size) * 0.5).astype(scale)
    metadata = {prefix + "m": str(m), prefix + "n": str(n), prefix + "rank": str(rank), prefix + "paths": str(paths),
                prefix + "scale_dtype": dtype, prefix + "bpw": repr(layer_bits(*shape) / (m * n)),
                prefix + "weight_xxh3": "0123456789abcdef", prefix + "activations_xxh3": "fedcba9876543210"}
    return tensors, metadata


def model_entries():
    tensors, metadata = {}, {}
    for seed, (name, shape) in enumerate(LAYERS.items()):
        t, md = layer_file_entries(name + ".", shape, seed)
        tensors.update(t)
        metadata.update(md, **{name + ".tool_version": "0.1.0"})
    bits = sum(layer_bits(*s) for s in LAYERS.values())
    metadata.update({"format": "vkblr-blr-model", "format_version": "1", "tool_version": "0.1.0",
                     "manifest_xxh3": "00000000000000aa", "layers": json.dumps(list(LAYERS)),
                     "bpw": repr(bits / sum(s[0] * s[1] for s in LAYERS.values()))})
    return tensors, metadata


def result_entries():
    tensors, metadata = layer_file_entries("", LAYERS["a.weight"], 0)
    metadata.update({"format": "vkblr-blr", "format_version": "2", "tool_version": "0.1.0",
                     "command_line": json.dumps(["vkblr-fit", "--rank", "32"])})
    return tensors, metadata


def file_bytes(tensors, metadata, tamper=None):
    """The file of `tensors` and `metadata` with file_checksums.hpp's checksums; tamper(metadata)
    runs after they are computed (to damage the file behind them)."""
    raw = {name: raw_tensor(t) for name, t in tensors.items()}
    text = b"".join(k.encode() + b"\0" + v.encode() + b"\0" for k, v in sorted(metadata.items()))
    full = dict(metadata, **{"xxh3:" + name: checksum_hex(xxh3_64(t.data)) for name, t in raw.items()})
    full["xxh3:__metadata__"] = checksum_hex(xxh3_64(text))
    if tamper:
        tamper(full)
    return encode_header(raw, full) + b"".join(t.data for t in raw.values())


def write(name, data):
    path = os.path.join(args.work, name)
    with open(path, "wb") as f:
        f.write(data)
    return path


def test_sign_bit_order():
    """Bit j (least significant first) of word w is rank 32w + j; 1 = +1."""
    s = signs(np.array([[0x80000001, 0x00000002]], dtype=np.uint32), 64)[0]
    plus = [k for k in range(64) if s[k] == 1]
    check(plus == [0, 31, 33] and set(s) == {1.0, -1.0}, f"ranks with +1: {plus}, want [0, 31, 33]")


def test_files_read_to_the_same_weights_as_vkblr_fit():
    """Both readers accept the files and rebuild the same Ŵ, within f64 rounding (dense_tolerance)."""
    for kind, (tensors, metadata) in {"model": model_entries(), "result": result_entries()}.items():
        path = write(f"valid_{kind}.safetensors", file_bytes(tensors, metadata))
        layers = read_blr(path)
        check(list(layers) == (list(LAYERS) if kind == "model" else ["weight"]), f"{kind}: layers {list(layers)}")
        dense = os.path.join(args.work, f"valid_{kind}.dense.safetensors")
        run([args.read_back, "dense", path, dense])
        cpp = SafetensorsFile(dense)
        for name, layer in layers.items():
            tolerance = dense_tolerance(layer)
            diff = np.abs(layer.dense() - cpp.array(name))
            check(np.all(diff <= tolerance), f"{kind} {name}: Ŵ differs from vkblr-fit's by up to {diff.max()} "
                  f"(tolerance {tolerance.max()})")


def damaged_files():
    """{name: (file bytes, what load_blr's message says)}: one damage each."""
    t, md = model_entries()
    valid = file_bytes(t, md)
    first = "a.weight.path0."

    def edited(tensors=None, metadata=None, tamper=None):
        return file_bytes(dict(t, **(tensors or {})), dict(md, **(metadata or {})), tamper)
    bits = t[first + "bits_u"]
    nan_scale = t["b.weight.path0.h"].copy()
    nan_scale[3] = np.nan
    without = {k: v for k, v in t.items() if k != "a.weight.path1.g"}
    return {
        "truncated": (valid[:-100], "truncated"),
        "header_cut": (valid[:50], "past the end of the file"),
        "data_byte_flipped": (valid[:-1] + bytes([valid[-1] ^ 1]), "does not match its checksum"),
        "metadata_changed": (edited(tamper=lambda m: m.update({"a.weight.m": "48"})),
                             "the metadata does not match its checksum"),
        "checksum_removed": (edited(tamper=lambda m: m.pop("xxh3:b.weight.path0.h")), "has no checksum"),
        "wrong_dtype": (edited({first + "bits_u": RawTensor("I32", bits.shape, bits.tobytes())}),
                        "tensor a.weight.path0.bits_u I32 [64, 1], want a.weight.path0.bits_u U32 [64, 1]"),
        "wrong_shape": (edited({first + "bits_u": bits.reshape(32, 2)}),
                        "tensor a.weight.path0.bits_u U32 [32, 2], want a.weight.path0.bits_u U32 [64, 1]"),
        "wrong_scale_dtype": (edited({first + "h": t[first + "h"].astype(np.float32)}), "F32 [64], want"),
        "missing_tensor": (file_bytes(without, md), "tensor 'a.weight.path1.g' is missing"),
        "extra_tensor": (edited({"c.weight": np.zeros(4, np.float32)}), "'c.weight' belongs to none of its layers"),
        "rank_not_32s": (edited(metadata={"a.weight.rank": "33"}), "is not a blr layer"),
        "count_not_a_number": (edited(metadata={"b.weight.paths": "1x"}), "is not a u32"),
        "scale_not_finite": (edited({"b.weight.path0.h": nan_scale}), "scale h[3] of path 0 is nan"),
        "layer_bpw": (edited(metadata={"b.weight.bpw": "3.5"}), "metadata 'b.weight.bpw' = '3.5'"),
        "model_bpw": (edited(metadata={"bpw": "1"}), "metadata 'bpw' = '1'"),
        "layers_not_a_list": (edited(metadata={"layers": '"a.weight"'}), "is not a list of distinct layer names"),
        "another_format": (edited(metadata={"format": "vkblr-fit-checkpoint"}), "not a vkblr-fit blr file"),
        "another_version": (edited(metadata={"format_version": "9"}), "format version '9'"),
    }


def test_damaged_files_are_refused_by_both_readers():
    for name, (data, want) in damaged_files().items():
        path = write(f"{name}.safetensors", data)
        try:
            raises(lambda: read_blr_model(path), want, BlrFileError)
        except Failure as e:
            raise Failure(f"{name}: {e}") from None
        run([args.read_back, "dense", path, path + ".dense"], expect_rc=1)


def test_a_result_is_not_a_model_nor_the_other_way_round():
    result, model = write("result.safetensors", file_bytes(*result_entries())), \
        write("model.safetensors", file_bytes(*model_entries()))
    raises(lambda: read_blr_model(result), "not a vkblr-fit blr file (metadata 'format' is 'vkblr-blr'",
           BlrFileError)
    raises(lambda: read_blr_result(model), "'vkblr-blr-model'", BlrFileError)


main({name: f for name, f in globals().items() if name.startswith("test_")})
