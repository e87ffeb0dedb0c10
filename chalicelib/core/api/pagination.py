"""``page[number]``/``page[size]`` parsing and the ``links``/``meta.pagination`` members."""

from __future__ import annotations

import base64
import binascii
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar
from urllib.parse import urlencode

from chalicelib.core.api.errors import Unprocessable

DEFAULT_PAGE_SIZE = 20
MAX_PAGE_SIZE = 100

T = TypeVar("T")


@dataclass(frozen=True)
class Page:
    number: int
    size: int

    @classmethod
    def from_query(cls, query: dict[str, str]) -> Page:
        return cls(
            number=max(1, int_param(query, "page[number]", 1)),
            size=min(MAX_PAGE_SIZE, max(1, int_param(query, "page[size]", DEFAULT_PAGE_SIZE))),
        )

    @property
    def offset(self) -> int:
        return (self.number - 1) * self.size


def int_param(query: dict[str, str], name: str, default: int) -> int:
    """An integer query parameter (absent or empty = ``default``); otherwise a 422."""
    raw = query.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise Unprocessable(f"{name} must be an integer, not {raw!r}", parameter=name) from None


@dataclass(frozen=True)
class Paged(Generic[T]):
    items: Sequence[T]
    links: dict[str, Any]
    meta: dict[str, Any]


def paginate(items: Sequence[T], page: Page, url: str, query: dict[str, str]) -> Paged[T]:
    """Slice ``items`` for ``page``; ``url`` is the absolute URL of the list without a query."""
    return paged(items[page.offset : page.offset + page.size], len(items), page, url, query)


def paged(items: Sequence[T], total: int, page: Page, url: str, query: dict[str, str]) -> Paged[T]:
    """``items``, the page already read (``chalicelib.core.data.lists``), of a list of ``total``.

    An empty list has no pages: ``total-pages`` is 0, as TFE answers for every list (go-tfe
    asserts it on the registry provider, version and platform lists); its ``last`` link
    still names page 1, the page that exists to be asked for."""
    total_pages = math.ceil(total / page.size)
    prev_page = page.number - 1 if page.number > 1 else None
    next_page = page.number + 1 if page.number < total_pages else None
    others = {k: v for k, v in query.items() if not k.startswith("page[")}

    def link(number: int | None) -> str | None:
        if number is None:
            return None
        params = {**others, "page[number]": number, "page[size]": page.size}
        return f"{url}?{urlencode(params)}"

    return Paged(
        items=items,
        links={
            "self": link(page.number),
            "first": link(1),
            "prev": link(prev_page),
            "next": link(next_page),
            "last": link(max(1, total_pages)),
        },
        meta={
            "pagination": {
                "current-page": page.number,
                "page-size": page.size,
                "prev-page": prev_page,
                "next-page": next_page,
                "total-pages": total_pages,
                "total-count": total,
            }
        },
    )


# ----- opaque cursors (``page[after]``): a key position, for lists that page with keys -------


def cursor(parts: Sequence[str]) -> str:
    """An opaque ``page[after]`` cursor holding ``parts`` (a DynamoDB key's string values)."""
    return base64.urlsafe_b64encode(json.dumps(list(parts)).encode()).decode("ascii")


def cursor_parts(after: str, count: int, most: int) -> list[str]:
    """The ``count`` non-empty strings a cursor this API gave holds; a 422 (``page[after]``)
    for anything else, or one longer than ``most`` characters."""
    refusal = Unprocessable("page[after] is not a cursor this list gave", parameter="page[after]")
    if len(after) > most:
        raise refusal
    try:
        parts = json.loads(base64.urlsafe_b64decode(after.encode("ascii")))
    except (ValueError, UnicodeError, binascii.Error):
        raise refusal from None
    if not (isinstance(parts, list) and len(parts) == count):
        raise refusal
    if not all(isinstance(part, str) and part for part in parts):  # DynamoDB keys: not empty
        raise refusal
    return parts
