"""Resource ids and timestamps in the shapes the TFE API uses."""

from __future__ import annotations

import secrets
import string
from datetime import UTC, datetime
from typing import overload

_ALPHABET = string.ascii_letters + string.digits


def new_id(prefix: str) -> str:
    """``<prefix>-`` followed by 16 random base62 characters, e.g. ``mod-4fTz...``."""
    return f"{prefix}-" + "".join(secrets.choice(_ALPHABET) for _ in range(16))


def now() -> datetime:
    return datetime.now(UTC)


@overload
def iso(moment: datetime) -> str: ...
@overload
def iso(moment: None) -> None: ...
@overload
def iso(moment: datetime | None) -> str | None: ...


def iso(moment: datetime | None) -> str | None:
    """ISO 8601 UTC with milliseconds: ``2024-01-02T03:04:05.678Z``."""
    if moment is None:
        return None
    return (
        moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
    )
