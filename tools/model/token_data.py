"""Token streams and windows of the corpus, for training, calibration and
evaluation.

    split_stream(corpus_dir, split) -> (tokens np.uint16, text bytes, documents)
        byte_tokenizer.document_stream of the split's documents, in the file's
        order: [EOT] d1 [EOT] d2 ... [EOT] dN [EOT]
    sample_windows(tokens, count, length, seed) -> torch.int64 [count][length]
        `count` windows of `length` consecutive tokens at starts drawn uniformly
        (numpy's PCG64 seeded by `seed`): the same arguments give the same windows
    calibration_batches(corpus_dir, tokens, length, seed, batch_rows)
        ceil(tokens / length) training windows, as a list of [rows][length]
        batches: the calibration text of layerwise.py and qat_peer.py
"""
from __future__ import annotations

import math
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from byte_tokenizer import document_stream  # noqa: E402
from corpus import read_documents  # noqa: E402


def split_stream(corpus_dir: str, split: str) -> tuple:
    documents = read_documents(corpus_dir, split)
    texts = [t for _, t in documents]
    return document_stream(texts), sum(len(t.encode("utf-8")) for t in texts), len(texts)


def sample_windows(tokens: np.ndarray, count: int, length: int, seed: int) -> torch.Tensor:
    if length < 1 or count < 1:
        raise ValueError(f"{count} windows of {length} tokens: want at least one of at least one token")
    if tokens.shape[0] < length:
        raise ValueError(f"a stream of {tokens.shape[0]} tokens has no window of {length}")
    starts = np.random.Generator(np.random.PCG64(seed)).integers(0, tokens.shape[0] - length + 1, size=count)
    index = starts[:, None] + np.arange(length)[None, :]
    return torch.from_numpy(tokens[index].astype(np.int64))


def calibration_batches(corpus_dir: str, tokens: int, length: int, seed: int, batch_rows: int = 1) -> list:
    stream, _, _ = split_stream(corpus_dir, "train")
    windows = sample_windows(stream, math.ceil(tokens / length), length, seed)
    return list(torch.split(windows, batch_rows))
