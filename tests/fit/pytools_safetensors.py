"""The safetensors writer and reader (safetensors_file.py) and the XXH3 of
vkblr-fit's Python tools, against vkblr-fit's C++ reader and xxHash itself.

    python3 pytools_safetensors.py --work DIR --fit VKBLR_FIT --read-back VKBLR_FIT_READ_BACK

vkblr-fit-read-back (tests/fit/read_back.cpp) `widen FILE OUT` reads a file
with vkblr-fit's SafetensorsReader and writes every tensor as F32, so a file
written here and read there must give back the values written, bit for bit
(F16 and BF16 widen exactly, F64 rounds to nearest even as numpy does).
"""
import ctypes
import os

from pytools_support import check, main, options, raises, require_modules, run

require_modules("numpy")
import numpy as np  # noqa: E402
from safetensors_file import (RawTensor, SafetensorsError, SafetensorsFile, encode_header,  # noqa: E402
                              write_file_atomic, write_safetensors)
from xxh3 import xxh3_64  # noqa: E402

args = options()
rng = np.random.default_rng(5)


def bf16_bytes(values):
    """BF16 of f32 values whose low 16 bits are zero (exact), and those values."""
    bits = (values.astype(np.float32).view(np.uint32) & 0xFFFF0000).astype(np.uint32)
    return (bits >> 16).astype("<u2").tobytes(), bits.view(np.float32)


def test_xxh3_equals_xxhash():
    """Every length up to 2100 bytes (every branch: 0, 1-3, 4-8, 9-16, 17-128, 129-240, whole
    and partial 1024-byte blocks) and a few long ones, against libxxhash's XXH3_64bits."""
    lib = ctypes.CDLL("libxxhash.so.0")
    lib.XXH3_64bits.restype = ctypes.c_uint64
    lib.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    for n in list(range(2101)) + [4096, 4097, 65536 + 7, 1 << 21]:
        data = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
        check(xxh3_64(data) == lib.XXH3_64bits(data, n), f"XXH3 of {n} random bytes differs from libxxhash's")
    a = rng.standard_normal((33, 17)).astype(np.float32)
    check(xxh3_64(a) == lib.XXH3_64bits(a.tobytes(), a.nbytes), "XXH3 of a numpy array is not that of its bytes")
    check(xxh3_64(a.T) == xxh3_64(np.ascontiguousarray(a.T)), "XXH3 of a transposed array: not its C-order bytes")


def test_written_files_read_back_exactly():
    """Tensors of every float dtype vkblr-fit reads, odd sizes (so later tensors start unaligned),
    and metadata of every length modulo 8 (every amount of header padding), non-ASCII included."""
    bf16, bf16_values = bf16_bytes(rng.standard_normal(6))
    tensors = {
        "w.f32": rng.standard_normal((3, 5)).astype(np.float32),
        "odd.f16": rng.standard_normal(7).astype(np.float16),
        "b.bf16": RawTensor("BF16", (2, 3), bf16),
        "ω.f64": rng.standard_normal((4, 4)) * 1e3,
        "empty": np.zeros((0, 4), np.float32),
    }
    want = {"w.f32": tensors["w.f32"], "odd.f16": tensors["odd.f16"].astype(np.float32),
            "b.bf16": bf16_values.reshape(2, 3), "ω.f64": tensors["ω.f64"].astype(np.float32),
            "empty": tensors["empty"]}
    for pad in range(8):
        path, back = os.path.join(args.work, f"w{pad}.safetensors"), os.path.join(args.work, f"w{pad}.f32.safetensors")
        write_safetensors(path, tensors, {"note": "x" * pad, "名前": "värde"})
        with open(path, "rb") as f:
            header_bytes = int.from_bytes(f.read(8), "little")
        check(header_bytes % 8 == 0, f"header of {header_bytes} bytes: the data does not start 8-byte aligned")
        check(oct(os.stat(path).st_mode & 0o777) == oct(0o644), f"{path} has mode {oct(os.stat(path).st_mode)}")
        run([args.read_back, "widen", path, back])
        widened = SafetensorsFile(back)
        check(list(widened.tensors) == sorted(tensors), f"C++ read tensors {list(widened.tensors)}")
        for name, values in want.items():
            got = widened.array(name)
            check(got.dtype == np.float32 and got.shape == values.shape and
                  np.array_equal(got.view(np.uint32), values.view(np.uint32)),
                  f"{name} (header padding {pad}): the C++ reader read other values")
        ours = SafetensorsFile(path)
        check(ours.metadata == {"note": "x" * pad, "名前": "värde"}, f"metadata read back as {ours.metadata}")
        check(np.array_equal(ours.array("b.bf16"), want["b.bf16"]), "BF16 read back by this reader differs")


def test_atomic_write_keeps_the_old_file_on_failure():
    path = os.path.join(args.work, "atomic.safetensors")
    write_safetensors(path, {"a": np.ones(3, np.float32)})
    before, entries = open(path, "rb").read(), sorted(os.listdir(args.work))

    def fail(f):
        f.write(b"partial")
        raise OSError("disk full")
    raises(lambda: write_file_atomic(path, fail), "disk full", OSError)
    check(open(path, "rb").read() == before, "a failed write changed the file")
    check(sorted(os.listdir(args.work)) == entries, "a failed write left a temporary file")


def test_writer_refuses_what_it_cannot_write():
    raises(lambda: encode_header({"a": RawTensor("F32", (2,), b"\0" * 4)}), "4 bytes for F32 [2]", SafetensorsError)
    raises(lambda: encode_header({"a": RawTensor("Q4", (2,), b"\0")}), "unknown dtype Q4", SafetensorsError)
    raises(lambda: encode_header({"__metadata__": RawTensor("U8", (1,), b"\0")}), "not a tensor name",
           SafetensorsError)
    raises(lambda: write_safetensors(os.path.join(args.work, "c.safetensors"), {"c": np.zeros(2, np.complex64)}),
           "has no safetensors dtype", SafetensorsError)


def write_raw(name, header_text, data=b""):
    path = os.path.join(args.work, name)
    with open(path, "wb") as f:
        f.write(len(header_text).to_bytes(8, "little") + header_text + data)
    return path


def test_reader_refuses_malformed_files():
    """The reader's checks of the layout, each also refused by vkblr-fit's C++ reader."""
    good = encode_header({"a": RawTensor("F32", (2,), b"\0" * 8), "b": RawTensor("U8", (4,), b"\1" * 4)})
    cases = {
        "truncated": (good[8:], b"\0" * 8 + b"\1" * 3, "truncated"),
        "trailing": (good[8:], b"\0" * 8 + b"\1" * 5, "bytes after the last tensor"),
        "overlap": (b'{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},'
                    b'"b":{"dtype":"U8","shape":[4],"data_offsets":[4,8]}}', b"\0" * 8, "overlaps"),
        "gap": (b'{"a":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}}', b"\0" * 4, "unused"),
        "bytes": (b'{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}', b"\0" * 8, "8 bytes for F32 [3]"),
        "dtype": (b'{"a":{"dtype":"F17","shape":[2],"data_offsets":[0,8]}}', b"\0" * 8, "dtype F17"),
        "twice": (b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},'
                  b'"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', b"\0", "appears twice"),
        "json": (b'{"a": [', b"", "header:"),
        "deep": (b"[" * 100000 + b"]" * 100000, b"", "header:"),
    }
    for name, (header, data, want) in cases.items():
        path = write_raw(f"{name}.safetensors", header, data)
        raises(lambda: SafetensorsFile(path), want, SafetensorsError)
        run([args.read_back, "widen", path, path + ".out"], expect_rc=1)
    for name, content, want in [("short", b"\x10\0\0", "too short"),
                                ("past", good[:40], "past the end of the file")]:  # a header cut short
        path = os.path.join(args.work, f"{name}.safetensors")
        with open(path, "wb") as f:
            f.write(content)
        raises(lambda: SafetensorsFile(path), want, SafetensorsError)
        run([args.read_back, "widen", path, path + ".out"], expect_rc=1)
    raises(lambda: SafetensorsFile(os.path.join(args.work, "missing.safetensors")), "does not exist",
           SafetensorsError)
    raises(lambda: SafetensorsFile(args.work), "not a regular file", SafetensorsError)


main({name: f for name, f in globals().items() if name.startswith("test_")})
