"""The reports read back as a person reads them: report.html's text of each section and element
with an id and the rows of each section's tables (the standard library's html.parser), and
report.md's sections and summary bullets."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

VOID = frozenset({"meta", "br", "img", "input", "link", "hr", "source", "wbr"})
# Elements whose text nobody reads as prose: the stylesheet, and the charts' labels.
UNREAD = frozenset({"style", "svg"})


class ReportPage(HTMLParser):
    """The text of report.html by element id (sections included), and its table rows (cell
    texts) by section. ``unread`` and ``clean`` say which text is read and how it is tidied
    (a subclass may read every text as it is)."""

    unread: frozenset[str] = UNREAD

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.by_id: dict[str, list[str]] = {}
        self.rows: dict[str, list[list[str]]] = {}
        self.parts: list[str] = []
        self._open: list[tuple[str, str | None]] = []
        self._section = ""
        self._row: list[str] | None = None
        self._cell: list[str] | None = None
        self.feed(html)
        self.close()

    @classmethod
    def of(cls, path: Path) -> ReportPage:
        """The page of the report.html at ``path``."""
        return cls(path.read_text(encoding="utf-8"))

    @property
    def text(self) -> str:
        """Every text the page shows, white space collapsed."""
        return _words("".join(self.parts))

    def text_of(self, element_id: str) -> str:
        """The text inside the element with this id, white space collapsed."""
        return self.clean("".join(self.by_id[element_id]))

    def clean(self, text: str) -> str:
        """A cell's or an element's text as the tests compare it: white space collapsed."""
        return _words(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "section":
            self._section = a.get("id") or ""
        if tag == "tr":
            self._row = []
        if tag in ("td", "th"):
            self._cell = []
        if tag in VOID:
            return
        self._open.append((tag, a.get("id")))
        if a.get("id"):
            self.by_id.setdefault(str(a["id"]), [])

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append(self.clean("".join(self._cell)))
            self._cell = None
        if tag == "tr" and self._row is not None:
            self.rows.setdefault(self._section, []).append(self._row)
            self._row = None
        for i in range(len(self._open) - 1, -1, -1):
            if self._open[i][0] == tag:
                del self._open[i:]
                break

    def handle_data(self, data: str) -> None:
        if any(tag in self.unread for tag, _ in self._open):
            return
        self.parts.append(data)
        if self._cell is not None:
            self._cell.append(data)
        for _, element_id in self._open:
            if element_id:
                self.by_id[element_id].append(data)


def _words(text: str) -> str:
    """``text`` with each run of white space as one space, and numbers without the thin
    space that groups their digits (1 232 reads 1232, as in report.md)."""
    return " ".join(text.replace("\u2009", "").split())


def bullets(markdown: str, start: str) -> list[str]:
    """The lines of the summary's bullet that begins with ``start``, its sub-items included."""
    lines = markdown.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith(start))
    rest = []
    for line in lines[first + 1 :]:
        if not line.startswith("  - "):
            break
        rest.append(line)
    return [lines[first], *rest]


def section(markdown: str, heading: str) -> str:
    """The text of report.md's ``### heading`` section."""
    after = markdown.split(f"### {heading}\n", 1)[1]
    return after.split("\n### ", 1)[0]
