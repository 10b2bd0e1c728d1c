#!/usr/bin/env python3
"""The corpus's token streams as .npy files, for programs that read token ids
(vkblr::io::read_npy_token_ids) rather than the corpus's JSON lines.

    python3 tools/model/export_tokens.py --corpus .corpus --out DIR

Writes, each atomically: DIR/train.npy and DIR/heldout.npy, 1-D uint16, the
splits' document streams exactly as token_data.split_stream gives them
([EOT] d1 [EOT] d2 ... dN [EOT], byte_tokenizer's ids), and DIR/tokens.json:
the vocabulary size (272), per split the token, byte and document counts
and the .npy file's sha256, and the corpus manifest's package, version and
sha256s. The same corpus gives the same bytes.
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


def export(corpus: str, out: str) -> dict:
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
    write_json_atomic(os.path.join(out, "tokens.json"), report)
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", required=True, help="make_corpus.py's directory")
    parser.add_argument("--out", required=True, help="directory for train.npy, heldout.npy, tokens.json")
    args = parser.parse_args()
    try:
        report = export(args.corpus, args.out)
    except (CorpusError, OSError) as e:
        print(f"export_tokens: {e}", file=sys.stderr)
        return 1
    s = report["splits"]
    print(f"export_tokens: {s['train']['tokens']} training and {s['heldout']['tokens']} held-out tokens "
          f"(vocabulary {report['vocab_size']}); wrote {args.out}/train.npy, heldout.npy, tokens.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
