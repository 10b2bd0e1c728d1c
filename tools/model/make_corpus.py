#!/usr/bin/env python3
"""Makes the reference model's corpus: English prose from a Debian package's
HTML documentation, split by whole documents into training and held-out
files.

    python3 tools/model/make_corpus.py --out .corpus
        [--package linux-doc-6.12] [--version V] [--deb FILE]
        [--html-root usr/share/doc/{package}/html] [--exclude GLOB ...]
        [--min-doc-bytes 200] [--held-out-bytes 1000000] [--seed 1]
        [--min-total-bytes 10000000]

The package: without --deb, `apt-get download PACKAGE[=VERSION]` fetches it
from the machine's Debian archive into a temporary directory (Debian 13's
archive: run it in the dev root, `tools/dev/devenv.sh run -- ...`, where
apt knows trixie; `apt-get update` there if the version is gone). With
--deb, that file is used. The default, linux-doc-6.12, holds the Linux
kernel's documentation built by Sphinx as HTML (~3600 pages, ~30 MB of
text).

The documents: every .html file under --html-root (in the unpacked
package, dpkg-deb -x) but those matching an --exclude glob (fnmatch on the
path relative to the root; the defaults leave out Sphinx's own pages, the
translations, which are not English, and three listings that are not
prose: MAINTAINERS and the ABI tables). Each page's text is its main
content with markup stripped (html_text.py: code and literal blocks left
out, one line per paragraph, heading, list item or table row); pages with
fewer than --min-doc-bytes bytes of text are dropped as stubs.

The split (corpus.py): documents ordered by sha256(seed, path) are held out
until they take --held-out-bytes; the rest are the training set. It writes
OUT/train.jsonl, OUT/heldout.jsonl and OUT/corpus.json (package, version,
the .deb's sha256, the extraction's settings, the split, and per file the
document count, bytes and sha256), each atomically. The same .deb and
options give the same bytes. It fails (exit 1, naming the file) when the
package has no such root, a page is not UTF-8, or the text is less than
--min-total-bytes.
"""
from __future__ import annotations

import argparse
import fnmatch
import hashlib
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus import CorpusError, split_documents, write_corpus  # noqa: E402
from html_text import html_to_text  # noqa: E402

DEFAULT_PACKAGE = "linux-doc-6.12"
DEFAULT_EXCLUDES = ["_*", "*/_*", "genindex.html", "search.html", "py-modindex.html", "translations/*",
                    "process/maintainers.html", "admin-guide/abi-*.html", "admin-guide/abi.html"]
EXTRACTOR_VERSION = 1  # bump when html_text.py's output changes


def run(command: list, cwd: str | None = None) -> str:
    p = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    if p.returncode != 0:
        raise CorpusError(f"{' '.join(command)}: exit {p.returncode}: {p.stderr.strip()[-2000:]}")
    return p.stdout


def download(package: str, version: str | None, directory: str) -> str:
    """apt-get download's .deb in `directory`."""
    run(["apt-get", "download", f"{package}={version}" if version else package], cwd=directory)
    debs = [f for f in os.listdir(directory) if f.endswith(".deb")]
    if len(debs) != 1:
        raise CorpusError(f"apt-get download {package} left {debs} in {directory}, want one .deb")
    return os.path.join(directory, debs[0])


def sha256_file(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_pages(root: str, excludes: list, min_doc_bytes: int) -> tuple:
    """[(relative path, text)] of the pages kept, in path order, and the counts left out."""
    documents, excluded, stubs = [], 0, 0
    for directory, subdirs, files in os.walk(root):
        subdirs.sort()
        for name in sorted(files):
            if not name.endswith(".html"):
                continue
            full = os.path.join(directory, name)
            rel = os.path.relpath(full, root).replace(os.sep, "/")
            if any(fnmatch.fnmatchcase(rel, g) for g in excludes):
                excluded += 1
                continue
            try:
                with open(full, encoding="utf-8", errors="strict") as f:
                    markup = f.read()
            except UnicodeDecodeError as e:
                raise CorpusError(f"{rel}: not UTF-8 ({e})") from None
            text = html_to_text(markup)
            if len(text.encode()) < min_doc_bytes:
                stubs += 1
                continue
            documents.append((rel, text))
    return sorted(documents), excluded, stubs


def make_corpus(args) -> dict:
    with tempfile.TemporaryDirectory(prefix="make_corpus.") as scratch:
        deb = os.path.abspath(args.deb) if args.deb else download(args.package, args.version, scratch)
        if not os.path.isfile(deb):
            raise CorpusError(f"--deb {args.deb} does not exist")
        fields = run(["dpkg-deb", "-f", deb, "Package", "Version"]).splitlines()
        info = dict(line.split(": ", 1) for line in fields if ": " in line)
        if "Package" not in info or "Version" not in info:
            raise CorpusError(f"{deb}: dpkg-deb found no Package and Version fields")
        unpacked = os.path.join(scratch, "root")
        run(["dpkg-deb", "-x", deb, unpacked])
        html_root = args.html_root.format(package=info["Package"])
        root = os.path.join(unpacked, html_root)
        if not os.path.isdir(root):
            raise CorpusError(f"{deb}: the package has no directory {html_root} (--html-root)")
        documents, excluded, stubs = read_pages(root, args.exclude, args.min_doc_bytes)
        deb_sha = sha256_file(deb)
    total = sum(len(t.encode()) for _, t in documents)
    if total < args.min_total_bytes:
        raise CorpusError(f"{info['Package']} {info['Version']}: {total} bytes of text in {len(documents)} "
                          f"documents, fewer than --min-total-bytes {args.min_total_bytes}")
    train, heldout = split_documents(documents, args.seed, args.held_out_bytes)
    source = {"package": info["Package"], "version": info["Version"], "deb_sha256": deb_sha,
              "extraction": {"html_root": html_root, "exclude": args.exclude, "min_doc_bytes": args.min_doc_bytes,
                             "extractor": "tools/model/html_text.py", "extractor_version": EXTRACTOR_VERSION,
                             "pages_excluded": excluded, "stubs_dropped": stubs},
              "split": {"seed": args.seed, "held_out_bytes": args.held_out_bytes, "by": "sha256(seed, path)"}}
    manifest = write_corpus(args.out, train, heldout, source)
    files = manifest["files"]
    print(f"make_corpus: {info['Package']} {info['Version']}: {len(documents)} documents, {total} bytes of text "
          f"({excluded} pages excluded, {stubs} stubs dropped); train {files['train']['documents']} documents, "
          f"{files['train']['text_bytes']} bytes; held out {files['heldout']['documents']} documents, "
          f"{files['heldout']['text_bytes']} bytes; wrote {args.out}/train.jsonl, heldout.jsonl, corpus.json")
    return manifest


def main(argv=None) -> int:
    first, _, rest = __doc__.partition("\n\n")
    parser = argparse.ArgumentParser(description=first, epilog=rest,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="output directory (e.g. .corpus, git-ignored)")
    parser.add_argument("--package", default=DEFAULT_PACKAGE, help=f"Debian package (default {DEFAULT_PACKAGE})")
    parser.add_argument("--version", help="the package's version (default: the archive's candidate)")
    parser.add_argument("--deb", help="use this .deb instead of downloading")
    parser.add_argument("--html-root", default="usr/share/doc/{package}/html",
                        help="the pages' directory in the package ({package}: its name)")
    parser.add_argument("--exclude", action="append", help="fnmatch glob of pages to leave out (repeatable; "
                        "replaces the defaults: " + " ".join(DEFAULT_EXCLUDES) + ")")
    parser.add_argument("--min-doc-bytes", type=int, default=200, help="drop pages with less text (default 200)")
    parser.add_argument("--held-out-bytes", type=int, default=1_000_000,
                        help="held-out text to set aside, in bytes (default 1000000)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the split (default 1)")
    parser.add_argument("--min-total-bytes", type=int, default=10_000_000,
                        help="refuse a corpus with less text (default 10000000)")
    args = parser.parse_args(argv)
    if args.exclude is None:
        args.exclude = list(DEFAULT_EXCLUDES)
    if args.held_out_bytes < 1 or args.min_doc_bytes < 0:
        parser.error("--held-out-bytes must be at least 1, --min-doc-bytes at least 0")
    try:
        make_corpus(args)
    except (CorpusError, OSError) as e:
        print(f"make_corpus: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
