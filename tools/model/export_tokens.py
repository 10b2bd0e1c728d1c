#!/usr/bin/env python3
"""The corpus's token streams as .npy files, for programs that read token ids
(vkblr::io::read_npy_token_ids) rather than the corpus's JSON lines.

    python3 tools/model/export_tokens.py --corpus .corpus --out DIR
        [--train-windows TOKENS --context T [--seed 1]]

Writes, each atomically: DIR/train.npy and DIR/heldout.npy, 1-D uint16, the
splits' document streams exactly as token_data.split_stream gives them
([EOT] d1 [EOT] d2 ... dN [EOT], byte_tokenizer's ids), and DIR/tokens.json:
the vocabulary size (272), per split the token, byte and document counts
and the .npy file's sha256, and the corpus manifest's package, version and
sha256s. The same corpus gives the same bytes.

With --train-windows TOKENS, also DIR/train_windows.npy: uint16
[ceil(TOKENS / T)][T], the training windows of
token_data.calibration_batches(corpus, TOKENS, T, seed) in their order —
the very windows tools/lab/qat_peer.py trains on with --train-tokens TOKENS
--seed S on a model of context T, for vkblr-train --train — and in
tokens.json "train_windows" (file, windows, context, tokens, seed, sha256).
"""
from __future__ import annotations

import argparse
import hashlib
import io
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from atomic_file import write_bytes_atomic, write_json_atomic  # noqa: E402
from byte_tokenizer import VOCAB_SIZE  # noqa: E402
from corpus import CorpusError, read_manifest  # noqa: E402
from token_data import split_stream  # noqa: E402


def npy_bytes(tokens: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, np.ascontiguousarray(tokens, dtype="<u2"), allow_pickle=False)
    return buffer.getvalue()


def export(corpus: str, out: str, train_windows: int | None = None, context: int | None = None,
           seed: int = 1) -> dict:
    manifest = read_manifest(corpus)
    os.makedirs(out, exist_ok=True)
    report = {"vocab_size": VOCAB_SIZE, "dtype": "uint16", "splits": {},
              "corpus": {k: manifest[k] for k in ("package", "version", "deb_sha256") if k in manifest}}
    for split in ("train", "heldout"):
        tokens, text_bytes, documents = split_stream(corpus, split)
        data = npy_bytes(tokens)
        write_bytes_atomic(os.path.join(out, f"{split}.npy"), data)
        report["splits"][split] = {"file": f"{split}.npy", "tokens": int(tokens.shape[0]), "bytes": text_bytes,
                                   "documents": documents, "sha256": hashlib.sha256(data).hexdigest()}
    if train_windows is not None:
        from token_data import calibration_batches
        windows = np.concatenate([b.numpy() for b in calibration_batches(corpus, train_windows, context, seed)])
        data = npy_bytes(windows)
        write_bytes_atomic(os.path.join(out, "train_windows.npy"), data)
        report["train_windows"] = {"file": "train_windows.npy", "windows": int(windows.shape[0]), "context": context,
                                   "tokens": train_windows, "seed": seed, "sha256": hashlib.sha256(data).hexdigest()}
    write_json_atomic(os.path.join(out, "tokens.json"), report)
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", required=True, help="make_corpus.py's directory")
    parser.add_argument("--out", required=True, help="directory for train.npy, heldout.npy, tokens.json")
    parser.add_argument("--train-windows", type=int, metavar="TOKENS",
                        help="also train_windows.npy: calibration_batches' windows for TOKENS training tokens")
    parser.add_argument("--context", type=int, help="with --train-windows: the window length (the model's context)")
    parser.add_argument("--seed", type=int, default=1, help="with --train-windows: the windows' seed (default 1)")
    args = parser.parse_args()
    if (args.train_windows is None) != (args.context is None):
        parser.error("--train-windows and --context go together")
    if args.train_windows is not None and min(args.train_windows, args.context) < 1:
        parser.error("--train-windows and --context must be at least 1")
    try:
        report = export(args.corpus, args.out, args.train_windows, args.context, args.seed)
    except (CorpusError, OSError) as e:
        print(f"export_tokens: {e}", file=sys.stderr)
        return 1
    s = report["splits"]
    print(f"export_tokens: {s['train']['tokens']} training and {s['heldout']['tokens']} held-out tokens "
          f"(vocabulary {report['vocab_size']}); wrote {args.out}/train.npy, heldout.npy, tokens.json")
    if "train_windows" in report:
        w = report["train_windows"]
        print(f"export_tokens: {w['windows']} training windows of {w['context']} (seed {w['seed']}) in "
              f"{args.out}/train_windows.npy")
    return 0


if __name__ == "__main__":
    sys.exit(main())
