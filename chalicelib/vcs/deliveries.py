"""VCS webhook deliveries: how each provider signs them, and which ones are about tags.

Each VCS-backed module has its own secret (see ``publishing``). A provider proves it knows
the secret in its own way (``providers.Provider.delivery_scheme`` names it):

* GitHub / GitHub Enterprise: ``X-Hub-Signature-256: sha256=<HMAC-SHA256 of the body>``;
* Bitbucket Cloud, Server and Data Center: ``X-Hub-Signature: sha256=<HMAC-SHA256>``;
* GitLab: the secret itself in ``X-Gitlab-Token``;
* Azure DevOps service hooks: HTTP basic authentication with the secret as the password.

Only tag changes matter for publishing; every other event is acknowledged and ignored.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

from chalicelib.vcs import providers

TAGS = "tags"
PING = "ping"
IGNORED = "ignored"

# How each family of service providers proves a delivery, for error messages.
SCHEMES: dict[str, str] = {p.family: p.delivery_scheme for p in providers.ALL}


def family(provider: str) -> str:
    """``github`` for github and github_enterprise, ``gitlab_hosted`` -> ``gitlab``, and so on.

    Unlike ``providers.family`` this never raises: a name the table does not know keeps the
    part before its first underscore, which callers use only to pick a scheme."""
    known = providers.find(provider)
    return known.family if known else provider.split("_", 1)[0]


@dataclass(frozen=True)
class Event:
    kind: str
    detail: str


def _lower(headers: Any) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in dict(headers).items()}


def _hmac_matches(secret: str, body: bytes, header: str | None) -> bool:
    if not header or not header.startswith("sha256="):
        return False
    expected = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, header[len("sha256=") :].strip().lower())


def _basic_password(header: str | None) -> str | None:
    if not header or not header.lower().startswith("basic "):
        return None
    try:
        decoded = base64.b64decode(header[6:].strip(), validate=True).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return None
    return decoded.split(":", 1)[1] if ":" in decoded else None


def verify(provider: str, secret: str, headers: Any, body: bytes) -> bool:
    """Whether the delivery carries proof of ``secret`` in ``provider``'s scheme."""
    h = _lower(headers)
    kind = family(provider)
    if kind == "github":
        return _hmac_matches(secret, body, h.get("x-hub-signature-256"))
    if kind == "bitbucket":
        return _hmac_matches(secret, body, h.get("x-hub-signature"))
    if kind == "gitlab":
        return hmac.compare_digest(h.get("x-gitlab-token", "").encode(), secret.encode())
    if kind == "ado":
        password = _basic_password(h.get("authorization"))
        return password is not None and hmac.compare_digest(password.encode(), secret.encode())
    return False


def _payload(headers: dict[str, str], body: bytes) -> Any:
    """The JSON payload; GitHub's form-encoded deliveries carry it in ``payload=``."""
    text = body.decode("utf-8", "replace")
    if headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
        text = (parse_qs(text).get("payload") or [""])[0]
    try:
        return json.loads(text) if text.strip() else {}
    except (ValueError, RecursionError):  # junk, or nested past the decoder's limit
        return None


def classify(provider: str, headers: Any, body: bytes) -> Event:
    """What a verified delivery is about: tags, a ping, or something to ignore."""
    h = _lower(headers)
    payload = _payload(h, body)
    if not isinstance(payload, dict):
        return Event(IGNORED, "the payload is not a JSON object")
    kind = family(provider)
    if kind == "github":
        event = h.get("x-github-event", "")
        if event == "ping":
            return Event(PING, "ping")
        if event == "push" and str(payload.get("ref", "")).startswith("refs/tags/"):
            return Event(TAGS, f"push of {payload['ref']}")
        if event in ("create", "delete") and payload.get("ref_type") == "tag":
            return Event(TAGS, f"{event} of tag {payload.get('ref')}")
        return Event(IGNORED, f"GitHub event {event or '(none)'} is not about tags")
    if kind == "gitlab":
        event = h.get("x-gitlab-event", "")
        if event == "Tag Push Hook":
            return Event(TAGS, f"tag push of {payload.get('ref')}")
        return Event(IGNORED, f"GitLab event {event or '(none)'} is not about tags")
    if kind == "bitbucket":
        event = h.get("x-event-key", "")
        if event == "diagnostics:ping":
            return Event(PING, "ping")
        if event == "repo:push" and _bitbucket_cloud_tags(payload):
            return Event(TAGS, "push of tags")
        if event == "repo:refs_changed" and _bitbucket_server_tags(payload):
            return Event(TAGS, "tags changed")
        return Event(IGNORED, f"Bitbucket event {event or '(none)'} is not about tags")
    if kind == "ado":
        event = str(payload.get("eventType", ""))
        updates = (payload.get("resource") or {}).get("refUpdates") or []
        if event == "git.push" and any(
            str(u.get("name", "")).startswith("refs/tags/") for u in updates if isinstance(u, dict)
        ):
            return Event(TAGS, "push of tags")
        return Event(IGNORED, f"Azure DevOps event {event or '(none)'} is not about tags")
    return Event(IGNORED, f"no webhook support for {provider}")


def _bitbucket_cloud_tags(payload: dict[str, Any]) -> bool:
    changes = (payload.get("push") or {}).get("changes") or []
    for change in changes:
        if not isinstance(change, dict):
            continue
        for side in (change.get("new"), change.get("old")):
            if isinstance(side, dict) and side.get("type") == "tag":
                return True
    return False


def _bitbucket_server_tags(payload: dict[str, Any]) -> bool:
    changes = payload.get("changes") or []
    return any(
        isinstance(c, dict) and isinstance(c.get("ref"), dict) and c["ref"].get("type") == "TAG"
        for c in changes
    )
