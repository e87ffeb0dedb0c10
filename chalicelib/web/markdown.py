"""READMEs to safe HTML: markdown-it-py renders, nh3 (ammonia) sanitizes with an allow-list.

A README is hostile input (anyone who can publish a module writes one). The rules:

* Markdown is CommonMark plus tables and strikethrough; raw HTML in it is parsed and then
  sanitized like everything else (READMEs often use ``<p align="center">``, ``<details>``).
* Only the tags in ``TAGS`` survive; ``script``, ``style``, ``iframe``, ``object``, forms,
  ``svg`` and the like are removed, ``script``/``style`` with their content. Only the
  attributes in ``ATTRIBUTES`` survive: no ``on*`` event handler, no ``style``, no ``class``,
  no ``id``.
* Links (``href``) may be ``http``, ``https``, ``mailto`` or relative; anything else
  (``javascript:``, ``data:``, ``vbscript:``, ...) loses its ``href``. Every link gets
  ``rel="noopener noreferrer nofollow"``.
* Images only from ``https`` URLs (badges, diagrams hosted elsewhere); a relative, ``http``
  or ``data:`` source is dropped, leaving the alt text. (A relative image would resolve
  against the UI's own pages, not the module's files.) The pages' Content-Security-Policy
  (``img-src 'self' https:``, no inline script) is a second line behind this one.
* Every table is wrapped in a box that scrolls sideways (``_TABLE_BOX``).
* Headings are shifted down two levels (a README's ``#`` becomes ``<h3>``) so that the
  page's outline stays right: the module's name is the page's only ``<h1>``.
"""

from __future__ import annotations

import re
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "dd", "del", "details", "div", "dl", "dt",
    "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "img", "kbd", "li", "ol", "p", "pre",
    "q", "s", "samp", "strong", "sub", "summary", "sup", "table", "tbody", "td", "tfoot", "th",
    "thead", "tr", "ul", "span",
}  # fmt: skip
ATTRIBUTES = {
    "a": {"href", "title"},
    "img": {"src", "alt", "title", "width", "height"},
    "ol": {"start"},
    "th": {"align", "colspan", "rowspan"},
    "td": {"align", "colspan", "rowspan"},
    "p": {"align"},
    "div": {"align"},
    "details": {"open"},
}
URL_SCHEMES = {"http", "https", "mailto"}
HEADING_SHIFT = 2


def _shift_headings(state: Any) -> None:
    for token in state.tokens:
        if token.type in ("heading_open", "heading_close"):
            level = min(int(token.tag[1]) + HEADING_SHIFT, 6)
            token.tag = f"h{level}"


@cache
def _markdown() -> MarkdownIt:
    # markdown-it (about 13 ms of a cold start) loads with the first README read: the
    # sign-in page, terraform login and the static assets never need it.
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    md.core.ruler.push("shift_headings", _shift_headings)
    return md


def _attribute_filter(tag: str, attribute: str, value: str) -> str | None:
    if tag == "img" and attribute == "src" and not value.lower().startswith("https://"):
        return None
    return value


_IMG = re.compile(r"<img\b[^>]*>")
_ALT = re.compile(r'\salt="([^"]*)"')


def _settle_image(match: re.Match[str]) -> str:
    """After cleaning: an image that lost its source becomes its alt text; an image without
    alt text gets an empty one (decorative: screen readers skip it)."""
    tag = match.group(0)
    alt = _ALT.search(tag)
    if ' src="' not in tag:
        return alt.group(1) if alt else ""
    return tag if alt else tag.replace("<img", '<img alt=""', 1)


def sanitize(html: str) -> str:
    """Untrusted HTML reduced to the allow-list above."""
    import nh3  # with the first README, as markdown-it-py: not every page has one

    cleaned = nh3.clean(
        html,
        tags=TAGS,
        attributes=ATTRIBUTES,
        attribute_filter=_attribute_filter,
        url_schemes=URL_SCHEMES,
        link_rel="noopener noreferrer nofollow",
        strip_comments=True,
    )
    # nh3 serializes what it keeps (attributes double-quoted, values escaped): safe to match.
    return _IMG.sub(_settle_image, cleaned)


# A README's table scrolls sideways in a box of its own (a keyboard stop, labelled): a wide
# one never widens the page. Added after cleaning (nh3 keeps no attribute of a <table>).
_TABLE_BOX = (
    '<div class="table-scroll" tabindex="0" role="region" aria-label="A table (scrolls sideways)">'
    "<table>"
)


def render(text: str | None) -> str:
    """A README (Markdown) as sanitized HTML, safe to put into a page as-is."""
    if not text:
        return ""
    cleaned = sanitize(_markdown().render(text))
    return cleaned.replace("<table>", _TABLE_BOX).replace("</table>", "</table></div>")
