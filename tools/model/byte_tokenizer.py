"""The reference model's vocabulary: one token per byte of UTF-8 text, and
one special token, and its Hugging Face tokenizer files.

    ids 0..255   the bytes 0x00..0xff
    id 256       <|endoftext|>: precedes every document and ends the last
                 (bos_token_id = eos_token_id = 256)
    ids 257..271 unused (the vocabulary is padded to 272, a multiple of 16,
                 so that lm_head's sides are multiples of 16, as vkblr-fit
                 wants; the model never sees them)

    encode(text) -> list of ids           the text's UTF-8 bytes
    decode(ids) -> str                    bytes back to text (the special token dropped)
    document_stream(texts) -> np.uint16   [EOT] d1 [EOT] d2 [EOT] ... dN [EOT]
    write_tokenizer_files(dir, context)   tokenizer.json, tokenizer_config.json,
                                          special_tokens_map.json

tokenizer.json is the `tokenizers` library's serialization (version "1.0")
of a tokenizer that gives the same ids: no normalizer; the ByteLevel
pre-tokenizer without a prefix space and without its splitting regex
(the whole text is one piece, its bytes mapped to printable characters by
GPT-2's byte-to-character table); a BPE model whose vocabulary is the 256
byte characters, id = byte value, with no merges (so every byte is one
token); the ByteLevel decoder; no post-processor (no token is added); and
<|endoftext|> as an added special token, id 256 (the first id after the
model's vocabulary, which is the id the library gives it). A text that
holds the literal string "<|endoftext|>" is the one input on which the
library (which splits added tokens out first) and encode() differ.
"""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from atomic_file import write_json_atomic  # noqa: E402

BYTES = 256
EOT = 256
EOT_TEXT = "<|endoftext|>"
VOCAB_SIZE = 272


def encode(text: str) -> list:
    return list(text.encode("utf-8"))


def decode(ids) -> str:
    return bytes(int(i) for i in ids if int(i) < BYTES).decode("utf-8", errors="replace")


def document_stream(texts) -> np.ndarray:
    """The token stream of documents: each preceded by EOT, and EOT after the last."""
    parts = []
    for text in texts:
        parts.append(np.array([EOT], dtype=np.uint16))
        parts.append(np.frombuffer(text.encode("utf-8"), dtype=np.uint8).astype(np.uint16))
    parts.append(np.array([EOT], dtype=np.uint16))
    return np.concatenate(parts)


def byte_characters() -> list:
    """GPT-2's table: the character byte b stands for, for b in 0..255. The printable bytes
    '!'..'~', 0xa1..0xac and 0xae..0xff stand for themselves; the others, in byte order, for
    the characters U+0100, U+0101, ..."""
    printable = set(range(ord("!"), ord("~") + 1)) | set(range(0xA1, 0xAD)) | set(range(0xAE, 0x100))
    table, extra = [], 0
    for b in range(BYTES):
        if b in printable:
            table.append(chr(b))
        else:
            table.append(chr(0x100 + extra))
            extra += 1
    return table


def tokenizer_json() -> dict:
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [{"id": EOT, "content": EOT_TEXT, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True}],
        "normalizer": None,
        "pre_tokenizer": byte_level,
        "post_processor": None,
        "decoder": byte_level,
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": {c: i for i, c in enumerate(byte_characters())}, "merges": []},
    }


def tokenizer_config(context: int) -> dict:
    """tokenizer_config.json for transformers' PreTrainedTokenizerFast (AutoTokenizer)."""
    return {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": EOT_TEXT, "eos_token": EOT_TEXT,
            "model_max_length": context, "clean_up_tokenization_spaces": False,
            "added_tokens_decoder": {str(EOT): {"content": EOT_TEXT, "single_word": False, "lstrip": False,
                                                "rstrip": False, "normalized": False, "special": True}}}


def write_tokenizer_files(directory: str, context: int) -> None:
    write_json_atomic(os.path.join(directory, "tokenizer.json"), tokenizer_json())
    write_json_atomic(os.path.join(directory, "tokenizer_config.json"), tokenizer_config(context))
    write_json_atomic(os.path.join(directory, "special_tokens_map.json"), {"bos_token": EOT_TEXT,
                                                                           "eos_token": EOT_TEXT})
