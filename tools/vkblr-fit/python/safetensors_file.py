"""Reading and writing safetensors files (https://github.com/huggingface/safetensors)
in plain Python and numpy, with the checks vkblr-fit's C++ reader makes
(engine/include/vkblr/io/safetensors.hpp).

Layout: an 8-byte little-endian u64 N, N bytes of a JSON header, then the
data. The header maps each tensor name to {"dtype", "shape", "data_offsets":
[begin, end]} (byte offsets into the data, which starts right after the
header) and may hold "__metadata__", a map of strings to strings. The
tensors' byte ranges tile the data exactly: no overlap, no gap, nothing past
the end. Values are little-endian, C order.

    write_safetensors(path, {name: numpy array or RawTensor}, metadata)   # atomic
    SafetensorsFile(path)      # validated header; .tensors, .metadata, .array(name), .raw(name)

Every failure raises SafetensorsError with a message that starts with the
file's path.
"""
from __future__ import annotations

import json
import math
import os
import sys
from dataclasses import dataclass

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from atomic_write import write_file_atomic  # noqa: E402  (re-exported: dump_calibration.py imports it here)

MAX_HEADER_BYTES = 100_000_000  # the reference implementation's cap, and vkblr-fit's

# safetensors dtype -> (bytes per element, numpy dtype or None when numpy has none)
DTYPES = {
    "BOOL": (1, np.dtype("?")), "U8": (1, np.dtype("u1")), "I8": (1, np.dtype("i1")),
    "I16": (2, np.dtype("<i2")), "U16": (2, np.dtype("<u2")), "F16": (2, np.dtype("<f2")), "BF16": (2, None),
    "I32": (4, np.dtype("<i4")), "U32": (4, np.dtype("<u4")), "F32": (4, np.dtype("<f4")),
    "I64": (8, np.dtype("<i8")), "U64": (8, np.dtype("<u8")), "F64": (8, np.dtype("<f8")),
}
_NUMPY_TO_DTYPE = {np_dtype.str.lstrip("<|"): name for name, (_, np_dtype) in DTYPES.items() if np_dtype is not None}


class SafetensorsError(ValueError):
    pass


@dataclass(frozen=True)
class RawTensor:
    """A tensor as stored: a dtype name of DTYPES, a shape, its little-endian bytes."""
    dtype: str
    shape: tuple
    data: bytes


@dataclass(frozen=True)
class TensorInfo:
    name: str
    dtype: str
    shape: tuple
    begin: int  # byte range in the data section
    end: int

    def describe(self) -> str:
        return f"{self.name} {self.dtype} {list(self.shape)}"


def raw_tensor(value) -> RawTensor:
    """A numpy array (little-endian or native, any of DTYPES but BF16) or a RawTensor as a RawTensor."""
    if isinstance(value, RawTensor):
        return value
    array = np.ascontiguousarray(value)
    name = _NUMPY_TO_DTYPE.get(array.dtype.newbyteorder("<").str.lstrip("<|"))
    if name is None:
        raise SafetensorsError(f"numpy dtype {array.dtype} has no safetensors dtype")
    return RawTensor(name, tuple(int(d) for d in array.shape), array.astype(DTYPES[name][1], copy=False).tobytes())


def encode_header(tensors: dict, metadata: dict | None = None) -> bytes:
    """The 8-byte length and the JSON header of `tensors` ({name: RawTensor}, data laid out in
    that order), padded with spaces to a multiple of 8 bytes so the data starts aligned."""
    header, offset = {}, 0
    if metadata:
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
            raise SafetensorsError("__metadata__ must map strings to strings")
        header["__metadata__"] = dict(metadata)
    for name, t in tensors.items():
        if name == "__metadata__":
            raise SafetensorsError("'__metadata__' is not a tensor name")
        if t.dtype not in DTYPES:
            raise SafetensorsError(f"tensor '{name}': unknown dtype {t.dtype}")
        if len(t.data) != DTYPES[t.dtype][0] * math.prod(t.shape):
            raise SafetensorsError(f"tensor '{name}': {len(t.data)} bytes for {t.dtype} {list(t.shape)}")
        header[name] = {"dtype": t.dtype, "shape": list(t.shape), "data_offsets": [offset, offset + len(t.data)]}
        offset += len(t.data)
    text = json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    return len(text).to_bytes(8, "little") + text


def write_safetensors(path: str, tensors: dict, metadata: dict | None = None) -> None:
    """Writes {name: numpy array or RawTensor} (in that order) and string metadata to `path`, atomically."""
    raw = {name: raw_tensor(v) for name, v in tensors.items()}
    header = encode_header(raw, metadata)

    def write(f):
        f.write(header)
        for t in raw.values():
            f.write(t.data)
    write_file_atomic(path, write)


def _no_duplicate_keys(pairs):
    result = {}
    for k, v in pairs:
        if k in result:
            raise SafetensorsError(f"key '{k[:200]}' appears twice in one object")
        result[k] = v
    return result


class SafetensorsFile:
    """A validated safetensors file: header, dtypes, shapes and the data layout are checked on
    opening (no tensor data is read then)."""

    def __init__(self, path: str):
        self.path = path
        if not os.path.isfile(path):
            raise SafetensorsError(f"{path}: not a regular file" if os.path.exists(path) else f"{path} does not exist")
        self._file_bytes = os.path.getsize(path)
        with open(path, "rb") as f:
            head = f.read(8)
            if len(head) < 8:
                raise SafetensorsError(f"{path}: {len(head)} bytes: too short for a safetensors file (truncated?)")
            n = int.from_bytes(head, "little")
            if n > MAX_HEADER_BYTES or 8 + n > self._file_bytes:
                raise SafetensorsError(f"{path}: header length {n} is past the end of the file ({self._file_bytes} "
                                       "bytes) or over 100 MB: truncated, or not a safetensors file")
            text = f.read(n)
        self._data_start = 8 + n
        try:
            header = json.loads(text.decode("utf-8"), object_pairs_hook=_no_duplicate_keys)
        except (UnicodeDecodeError, ValueError, RecursionError) as e:
            raise SafetensorsError(f"{path}: header: {e}") from None
        if not isinstance(header, dict):
            raise SafetensorsError(f"{path}: header is not a JSON object")
        self.metadata = header.pop("__metadata__", {})
        if not isinstance(self.metadata, dict) or not all(isinstance(v, str) for v in self.metadata.values()):
            raise SafetensorsError(f"{path}: __metadata__ is not a map of strings to strings")
        self.tensors = {name: self._entry(name, e) for name, e in header.items()}
        self._check_layout()

    def _entry(self, name: str, e) -> TensorInfo:
        where = f"{self.path}: tensor '{name[:200]}'"
        if not isinstance(e, dict) or set(e) != {"dtype", "shape", "data_offsets"}:
            raise SafetensorsError(f"{where}: want an object of dtype, shape and data_offsets")
        dtype, shape, offsets = e["dtype"], e["shape"], e["data_offsets"]
        if dtype not in DTYPES:
            raise SafetensorsError(f"{where}: dtype {str(dtype)[:40]} is not one this reader knows")
        natural = lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0  # noqa: E731
        if not isinstance(shape, list) or not all(natural(d) for d in shape):
            raise SafetensorsError(f"{where}: shape {str(shape)[:80]} is not a list of counts")
        if not (isinstance(offsets, list) and len(offsets) == 2 and all(natural(o) for o in offsets)
                and offsets[0] <= offsets[1]):
            raise SafetensorsError(f"{where}: data_offsets {str(offsets)[:80]} are not [begin, end]")
        info = TensorInfo(name, dtype, tuple(shape), offsets[0], offsets[1])
        if info.end - info.begin != DTYPES[dtype][0] * math.prod(shape):
            raise SafetensorsError(f"{where}: {info.end - info.begin} bytes for {dtype} {shape}")
        return info

    def _check_layout(self) -> None:
        at = 0
        for t in sorted(self.tensors.values(), key=lambda t: (t.begin, t.end)):
            if t.begin != at:
                what = "overlaps the tensor before it" if t.begin < at else f"leaves bytes {at}..{t.begin} unused"
                raise SafetensorsError(f"{self.path}: tensor {t.describe()} at data bytes {t.begin}..{t.end} {what}")
            at = t.end
        data_bytes = self._file_bytes - self._data_start
        if at != data_bytes:
            what = "truncated" if at > data_bytes else "bytes after the last tensor"
            raise SafetensorsError(f"{self.path}: the tensors take {at} data bytes but the file holds {data_bytes} "
                                   f"({what})")

    def tensor(self, name: str) -> TensorInfo:
        if name not in self.tensors:
            listing = "".join(f"\n  {t.describe()}" for t in self.tensors.values())
            raise SafetensorsError(f"{self.path} has no tensor '{name[:200]}'; its tensors are:{listing}")
        return self.tensors[name]

    def raw(self, name: str) -> bytes:
        """The tensor's stored bytes."""
        t = self.tensor(name)
        with open(self.path, "rb") as f:
            f.seek(self._data_start + t.begin)
            data = f.read(t.end - t.begin)
        if len(data) != t.end - t.begin:
            raise SafetensorsError(f"{self.path}: tensor {t.describe()}: the file ended early (changed while read?)")
        return data

    def array(self, name: str) -> np.ndarray:
        """The tensor as a numpy array of its stored dtype (BF16 widened to float32, exactly)."""
        t = self.tensor(name)
        data = self.raw(name)
        if t.dtype == "BF16":
            return (np.frombuffer(data, "<u2").astype(np.uint32) << 16).view("<f4").reshape(t.shape)
        return np.frombuffer(data, DTYPES[t.dtype][1]).reshape(t.shape)
