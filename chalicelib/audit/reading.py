"""Reading the trail, for the API (``routes``) and the browser's pages (``chalicelib.web``):
the bounded filters both take, and where an organization's trail begins.

Filters: the actor (its id, ``user-…``/``team-…``/``org-…``, or a user's username), the
resource type and the action (HCP's kebab-case words, at most ``MAX_WORD`` characters), and
the time range ``since`` (events after it) and ``until`` (events before it), ISO 8601. An
unknown filter, a value over its bound or of the wrong shape is a 422 naming it, before
anything is read; so is a filter that would read more than ``MAX_FILTERED`` events
(``core.audit.store`` says what a filtered page costs): a narrower time range reads it.

An organization's trail begins at its creation: an organization created under the name of
a deleted one reads none of the deleted one's events (they stay in the partition of that
name, and site admins read them with the admin trail's ``filter[organization]``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from chalicelib.accounts.authorization import owned_organization
from chalicelib.accounts.organizations.service import get_organization
from chalicelib.core.api import bounds
from chalicelib.core.api.errors import Unprocessable
from chalicelib.core.audit import events, trail
from chalicelib.core.auth import Principal

# The filters by their short names (the pages' fields; the API's are ``filter[<name>]``).
ACTOR, RESOURCE_TYPE, ACTION = "actor", "resource-type", "action"
ORGANIZATION = "organization"
FILTERS = (ACTOR, RESOURCE_TYPE, ACTION)
MAX_ACTOR = events.MAX_ID
MAX_WORD = 64
_WORD = re.compile(r"[a-z][a-z0-9-]*")
_PRINTABLE = re.compile(r"[^\x00-\x1f\x7f]+")


@dataclass(frozen=True)
class Criteria:
    """What a reader asked for: the filters and the time range (each checked)."""

    filters: trail.Filters = field(default_factory=trail.Filters)
    since: datetime | None = None
    until: datetime | None = None


def moment(raw: str | None, parameter: str) -> datetime | None:
    """An ISO 8601 time (UTC when it names no zone), None when absent; else a 422."""
    if not raw:
        return None
    try:
        if len(raw) > bounds.TIMESTAMP:
            raise ValueError
        found = datetime.fromisoformat(raw)
    except ValueError:
        raise Unprocessable(
            f"{parameter} must be an ISO 8601 time (2020-05-30T17:52:46.000Z), not {raw[:40]!r}",
            parameter=parameter,
        ) from None
    return found if found.tzinfo else found.replace(tzinfo=UTC)


def _value(query: Mapping[str, str], name: str, parameter: str) -> str | None:
    raw = (query.get(parameter) or "").strip()
    if not raw:
        return None
    if name == ACTOR:
        if len(raw) > MAX_ACTOR or not _PRINTABLE.fullmatch(raw):
            raise Unprocessable(
                f"{parameter}: an actor's id or username of at most {MAX_ACTOR} characters",
                parameter=parameter,
            )
        return raw
    if len(raw) > MAX_WORD or not _WORD.fullmatch(raw):
        raise Unprocessable(
            f"{parameter}: lowercase words joined by '-' (such as registry-module-version), "
            f"at most {MAX_WORD} characters",
            parameter=parameter,
        )
    return raw


def criteria(query: Mapping[str, str], *, api: bool, also: tuple[str, ...] = ()) -> Criteria:
    """The criteria of a request's query: the API's ``filter[<name>]`` (``api``) or the
    pages' ``<name>``; ``also``: the other filters this reader takes (the admin trail's
    ``organization``), read by the caller. Any other ``filter[…]`` is a 422."""

    def name_of(short: str) -> str:
        return f"filter[{short}]" if api else short

    known = {name_of(n) for n in (*FILTERS, *also)}
    for given in query:
        if given.startswith("filter[") and given not in known:
            raise Unprocessable(
                f"unknown filter {given[:80]!r}: the trail is filtered by "
                + ", ".join(sorted(known)),
                parameter=given[:80],
            )
    actor, resource_type, action = (_value(query, n, name_of(n)) for n in FILTERS)
    return Criteria(
        trail.Filters(actor=actor, resource_type=resource_type, action=action),
        since=moment(query.get("since"), "since"),
        until=moment(query.get("until"), "until"),
    )


def _page(
    partition: str | None, wanted: Criteria, number: int, size: int, start: datetime | None
) -> tuple[list[dict[str, Any]], int]:
    try:
        return trail.read_page(
            partition,
            wanted.since,
            number,
            size,
            until=wanted.until,
            start=start,
            filters=wanted.filters,
        )
    except trail.TooManyToFilter as many:
        raise Unprocessable(
            f"this filter would read more than {many.limit:,} events: narrow the time "
            "range with since and until",
            parameter="since",
        ) from None


def organization_page(
    name: str, wanted: Criteria, number: int, size: int
) -> tuple[list[dict[str, Any]], int]:
    """A page of the organization's own trail: its events from its creation on (none when
    there is no organization of that name now)."""
    organization = get_organization(name)
    if organization is None:
        return [], 0
    return _page(name, wanted, number, size, organization.created_at)


def owners_page(
    principal: Principal, name: str, wanted: Criteria, number: int, size: int
) -> tuple[list[dict[str, Any]], int]:
    """The organization's own trail as its owners (and site admins) read it in the browser;
    anyone else gets the 404 of an organization they cannot see."""
    organization = owned_organization(principal, name)
    return _page(name, wanted, number, size, organization.created_at)


def any_page(
    organization: str | None, wanted: Criteria, number: int, size: int
) -> tuple[list[dict[str, Any]], int]:
    """A page of a partition as site admins read it: every event kept under the
    organization's name, those of a deleted one of that name too (None: the site-wide
    events)."""
    return _page(organization, wanted, number, size, None)


def pagination(number: int, size: int, total: int) -> dict[str, Any]:
    """HCP's ``pagination`` of page ``number`` of ``size`` of ``total`` events."""
    pages = max(1, -(-total // size))
    return {
        "current_page": number,
        "prev_page": number - 1 if number > 1 else None,
        "next_page": number + 1 if number < pages else None,
        "total_pages": pages,
        "total_count": total,
    }
