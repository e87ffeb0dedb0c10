"""A version's short description: its README's first paragraph of prose, as plain text.

Computed once, when the version is ingested (``ingest.handler``), and kept on the version
item; the module item keeps its latest servable version's (``store.refresh_listing``), which
is what the web UI's module list shows for each row without reading any version.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

LIMIT = 200


@cache
def _markdown() -> MarkdownIt:
    # Loaded with the first README described (ingest, the backfill): no request needs it.
    from markdown_it import MarkdownIt

    # Raw HTML is parsed as HTML (``<p align="center">`` is a block, not prose), as the
    # README is rendered (``chalicelib.web.markdown``).
    return MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])


def summary(text: str | None, limit: int = LIMIT) -> str:
    """The README's first paragraph of prose, as plain text (a module's description):
    headings, badges and images are skipped. Plain text: a page escapes it."""
    if not text:
        return ""
    tokens = _markdown().parse(text)
    for index, token in enumerate(tokens):
        if token.type != "paragraph_open" or index + 1 >= len(tokens):
            continue
        inline = tokens[index + 1]
        words = "".join(
            " " if child.type in ("softbreak", "hardbreak") else child.content
            for child in inline.children or []
            if child.type in ("text", "code_inline", "softbreak", "hardbreak")
        )
        words = " ".join(words.split())
        if len(words) >= 3:
            return words if len(words) <= limit else words[: limit - 1].rstrip() + "…"
    return ""
