"""A small stand-in for the corpus package, for the tests of tools/model/
(pytools_model_*.py): a Debian package of Sphinx-like HTML pages whose prose
is the repository's own documentation (docs/*.md, README.md: real English,
the same on every run), built with dpkg-deb, so that make_corpus.py runs on
it exactly as on linux-doc.

    make_fake_deb(work) -> path of WORK/fake-doc_1.0_all.deb

The package fake-doc holds usr/share/doc/fake-doc/html/ with one page per
Markdown section (role="main" content: an h1 with a headerlink, one <p> per
paragraph, code blocks as <pre>), and pages the extraction must treat
specially: translations/ (excluded), a stub (dropped), _static/ (excluded),
a page without a main element (no text: dropped), and a page of entities,
a table and inline markup (entities.html).
"""
import html
import os
import re
import shutil
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOURCES = ["README.md", "docs/guide.md", "docs/sign-optimizer.md", "docs/kernels.md"]

PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<script>var x = "<p>not text</p>";</script><style>p {{ color: red }}</style></head>
<body><div class="sphinxsidebar" role="navigation"><p>Navigation that is not text</p></div>
<div class="body" role="main">
<section id="s"><h1>{title}<a class="headerlink" href="#s" title="Link">¶</a></h1>
{body}
</section></div>
<footer><p>Footer that is not text</p></footer></body></html>
"""


def blocks_of(body):
    """Paragraphs (str) and fenced code blocks (('code', text)) of Markdown text, in order."""
    blocks, paragraph, code = [], [], None
    for line in body.split("\n"):
        if line.lstrip().startswith("```"):
            if code is None:
                code = []
            else:
                blocks.append(("code", "\n".join(code)))
                code = None
        elif code is not None:
            code.append(line)
        elif line.strip():
            paragraph.append(line.strip())
            continue
        if paragraph:
            blocks.append(" ".join(paragraph))
            paragraph = []
    if paragraph:
        blocks.append(" ".join(paragraph))
    return blocks


def sections():
    """(name, title, blocks) of every '## ' section of the sources."""
    out = []
    for source in SOURCES:
        with open(os.path.join(REPO, source), encoding="utf-8") as f:
            text = f.read()
        for k, part in enumerate(re.split(r"\n## ", text)[1:]):
            title, _, body = part.partition("\n")
            name = re.sub(r"[^a-z0-9]+", "-", f"{os.path.basename(source)[:-3]}-{k}-{title}".lower()).strip("-")
            out.append((name[:60], title.strip(), blocks_of(body)))
    return out


def page(title, blocks):
    body = []
    for b in blocks:
        if isinstance(b, tuple):
            body.append(f'<div class="highlight"><pre><span></span>{html.escape(b[1])}</pre></div>')
        else:
            body.append(f"<p>{html.escape(b)}</p>")
    return PAGE.format(title=html.escape(title), body="\n".join(body))


def make_fake_deb(work):
    if shutil.which("dpkg-deb") is None:
        print("skipped: dpkg-deb is not installed (the stand-in package is built with it)")
        sys.exit(77)
    root = os.path.join(work, "fake-doc")
    shutil.rmtree(root, ignore_errors=True)  # pages of an earlier run's docs must not stay in the package
    docs = os.path.join(root, "usr", "share", "doc", "fake-doc", "html")
    for d in (os.path.join(root, "DEBIAN"), os.path.join(docs, "translations"), os.path.join(docs, "_static"),
              os.path.join(docs, "guide")):
        os.makedirs(d, exist_ok=True)
    with open(os.path.join(root, "DEBIAN", "control"), "w") as f:
        f.write("Package: fake-doc\nVersion: 1.0\nArchitecture: all\nMaintainer: vkblr tests <tests@invalid>\n"
                "Description: HTML pages for the corpus tests\n")
    for name, title, blocks in sections():
        with open(os.path.join(docs, "guide", name + ".html"), "w", encoding="utf-8") as f:
            f.write(page(title, blocks))
    extras = {
        "translations/it.html": page("Traduzione", ["Questo testo non è inglese e resta fuori."] * 20),
        "stub.html": page("Stub", ["Short."]),
        "_static/extra.html": page("Static", ["A support page of the theme, left out. " * 20]),
        "nomain.html": "<html><body><p>" + "No main element here. " * 30 + "</p></body></html>",
        "entities.html": PAGE.format(title="Entities", body=(
            "<p>Caf&eacute; &amp; cr&#232;me &lt;tags&gt; &#x2014; done, "
            "with <code>inline</code> and <em>emphasis</em>\n   across   lines.</p>"
            "<table><tr><th>name</th><th>value</th></tr><tr><td>alpha</td><td>1</td></tr></table>"
            "<ul><li>first item</li><li>second <b>item</b></li></ul>"
            '<div class="highlight-c"><div class="highlight"><pre>code block marker\n</pre></div></div>' + "<p>Filler prose for the size.</p>" * 8)),
    }
    for rel, text in extras.items():
        with open(os.path.join(docs, rel), "w", encoding="utf-8") as f:
            f.write(text)
    deb = os.path.join(work, "fake-doc_1.0_all.deb")
    subprocess.run(["dpkg-deb", "--root-owner-group", "-Zgzip", "--build", root, deb], check=True,
                   capture_output=True)
    return deb
