"""What terraform checks of a provider package it installs from a registry, checked by the
pull-through cache before it keeps an archive from the upstream.

The upstream's ``download/:os/:arch`` answer names the version's SHA256SUMS
(``shasums_url``), its detached signature (``shasums_signature_url``) and the keys that may
have made it (``signing_keys.gpg_public_keys``). An archive is kept only when that
signature verifies with one of those keys and SHA256SUMS lists the archive's filename with
its SHA-256. The rules are the ingest's (``providers.ingest.checks``): this only fetches the
files and asks them. A refusal is a 502 naming the provider, version and platform (never a
link: an upstream's links may carry credentials of its own).
"""

from __future__ import annotations

import logging

from chalicelib.core.api.errors import BadGateway, NotFound
from chalicelib.providers.ingest import checks
from chalicelib.providers.ingest.checks import Refused
from chalicelib.providers.mirror.upstream import Download, fetch_small

log = logging.getLogger("registry.mirror")


def check(found: Download, sha256: str, label: str) -> None:
    """A 502 unless the upstream's SHA256SUMS for ``found`` is signed by a key the upstream
    announces and lists ``found.filename`` with ``sha256``; ``label`` names the archive
    (``<hostname>/<namespace>/<type> <version> <os_arch>``) in errors and the log."""
    try:
        _check(found, sha256)
    except Refused as exc:
        log.warning("mirror refused the upstream's archive of %s: %s", label, exc.reason)
        raise BadGateway(f"the upstream's archive of {label}: {exc.reason}") from None


def _check(found: Download, sha256: str) -> None:
    if not (found.shasums_url and found.signature_url):
        raise Refused("the upstream's download answer lacks shasums_url or shasums_signature_url")
    if not found.keys:
        raise Refused("the upstream announces no signing key (signing_keys.gpg_public_keys)")
    shasums = _fetch(found, found.shasums_url, checks.MAX_SHASUMS_BYTES, "SHA256SUMS")
    signature = _fetch(found, found.signature_url, checks.MAX_SIGNATURE_BYTES, "SHA256SUMS.sig")
    _verify(found.keys, shasums, signature)
    listed = checks.parse_shasums(shasums).get(found.filename)
    if listed is None:
        raise Refused(f"the signed SHA256SUMS does not list {found.filename}")
    if listed != sha256:
        raise Refused(f"{found.filename} is not the archive the signed SHA256SUMS lists")


def _fetch(found: Download, url: str, limit: int, what: str) -> bytes:
    try:
        return fetch_small(url, limit, found.hostname)
    except NotFound:
        raise Refused(f"the upstream has no {what}") from None


def _verify(keys: tuple[tuple[str, str], ...], shasums: bytes, signature: bytes) -> None:
    """Refused unless one of ``keys`` verifies the signature; the reasons of all of them."""
    reasons = []
    for key_id, armor in keys:
        try:
            checks.verify_signature(armor, key_id or "announced", shasums, signature)
        except Refused as exc:
            reasons.append(exc.reason)
        except Exception as exc:  # noqa: BLE001 - PGPy raises many kinds on a hostile key
            name = type(exc).__name__
            reasons.append(f"key {key_id[:40]!r} is not a readable OpenPGP key ({name})")
        else:
            return
    raise Refused(
        "SHA256SUMS is not signed by a key the upstream announces: "
        + "; ".join(dict.fromkeys(reasons))
    )
