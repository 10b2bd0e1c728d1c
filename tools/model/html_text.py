"""The prose of a Sphinx HTML page as plain text (for make_corpus.py).

    html_to_text(markup) -> str

Contract: only the page's main content is read, the element whose
`role` attribute is "main" (Sphinx's `div.body`); a page without one gives
"". Inside it, these subtrees are left out: `pre` (literal and code
blocks), `script`, `style`, `math`, and elements of the classes
"headerlink" (the pilcrow links beside headings), "language-selection"
(the kernel's translation menu) and "toctree-wrapper" (lists of links to
other pages). Character references are decoded. Text is laid out by the
HTML rules a browser follows for normal text: every run of whitespace is
one space, and a block element (paragraph, heading, list item, table row,
definition term, ...) starts a new line. The result is one line per block,
each stripped, no empty lines, joined by "\n", no trailing newline.

Uses only the standard library's html.parser: malformed markup is read as
the parser reads it (an end tag closes the innermost open element of its
name; an end tag with no open element of that name is ignored).
"""
from __future__ import annotations

import html.parser
import re

_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr"}
_BLOCK = {"address", "article", "aside", "blockquote", "caption", "dd", "details", "div", "dl", "dt", "figcaption",
          "figure", "footer", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr", "li", "main", "nav", "ol", "p",
          "section", "summary", "table", "tbody", "tfoot", "thead", "tr", "ul"}
_SKIP_TAGS = {"pre", "script", "style", "math", "svg", "template"}
_SKIP_CLASSES = {"headerlink", "language-selection", "toctree-wrapper"}
_SPACE = re.compile(r"\s+")


class _Extractor(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.open: list[str] = []     # the open elements' tags, outermost first
        self.main_depth = None        # len(self.open) once the main element is open
        self.main_done = False
        self.skip_depth = None        # len(self.open) once a left-out subtree is open
        self.lines: list[str] = []
        self.current: list[str] = []  # the text of the block being read

    def _break(self) -> None:
        line = _SPACE.sub(" ", "".join(self.current)).strip()
        if line:
            self.lines.append(line)
        self.current = []

    def _reading(self) -> bool:
        return self.main_depth is not None and self.skip_depth is None

    def handle_starttag(self, tag, attrs):
        if tag in _VOID:
            if tag in ("br", "hr") and self._reading():
                self._break()
            return
        self.open.append(tag)
        depth = len(self.open)
        if self.main_depth is None:
            if not self.main_done and dict(attrs).get("role") == "main":
                self.main_depth = depth
            return
        if self.skip_depth is not None:
            return
        classes = set((dict(attrs).get("class") or "").split())
        if tag in _SKIP_TAGS or classes & _SKIP_CLASSES:
            self.skip_depth = depth
            return
        if tag in _BLOCK:
            self._break()
        elif tag in ("td", "th"):
            self.current.append(" ")

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in _VOID:
            self.handle_endtag(tag)

    def handle_endtag(self, tag):
        if tag in _VOID or tag not in self.open:
            return
        while self.open:
            closed = self.open.pop()
            depth = len(self.open) + 1
            if self.skip_depth == depth:
                self.skip_depth = None
            elif self._reading() and closed in _BLOCK:
                self._break()
            if self.main_depth == depth:
                self._break()
                self.main_depth, self.main_done = None, True
            if closed == tag:
                break

    def handle_data(self, data):
        if self._reading():
            self.current.append(data)


def html_to_text(markup: str) -> str:
    """The text of the page's main element (see the module's docstring)."""
    parser = _Extractor()
    parser.feed(markup)
    parser.close()
    if parser._reading():
        parser._break()
    return "\n".join(parser.lines)
