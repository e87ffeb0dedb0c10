"""OIDC signing keys: RSA key pairs, their public JWKS, rotation and trimming.

State (the ``oidc`` settings item): ``keys`` = public JWKs newest first, each with its
``created-at``; ``next-rotation-at`` and ``next-trim-at`` (ISO timestamps). The private keys
are KMS-sealed in the item's secrets, by kid.

Timers (SPEC "OIDC signing key"): keys rotate every 90 days and old versions are trimmed 30
days after the last rotation. A manual rotate resets the rotation timer only; a manual trim
resets the trim timer only. An automatic rotation schedules the next trim 30 days later.
"""

from __future__ import annotations

import base64
import hashlib
import json
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from chalicelib.admin import store
from chalicelib.core import secrets
from chalicelib.core.api.errors import Conflict
from chalicelib.core.audit import trail
from chalicelib.core.data.ids import iso, now

if TYPE_CHECKING:
    from chalicelib.core.auth import Principal

AREA = "oidc"
ROTATE_EVERY = timedelta(days=90)
TRIM_AFTER = timedelta(days=30)
KEY_BITS = 2048


def _b64url_uint(value: int) -> str:
    raw = value.to_bytes((value.bit_length() + 7) // 8, "big")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _new_key_pair() -> tuple[dict[str, str], str]:
    """A fresh RSA key: (public JWK with an RFC 7638 thumbprint kid, private key PEM)."""
    # cryptography loads only to make a key (rotation, or the first JWKS of a deployment).
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    private = rsa.generate_private_key(public_exponent=65537, key_size=KEY_BITS)
    numbers = private.public_key().public_numbers()
    members = {"e": _b64url_uint(numbers.e), "kty": "RSA", "n": _b64url_uint(numbers.n)}
    canonical = json.dumps(members, separators=(",", ":"), sort_keys=True).encode()
    kid = base64.urlsafe_b64encode(hashlib.sha256(canonical).digest()).rstrip(b"=").decode()
    jwk = {**members, "kid": kid, "use": "sig", "alg": "RS256"}
    pem = private.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    return jwk, pem


def _parse(moment: str | None) -> datetime | None:
    return datetime.fromisoformat(moment.replace("Z", "+00:00")) if moment else None


def _add_key(item: store.SettingsModel, moment: datetime) -> None:
    jwk, pem = _new_key_pair()
    item.values = dict(item.values or {})
    item.values["keys"] = [{"jwk": jwk, "created-at": iso(moment)}, *item.values.get("keys", [])]
    item.secrets = {**(item.secrets or {}), jwk["kid"]: secrets.seal(pem, purpose=_purpose(jwk))}


def _purpose(jwk: dict[str, str]) -> str:
    return f"oidc/{jwk['kid']}"


def _trim(item: store.SettingsModel) -> None:
    keys = item.values.get("keys", [])[:1]
    kept = {k["jwk"]["kid"] for k in keys}
    item.values = {**item.values, "keys": keys}
    item.secrets = {kid: s for kid, s in (item.secrets or {}).items() if kid in kept}


def _save(principal: Principal | None, item: store.SettingsModel, before: dict[str, Any]) -> None:
    """Write the key state with its audit event (``principal`` None: the registry's own
    schedule): which of keys and timers changed, never a key."""
    changed = trail.changed(before, item.values or {})
    store.save(item, store.settings_event(principal, AREA, changed))


def _load(moment: datetime) -> store.SettingsModel:
    """The key state, creating the first key (and its timers) on first use (the registry's
    own change: an event of its own)."""
    item = store.load(AREA)
    if not (item.values or {}).get("keys"):
        before = dict(item.values or {})
        _add_key(item, moment)
        item.values["next-rotation-at"] = iso(moment + ROTATE_EVERY)
        item.values["next-trim-at"] = iso(moment + ROTATE_EVERY + TRIM_AFTER)
        try:
            changed = trail.changed(before, item.values)
            store.save(item, store.settings_event(None, AREA, changed, store.CREATED))
        except Conflict:  # another instance created the first key at the same moment
            return store.load(AREA)
    return item


def jwks() -> dict[str, Any]:
    return {"keys": [entry["jwk"] for entry in _load(now()).values["keys"]]}


def timers() -> dict[str, str | None]:
    values = _load(now()).values
    return {name: values.get(name) for name in ("next-rotation-at", "next-trim-at")}


def rotate(principal: Principal) -> None:
    """Manual rotation: a new signing key; the rotation timer restarts, the trim timer not."""
    moment = now()
    item = _load(moment)
    before = dict(item.values)
    _add_key(item, moment)
    item.values["next-rotation-at"] = iso(moment + ROTATE_EVERY)
    _save(principal, item, before)


def trim(principal: Principal) -> None:
    """Manual trim: keep only the newest key; the trim timer restarts, the rotation timer not."""
    moment = now()
    item = _load(moment)
    before = dict(item.values)
    _trim(item)
    item.values["next-trim-at"] = iso(moment + TRIM_AFTER)
    _save(principal, item, before)


def run_due_maintenance(moment: datetime | None = None) -> list[str]:
    """The scheduled job: rotate and/or trim when their time has come. Returns what it did."""
    moment = moment or now()
    item = _load(moment)
    before = dict(item.values)
    done: list[str] = []
    next_rotation = _parse(item.values.get("next-rotation-at"))
    if next_rotation is None or next_rotation <= moment:
        _add_key(item, moment)
        item.values["next-rotation-at"] = iso(moment + ROTATE_EVERY)
        item.values["next-trim-at"] = iso(moment + TRIM_AFTER)
        done.append("rotated")
    next_trim = _parse(item.values.get("next-trim-at"))
    if next_trim is not None and next_trim <= moment:
        _trim(item)
        rotation = _parse(item.values["next-rotation-at"]) or moment
        item.values["next-trim-at"] = iso(rotation + TRIM_AFTER)
        done.append("trimmed")
    if done:
        _save(None, item, before)
    return done
