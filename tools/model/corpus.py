"""The text corpus of the reference model: its split, its files and their
checks (make_corpus.py writes it; train_reference.py, evaluate.py and
layerwise.py read it).

A corpus directory holds

    train.jsonl     the training documents, one JSON object a line:
    heldout.jsonl   {"path": "<the document's path in the package>", "text": "<its text>"}
    corpus.json     the manifest: format "vkblr-corpus" version 1, the package and
                    version the text came from, how it was extracted, the split's
                    seed and target, and per file its document count, text bytes
                    (UTF-8 bytes of the texts), file bytes and sha256

The split is by whole documents: a document is held out or trained on,
never both. Which is fixed by a hash of the seed and the document's path
alone (split_documents), so it does not depend on the other documents or
their order.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from atomic_file import write_bytes_atomic  # noqa: E402

FORMAT, VERSION = "vkblr-corpus", 1
SPLITS = ("train", "heldout")


class CorpusError(ValueError):
    pass


def split_key(seed: int, path: str) -> bytes:
    return hashlib.sha256(f"{seed}\0{path}".encode()).digest()


def split_documents(documents: list, seed: int, held_out_bytes: int) -> tuple:
    """(train, heldout) from [(path, text)] of distinct paths: the documents in the order of
    split_key(seed, path) go to the held-out set until its texts take at least held_out_bytes
    UTF-8 bytes (at least one document, and at least one left for training); each list is
    returned in path order."""
    paths = [p for p, _ in documents]
    if len(set(paths)) != len(paths):
        raise CorpusError("two documents share a path")
    if len(documents) < 2:
        raise CorpusError(f"{len(documents)} document(s): a split needs at least two")
    ordered = sorted(documents, key=lambda d: split_key(seed, d[0]))
    held, taken = [], 0
    for doc in ordered[:-1]:
        if held and taken >= held_out_bytes:
            break
        held.append(doc)
        taken += len(doc[1].encode())
    held_paths = {p for p, _ in held}
    train = sorted((d for d in documents if d[0] not in held_paths), key=lambda d: d[0])
    return train, sorted(held, key=lambda d: d[0])


def encode_jsonl(documents: list) -> bytes:
    return b"".join(json.dumps({"path": p, "text": t}, ensure_ascii=False, sort_keys=True).encode() + b"\n"
                    for p, t in documents)


def file_entry(name: str, documents: list, data: bytes) -> dict:
    return {"file": name, "documents": len(documents), "text_bytes": sum(len(t.encode()) for _, t in documents),
            "file_bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def write_corpus(out_dir: str, train: list, heldout: list, source: dict) -> dict:
    """Writes train.jsonl, heldout.jsonl and corpus.json (in that order, each atomically) and
    returns the manifest; `source` is its provenance (package, version, extraction, split)."""
    os.makedirs(out_dir, exist_ok=True)
    files = {}
    for split, docs in zip(SPLITS, (train, heldout)):
        data = encode_jsonl(docs)
        write_bytes_atomic(os.path.join(out_dir, f"{split}.jsonl"), data)
        files[split] = file_entry(f"{split}.jsonl", docs, data)
    manifest = {"format": FORMAT, "format_version": VERSION, **source, "files": files}
    text = json.dumps(manifest, indent=1, sort_keys=True) + "\n"
    write_bytes_atomic(os.path.join(out_dir, "corpus.json"), text.encode())
    return manifest


def read_manifest(corpus_dir: str) -> dict:
    path = os.path.join(corpus_dir, "corpus.json")
    if not os.path.isfile(path):
        raise CorpusError(f"{path} does not exist (make the corpus with tools/model/make_corpus.py)")
    try:
        with open(path, encoding="utf-8") as f:
            manifest = json.load(f)
    except ValueError as e:
        raise CorpusError(f"{path}: not JSON: {e}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT \
            or manifest.get("format_version") != VERSION:
        raise CorpusError(f"{path}: not a {FORMAT} manifest of version {VERSION}")
    files = manifest.get("files")
    if not isinstance(files, dict) or set(files) != set(SPLITS):
        raise CorpusError(f"{path}: 'files' must name exactly {list(SPLITS)}")
    return manifest


def read_documents(corpus_dir: str, split: str) -> list:
    """[(path, text)] of one split, after checking the file against the manifest (sha256,
    document count) and every line's form."""
    if split not in SPLITS:
        raise CorpusError(f"split '{split}': want one of {list(SPLITS)}")
    entry = read_manifest(corpus_dir)["files"][split]
    path = os.path.join(corpus_dir, entry["file"])
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise CorpusError(f"{path}: {e.strerror}") from None
    if hashlib.sha256(data).hexdigest() != entry["sha256"]:
        raise CorpusError(f"{path}: its sha256 is not the one corpus.json records: the file was changed")
    documents = []
    for number, line in enumerate(data.splitlines(), 1):
        try:
            doc = json.loads(line)
        except ValueError as e:
            raise CorpusError(f"{path}:{number}: not JSON: {e}") from None
        if not (isinstance(doc, dict) and isinstance(doc.get("path"), str) and isinstance(doc.get("text"), str)):
            raise CorpusError(f"{path}:{number}: want an object with string 'path' and 'text'")
        documents.append((doc["path"], doc["text"]))
    if len(documents) != entry["documents"]:
        raise CorpusError(f"{path}: {len(documents)} documents, corpus.json says {entry['documents']}")
    return documents
