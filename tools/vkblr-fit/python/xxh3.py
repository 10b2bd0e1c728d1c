"""XXH3-64 (xxHash 0.8, seed 0, the default secret): the checksum vkblr-fit
writes into its files (engine/include/vkblr/io/checksum.hpp), in Python and numpy.

    xxh3_64(data) -> int      data: bytes, bytearray, memoryview or a numpy array
    checksum_hex(value) -> "0123456789abcdef" (vkblr-fit's 16 lowercase hex digits)

Uses the `xxhash` package when it is installed; otherwise this module's
implementation of the reference (xxhash.h: XXH3_64bits), with inputs over
240 bytes hashed in numpy, 1024-byte blocks at a time (about 30 MB/s; the
package is far faster). Words are read little-endian, as the reference does.
"""
from __future__ import annotations

import numpy as np

try:
    import xxhash as _xxhash
except ImportError:
    _xxhash = None

_M64 = (1 << 64) - 1
_PRIME32_1, _PRIME32_2, _PRIME32_3 = 0x9E3779B1, 0x85EBCA77, 0xC2B2AE3D
_PRIME64_1, _PRIME64_2, _PRIME64_3 = 0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9
_PRIME64_4, _PRIME64_5 = 0x85EBCA77C2B2AE63, 0x27D4EB2F165667C5
_PRIME_MX1, _PRIME_MX2 = 0x165667919E3779F9, 0x9FB21C651E98DF25

# XXH3_kSecret, 192 bytes
_SECRET = bytes.fromhex(
    "b8fe6c3923a44bbe7c01812cf721ad1cded46de9839097db7240a4a4b7b3671f"
    "cb79e64eccc0e578825ad07dccff7221b8084674f743248ee03590e6813a264c"
    "3c2852bb91c300cb88d0658b1b532ea371644897a20df94e3819ef46a9deacd8"
    "a8fa763fe39c343ff9dcbbc7c70b4f1d8a51e04bcdb45931c89f7ec9d9787364"
    "eac5ac8334d3ebc3c581a0fffa1363eb170ddd51b7f0da49d316552629d4689e"
    "2b16be587d47a1fc8ff8b8d17ad031ce45cb3a8f95160428afd7fbcabb4b407e")
_STRIPE = 64          # bytes per stripe
_STRIPES_PER_BLOCK = (len(_SECRET) - _STRIPE) // 8  # 16: the secret advances 8 bytes a stripe
_BLOCK = _STRIPE * _STRIPES_PER_BLOCK  # 1024


def _le64(b: bytes, at: int) -> int:
    return int.from_bytes(b[at:at + 8], "little")


def _le32(b: bytes, at: int) -> int:
    return int.from_bytes(b[at:at + 4], "little")


def _mul128_fold64(a: int, b: int) -> int:
    p = a * b
    return (p ^ (p >> 64)) & _M64


def _avalanche(h: int) -> int:  # XXH3_avalanche
    h ^= h >> 37
    h = (h * _PRIME_MX1) & _M64
    return h ^ (h >> 32)


def _xxh64_avalanche(h: int) -> int:
    h ^= h >> 33
    h = (h * _PRIME64_2) & _M64
    h ^= h >> 29
    h = (h * _PRIME64_3) & _M64
    return h ^ (h >> 32)


def _rrmxmx(h: int, length: int) -> int:
    rotl = lambda x, r: ((x << r) | (x >> (64 - r))) & _M64  # noqa: E731
    h ^= rotl(h, 49) ^ rotl(h, 24)
    h = (h * _PRIME_MX2) & _M64
    h ^= (h >> 35) + length
    h = (h * _PRIME_MX2) & _M64
    return h ^ (h >> 28)


def _mix16(b: bytes, at: int, secret_at: int) -> int:
    return _mul128_fold64(_le64(b, at) ^ _le64(_SECRET, secret_at), _le64(b, at + 8) ^ _le64(_SECRET, secret_at + 8))


def _short(b: bytes) -> int:
    """Inputs of at most 240 bytes (XXH3_len_0to16, 17to128, 129to240)."""
    n, s = len(b), _SECRET
    if n == 0:
        return _xxh64_avalanche(_le64(s, 56) ^ _le64(s, 64))
    if n <= 3:
        combined = (b[0] << 16) | (b[n >> 1] << 24) | b[n - 1] | (n << 8)
        return _xxh64_avalanche(combined ^ (_le32(s, 0) ^ _le32(s, 4)))
    if n <= 8:
        keyed = (_le32(b, n - 4) + (_le32(b, 0) << 32)) ^ (_le64(s, 8) ^ _le64(s, 16))
        return _rrmxmx(keyed, n)
    if n <= 16:
        lo = _le64(b, 0) ^ (_le64(s, 24) ^ _le64(s, 32))
        hi = _le64(b, n - 8) ^ (_le64(s, 40) ^ _le64(s, 48))
        swapped = int.from_bytes(lo.to_bytes(8, "little"), "big")
        return _avalanche((n + swapped + hi + _mul128_fold64(lo, hi)) & _M64)
    acc = n * _PRIME64_1
    if n <= 128:
        for i in range((n - 1) // 32, -1, -1):  # pairs from both ends, outermost last
            acc += _mix16(b, 16 * i, 32 * i) + _mix16(b, n - 16 * (i + 1), 32 * i + 16)
        return _avalanche(acc & _M64)
    for i in range(8):
        acc += _mix16(b, 16 * i, 16 * i)
    acc = _avalanche(acc & _M64)
    end = _mix16(b, n - 16, 136 - 17)
    for i in range(8, n // 16):
        end += _mix16(b, 16 * i, 16 * (i - 8) + 3)
    return _avalanche((acc + end) & _M64)


def _stripe_keys(first: int, count: int) -> np.ndarray:
    """The secret's 8 little-endian u64 words at byte offsets first + 8s, s < count: [count][8]."""
    return np.stack([np.frombuffer(_SECRET, "<u8", 8, first + 8 * s) for s in range(count)])


_BLOCK_KEYS = _stripe_keys(0, _STRIPES_PER_BLOCK)
_SCRAMBLE_KEY = np.frombuffer(_SECRET, "<u8", 8, len(_SECRET) - _STRIPE)
_LAST_KEY = np.frombuffer(_SECRET, "<u8", 8, len(_SECRET) - _STRIPE - 7)
_SWAP_LANES = [1, 0, 3, 2, 5, 4, 7, 6]


def _stripe_sums(lanes: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """What XXH3_accumulate_512 adds to the 8 accumulators, summed over stripes.

    lanes: u64 [..., stripes, 8]; keys: u64 [stripes, 8]. Returns u64 [..., 8]
    (uint64 arithmetic wraps modulo 2^64, as the reference's does)."""
    keyed = lanes ^ keys
    products = (keyed & np.uint64(0xFFFFFFFF)) * (keyed >> np.uint64(32))
    return (products + lanes[..., _SWAP_LANES]).sum(axis=-2, dtype=np.uint64)


def _long(data: np.ndarray) -> int:
    """Inputs over 240 bytes (XXH3_hashLong_64b): data is u8 [n]."""
    n = data.size
    acc = np.array([_PRIME32_3, _PRIME64_1, _PRIME64_2, _PRIME64_3, _PRIME64_4, _PRIME32_2, _PRIME64_5, _PRIME32_1],
                   dtype=np.uint64)
    blocks = (n - 1) // _BLOCK
    chunk = 4096  # blocks per numpy pass (4 MiB): bounded temporaries
    for first in range(0, blocks, chunk):
        count = min(chunk, blocks - first)
        raw = data[first * _BLOCK:(first + count) * _BLOCK]
        sums = _stripe_sums(raw.view("<u8").reshape(count, _STRIPES_PER_BLOCK, 8), _BLOCK_KEYS)
        for s in sums:  # scrambling after each block keeps the blocks in order
            acc += s
            acc ^= acc >> np.uint64(47)
            acc ^= _SCRAMBLE_KEY
            acc *= np.uint64(_PRIME32_1)
    tail = data[blocks * _BLOCK:]
    stripes = (n - 1 - blocks * _BLOCK) // _STRIPE
    if stripes:
        acc += _stripe_sums(tail[:stripes * _STRIPE].view("<u8").reshape(stripes, 8), _stripe_keys(0, stripes))
    acc += _stripe_sums(data[n - _STRIPE:].view("<u8").reshape(1, 8), _LAST_KEY.reshape(1, 8))
    a = [int(v) for v in acc]
    result = n * _PRIME64_1
    for i in range(4):  # XXH3_mergeAccs, from secret byte 11
        result += _mul128_fold64(a[2 * i] ^ _le64(_SECRET, 11 + 16 * i), a[2 * i + 1] ^ _le64(_SECRET, 19 + 16 * i))
    return _avalanche(result & _M64)


def xxh3_64(data) -> int:
    """XXH3-64 of data's bytes (a numpy array: its bytes in memory, C order)."""
    if isinstance(data, np.ndarray):
        data = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    else:
        data = np.frombuffer(memoryview(data).cast("B"), dtype=np.uint8)
    if _xxhash is not None:
        return _xxhash.xxh3_64_intdigest(data)
    if data.size <= 240:
        return _short(data.tobytes())
    with np.errstate(over="ignore"):
        return _long(data)


def checksum_hex(value: int) -> str:
    return f"{value:016x}"
