"""Where a provider version's files live in S3, and reading a key back.

``providers/<provider id>/<version>/SHA256SUMS`` and ``.../SHA256SUMS.sig`` are the
version's shasums and signature; ``providers/<provider id>/<version>/<os>_<arch>/<filename>``
a platform's binary archive. The upload links are presigned PUTs to these keys; the S3
event of each upload marks it arrived (``providers.uploads``).
"""

from __future__ import annotations

from dataclasses import dataclass

UPLOAD_PREFIX = "providers/"
SHASUMS = "SHA256SUMS"
SHASUMS_SIG = "SHA256SUMS.sig"
PROVENANCE_PREFIX = "provenance/providers/"


def version_prefix(provider_id: str, version: str) -> str:
    return f"{UPLOAD_PREFIX}{provider_id}/{version}/"


def provider_prefix(provider_id: str) -> str:
    return f"{UPLOAD_PREFIX}{provider_id}/"


def shasums_key(provider_id: str, version: str) -> str:
    return version_prefix(provider_id, version) + SHASUMS


def shasums_sig_key(provider_id: str, version: str) -> str:
    return version_prefix(provider_id, version) + SHASUMS_SIG


def provenance_key(provider_id: str, version: str) -> str:
    """The version's signed provenance (a DSSE envelope), made when its SHA256SUMS verified
    (``providers.provenance``): outside ``UPLOAD_PREFIX``, whose objects' events the ingest
    queue receives (this is no upload)."""
    return f"{PROVENANCE_PREFIX}{provider_id}/{version}.dsse.json"


def binary_key(provider_id: str, version: str, os_: str, arch: str, filename: str) -> str:
    return version_prefix(provider_id, version) + f"{os_}_{arch}/{filename}"


@dataclass(frozen=True)
class UploadedKey:
    """What an object key under ``UPLOAD_PREFIX`` names: a version's shasums or signature
    (``platform`` None), or a platform's binary (``platform`` = ``<os>_<arch>``)."""

    provider_id: str
    version: str
    file: str
    platform: str | None = None

    @classmethod
    def parse(cls, key: str) -> UploadedKey | None:
        if not key.startswith(UPLOAD_PREFIX):
            return None
        parts = key[len(UPLOAD_PREFIX) :].split("/")
        if not all(parts):
            return None
        if len(parts) == 3 and parts[2] in (SHASUMS, SHASUMS_SIG):
            return cls(parts[0], parts[1], parts[2])
        if len(parts) == 4:
            return cls(parts[0], parts[1], parts[3], parts[2])
        return None
