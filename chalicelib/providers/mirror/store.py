"""What the provider network mirror keeps: one table, ``provider-mirror``.

* ``<hostname>/<namespace>/<type>`` + ``versions``: a public provider's version list as the
  upstream answered it (``{version: [os_arch, ...]}``), fresh until ``fresh_until``;
* ``<hostname>/<namespace>/<type>`` + ``v#<version>#<os>_<arch>``: an archive the cache
  holds (``{key, filename, zh, h1, size}``), from the upstream or a seed (one item per
  platform: parallel fetches of two platforms never overwrite each other);
* ``private/<platform id>`` + ``check``: what the mirror read of a private platform's
  uploaded archive (its SHA-256 and ``h1:``), for the upload of ``updated_at``.

Archives live in S3 under ``mirror/<hostname>/<namespace>/<type>/<version>/<filename>``:
outside ``providers/``, so their puts raise no upload events.
"""

from __future__ import annotations

from typing import Any

from pynamodb.attributes import JSONAttribute, NumberAttribute, UnicodeAttribute

from chalicelib.core.data import db

PREFIX = "mirror/"
VERSIONS = "versions"


def address(hostname: str, namespace: str, type_: str) -> str:
    return f"{hostname}/{namespace}/{type_}"


def archive_key(hostname: str, namespace: str, type_: str, version: str, filename: str) -> str:
    return f"{PREFIX}{address(hostname, namespace, type_)}/{version}/{filename}"


@db.register
class MirrorModel(db.Model):
    Meta = db.table("provider-mirror")

    address = UnicodeAttribute(hash_key=True)
    item = UnicodeAttribute(range_key=True)
    body = JSONAttribute(default=dict)
    fresh_until = NumberAttribute(default=0)
    stamp = UnicodeAttribute(null=True)


def read(address_: str, item: str) -> MirrorModel | None:
    try:
        return MirrorModel.get(address_, item)
    except MirrorModel.DoesNotExist:
        return None


def cached_versions(address_: str) -> MirrorModel | None:
    return read(address_, VERSIONS)


def keep_versions(address_: str, versions: dict[str, list[str]], fresh_until: int) -> None:
    MirrorModel(address_, VERSIONS, body=versions, fresh_until=fresh_until).save()


def _archive_item(version: str, platform: str = "") -> str:
    return f"v#{version}#{platform}"


def archives(address_: str, version: str) -> dict[str, dict[str, Any]]:
    """``{os_arch: archive}`` of a version the cache holds."""
    prefix = _archive_item(version)
    condition = MirrorModel.item.startswith(prefix)
    found = MirrorModel.query(address_, range_key_condition=condition)
    return {m.item[len(prefix) :]: dict(m.body) for m in found}


def add_archive(address_: str, version: str, platform: str, archive: dict[str, Any]) -> None:
    MirrorModel(address_, _archive_item(version, platform), body=archive).save()


def private_check(platform: str) -> MirrorModel | None:
    """What the mirror computed of a private platform's archive (``provider/version/os_arch``)."""
    return read(f"private/{platform}", "check")


def keep_private_check(platform: str, stamp: str, found: dict[str, Any]) -> None:
    MirrorModel(f"private/{platform}", "check", body=found, stamp=stamp).save()


def known_versions(address_: str) -> list[str]:
    """The versions whose archives the cache holds (seeded or fetched)."""
    condition = MirrorModel.item.startswith("v#")
    found = MirrorModel.query(address_, range_key_condition=condition, attributes_to_get=["item"])
    return sorted({m.item.split("#")[1] for m in found})
