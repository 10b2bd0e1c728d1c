"""The reference model's corpus and vocabulary (tools/model/): make_corpus.py
on a stand-in package (model_fixture.py: the repository's own docs as HTML
pages, built with dpkg-deb), its split, its manifest and its checks, and
the byte vocabulary's Hugging Face files.

    python3 pytools_model_corpus.py --work DIR --fit VKBLR_FIT --read-back VKBLR_FIT_READ_BACK

Checks: no held-out document is in the training file (by path or by text)
and together they are every page kept; two runs give the same bytes, another
seed another split; the split is a prefix of the hash order, so a
document's side depends on its path alone; the manifest's counts, bytes and
sha256s are the files'; the extraction (main content only, code blocks,
headerlinks, scripts and navigation out, entities decoded, one line per
block, translations and _static excluded, stubs dropped); a changed file,
a package without the HTML root and too little text are refused with the
file named; the tokenizer's JSON: GPT-2's byte table (a bijection, the
printable bytes themselves), ids = bytes, no merges, <|endoftext|> = 256,
and its pieces reproduce encode() on a text with non-ASCII characters;
export_tokens.py's .npy files are split_stream's tokens, the same bytes
every run, and its report counts them; its --train-windows file holds
calibration_batches' windows, in order, for the seed given.
"""
import hashlib
import json
import os
import sys

from pytools_support import REPO, check, main, options, raises, require_modules, run

require_modules("numpy")
sys.path.insert(0, os.path.join(REPO, "tools", "model"))
import byte_tokenizer  # noqa: E402
from corpus import CorpusError, read_documents, split_documents, split_key  # noqa: E402
from model_fixture import make_fake_deb  # noqa: E402

args = options()
WORK = args.work
MAKE = os.path.join(REPO, "tools", "model", "make_corpus.py")
DEB = make_fake_deb(WORK)


def make(out, *extra, expect_rc=0):
    return run([sys.executable, MAKE, "--deb", DEB, "--out", os.path.join(WORK, out), "--min-total-bytes", "1000",
                "--held-out-bytes", "20000", *extra], expect_rc=expect_rc)


make("c1")
make("c2")
make("seed2", "--seed", "2")


def docs(name, split):
    return read_documents(os.path.join(WORK, name), split)


def test_no_held_out_document_is_trained_on():
    train, held = docs("c1", "train"), docs("c1", "heldout")
    check(len(held) >= 2 and len(train) >= 10, f"{len(train)} training, {len(held)} held-out documents")
    train_paths, train_texts = {p for p, _ in train}, {t for _, t in train}
    for path, text in held:
        check(path not in train_paths, f"{path} is in both files")
        check(text not in train_texts, f"{path}'s text is in the training file")
    check(len(train_paths) == len(train) and len({p for p, _ in held}) == len(held), "a path twice in one file")


def test_the_same_bytes_every_run():
    for name in ("train.jsonl", "heldout.jsonl", "corpus.json"):
        with open(os.path.join(WORK, "c1", name), "rb") as a, open(os.path.join(WORK, "c2", name), "rb") as b:
            check(a.read() == b.read(), f"{name} differs between two runs")
    check({p for p, _ in docs("seed2", "heldout")} != {p for p, _ in docs("c1", "heldout")},
          "--seed 2 holds out the same documents as --seed 1")


def test_the_split_is_a_prefix_of_the_hash_order():
    everything = docs("c1", "train") + docs("c1", "heldout")
    order = sorted(everything, key=lambda d: split_key(1, d[0]))
    held = {p for p, _ in docs("c1", "heldout")}
    check({p for p, _ in order[:len(held)]} == held, "the held-out documents are not the first in hash order")
    check(sum(len(t.encode()) for p, t in order[:len(held) - 1]) < 20000 <=
          sum(len(t.encode()) for p, t in order[:len(held)]), "the held-out set is not the shortest prefix of 20000 bytes")
    # a document's side does not depend on the others: drop half the training documents
    train, kept = split_documents(everything[::2] + [d for d in everything[1::2] if d[0] in held], 1, 20000)
    check({p for p, _ in kept} == held, "dropping training documents moved the held-out set")


def test_the_manifest_is_the_files():
    with open(os.path.join(WORK, "c1", "corpus.json")) as f:
        manifest = json.load(f)
    check(manifest["package"] == "fake-doc" and manifest["version"] == "1.0", f"package {manifest['package']}")
    with open(DEB, "rb") as f:
        check(manifest["deb_sha256"] == hashlib.sha256(f.read()).hexdigest(), "deb_sha256 is not the .deb's")
    for split in ("train", "heldout"):
        entry = manifest["files"][split]
        with open(os.path.join(WORK, "c1", entry["file"]), "rb") as f:
            data = f.read()
        documents = docs("c1", split)
        check(entry["sha256"] == hashlib.sha256(data).hexdigest() and entry["file_bytes"] == len(data),
              f"{split}: sha256 or size is not the file's")
        check(entry["documents"] == len(documents), f"{split}: {entry['documents']} documents recorded")
        check(entry["text_bytes"] == sum(len(t.encode()) for _, t in documents), f"{split}: text_bytes")
    check(manifest["split"] == {"seed": 1, "held_out_bytes": 20000, "by": "sha256(seed, path)"},
          f"split {manifest['split']}")
    check(manifest["extraction"]["pages_excluded"] == 2 and manifest["extraction"]["stubs_dropped"] >= 2,
          f"extraction {manifest['extraction']}")


def test_the_extraction_keeps_the_prose_only():
    everything = dict(docs("c1", "train") + docs("c1", "heldout"))
    check(not any(p.startswith(("translations/", "_static/")) or p in ("stub.html", "nomain.html") for p in everything),
          f"pages that should be left out: {sorted(everything)[:5]}")
    check(everything["entities.html"] == "Entities\nCafé & crème <tags> — done, with inline and emphasis across "
          "lines.\nname value\nalpha 1\nfirst item\nsecond item\n" + "\n".join(["Filler prose for the size."] * 8),
          f"entities.html: {everything['entities.html'][:300]!r}")
    text = "\n".join(everything.values())
    for absent in ("¶", "not text", "Navigation", "Footer", "color: red", "code block marker"):
        check(absent not in text, f"'{absent}' is in the corpus text")
    check(any("cooperative" in t for t in everything.values()), "the prose of the docs is missing")


def test_bad_inputs_are_refused():
    corrupt = os.path.join(WORK, "corrupt")
    make("corrupt")
    with open(os.path.join(corrupt, "train.jsonl"), "ab") as f:
        f.write(b"{}\n")
    message = str(raises(lambda: read_documents(corrupt, "train"), "train.jsonl", CorpusError))
    check("sha256" in message, message)
    p = make("small", "--min-total-bytes", "100000000", expect_rc=1)
    check("fewer than --min-total-bytes" in p.stderr and "fake-doc 1.0" in p.stderr, p.stderr)
    p = make("noroot", "--html-root", "usr/share/doc/{package}/nothing", expect_rc=1)
    check("has no directory usr/share/doc/fake-doc/nothing" in p.stderr, p.stderr)
    raises(lambda: read_documents(os.path.join(WORK, "missing"), "train"), "corpus.json does not exist", CorpusError)


def test_the_tokenizer_files():
    table = byte_tokenizer.byte_characters()
    check(len(set(table)) == 256, "the byte table is not a bijection")
    for b in list(range(0x21, 0x7F)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100)):
        check(table[b] == chr(b), f"byte {b} should stand for itself")
    check(table[0x20] == "Ġ" and table[0x0A] == "Ċ" and table[0] == "Ā", "GPT-2's table: space Ġ, newline Ċ, NUL Ā")
    os.makedirs(os.path.join(WORK, "tok"), exist_ok=True)
    byte_tokenizer.write_tokenizer_files(os.path.join(WORK, "tok"), 64)
    with open(os.path.join(WORK, "tok", "tokenizer.json"), encoding="utf-8") as f:
        t = json.load(f)
    check(t["version"] == "1.0" and t["normalizer"] is None and t["post_processor"] is None, "top level")
    model = t["model"]
    check(model["type"] == "BPE" and model["merges"] == [] and model["byte_fallback"] is False, "model")
    check(sorted(model["vocab"].values()) == list(range(256)), "vocab ids are not 0..255")
    check(t["pre_tokenizer"] == {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
                                 "use_regex": False}, f"pre_tokenizer {t['pre_tokenizer']}")
    check(t["decoder"]["type"] == "ByteLevel", "decoder")
    check(t["added_tokens"] == [{"id": 256, "content": "<|endoftext|>", "single_word": False, "lstrip": False,
                                 "rstrip": False, "normalized": False, "special": True}], "added_tokens")
    # the library's steps on a text: each UTF-8 byte to its character, each character to its id
    text = "Café — naïve\n\tdone ✓ 𝄞"
    pieces = [model["vocab"][table[b]] for b in text.encode("utf-8")]
    check(pieces == byte_tokenizer.encode(text), "the JSON's pieces are not encode()'s ids")
    check(byte_tokenizer.decode(pieces + [256]) == text, "decode")
    stream = byte_tokenizer.document_stream(["ab", "é"])
    check(stream.tolist() == [256, 97, 98, 256, 0xC3, 0xA9, 256], f"document_stream {stream.tolist()}")
    with open(os.path.join(WORK, "tok", "tokenizer_config.json")) as f:
        config = json.load(f)
    check(config["tokenizer_class"] == "PreTrainedTokenizerFast" and config["eos_token"] == "<|endoftext|>"
          and config["model_max_length"] == 64, f"tokenizer_config {config}")



def test_the_token_files():
    import numpy as np
    from token_data import split_stream
    export = os.path.join(REPO, "tools", "model", "export_tokens.py")
    for out in ("tokens1", "tokens2"):
        run([sys.executable, export, "--corpus", os.path.join(WORK, "c1"), "--out", os.path.join(WORK, out)])
    report = json.load(open(os.path.join(WORK, "tokens1", "tokens.json")))
    check(report["vocab_size"] == byte_tokenizer.VOCAB_SIZE, f"vocab {report['vocab_size']}")
    for split in ("train", "heldout"):
        path = os.path.join(WORK, "tokens1", f"{split}.npy")
        tokens = np.load(path, allow_pickle=False)
        stream, text_bytes, documents = split_stream(os.path.join(WORK, "c1"), split)
        check(tokens.dtype == np.dtype("<u2") and tokens.ndim == 1 and np.array_equal(tokens, stream),
              f"{split}.npy is not split_stream's tokens")
        entry = report["splits"][split]
        check(entry["tokens"] == tokens.shape[0] and entry["bytes"] == text_bytes and entry["documents"] == documents,
              f"tokens.json {entry}")
        data = open(path, "rb").read()
        check(hashlib.sha256(data).hexdigest() == entry["sha256"], f"{split}.npy's sha256")
        check(data == open(os.path.join(WORK, "tokens2", f"{split}.npy"), "rb").read(), "two exports differ")
    run([sys.executable, export, "--corpus", os.path.join(WORK, "absent"), "--out", os.path.join(WORK, "t3")],
        expect_rc=1)


def test_the_training_windows_file():
    import numpy as np
    import torch
    from token_data import calibration_batches
    export = os.path.join(REPO, "tools", "model", "export_tokens.py")
    corpus = os.path.join(WORK, "c1")
    for out, seed in (("windows1", "3"), ("windows2", "3"), ("windows3", "4")):
        run([sys.executable, export, "--corpus", corpus, "--out", os.path.join(WORK, out), "--train-windows", "300",
             "--context", "32", "--seed", seed])
    path = os.path.join(WORK, "windows1", "train_windows.npy")
    windows = np.load(path, allow_pickle=False)
    want = torch.cat(calibration_batches(corpus, 300, 32, 3)).numpy()
    check(windows.dtype == np.dtype("<u2") and windows.shape == (10, 32), f"{windows.dtype} {windows.shape}")
    check(np.array_equal(windows, want), "train_windows.npy is not calibration_batches' windows in order")
    entry = json.load(open(os.path.join(WORK, "windows1", "tokens.json")))["train_windows"]
    data = open(path, "rb").read()
    check(entry == {"file": "train_windows.npy", "windows": 10, "context": 32, "tokens": 300, "seed": 3,
                    "sha256": hashlib.sha256(data).hexdigest()}, f"tokens.json train_windows {entry}")
    check(data == open(os.path.join(WORK, "windows2", "train_windows.npy"), "rb").read(), "two exports differ")
    check(data != open(os.path.join(WORK, "windows3", "train_windows.npy"), "rb").read(), "another seed, same windows")
    p = run([sys.executable, export, "--corpus", corpus, "--out", os.path.join(WORK, "t4"), "--train-windows", "300"],
            expect_rc=2)
    check("--train-windows and --context go together" in p.stderr, p.stderr)


main({name: f for name, f in globals().items() if name.startswith("test_")})
