"""The archive bucket, and the only code that calls S3: presigned upload and download
links, existence, reading an object under a size limit (``fetch``), copying, writing,
deletion, and gzipped JSON metadata. Shared by every artifact type; where each type keeps
its objects is its own (``modules.keys``, ``providers.keys``).

"The object is not there" is one rule (``MISSING``, ``Gone``): S3 answers ``NoSuchKey`` to a
GET, a bare ``404`` to a HEAD, and moto and S3-compatible stores say ``NotFound``.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO, Any, BinaryIO, cast

from chalicelib.core.data.aws import client
from chalicelib.core.settings import get_settings

# The error codes of an object that is not there (or no longer).
MISSING = frozenset({"404", "NoSuchKey", "NotFound"})
# The error codes of a conditional copy whose source changed (If-Match failed).
_CHANGED = frozenset({"PreconditionFailed", "412"})
_CHUNK = 1024 * 1024
# Objects up to this size are fetched into memory; larger ones spill to /tmp.
_IN_MEMORY = 16 * 1024 * 1024


class Gone(Exception):
    """The object is not there: deleted meanwhile, or already processed by another delivery
    of the same event."""


class TooLarge(Exception):
    """The object is over the limit it was read with; ``size`` is S3's word when it said one,
    else None (found while reading)."""

    def __init__(self, size: int | None, limit: int) -> None:
        super().__init__(f"{size} bytes, over the limit of {limit}")
        self.size = size
        self.limit = limit


def _code(exc: Exception) -> str:
    return str(getattr(exc, "response", {}).get("Error", {}).get("Code", ""))


def bucket() -> str:
    return get_settings().bucket


def presigned_upload_url(key: str) -> str:
    return client("s3").generate_presigned_url(
        "put_object",
        Params={"Bucket": bucket(), "Key": key},
        ExpiresIn=get_settings().upload_url_ttl,
    )


def presigned_download_url(key: str) -> str:
    return client("s3").generate_presigned_url(
        "get_object",
        Params={"Bucket": bucket(), "Key": key},
        ExpiresIn=get_settings().download_url_ttl,
    )


def exists(key: str) -> bool:
    from botocore.exceptions import ClientError

    try:
        client("s3").head_object(Bucket=bucket(), Key=key)
    except ClientError as exc:
        if _code(exc) in MISSING:
            return False
        raise
    return True


@dataclass
class Fetched:
    """An object's bytes as they were read: in ``file`` (seekable, at its start), with their
    ``sha256``, ``size`` and the ``etag`` of the object they came from."""

    key: str
    file: BinaryIO
    size: int
    sha256: str
    etag: str

    def read(self) -> bytes:
        self.file.seek(0)
        data = self.file.read()
        self.file.seek(0)
        return data


@contextmanager
def fetch(key: str, limit: int) -> Iterator[Fetched]:
    """The object's bytes, read once from S3 into memory (or /tmp past 16 MiB) and hashed on
    the way, never more than ``limit``: ``TooLarge`` when S3 says it is larger or when more
    bytes come, ``Gone`` when it is not there. S3 failing (mid-read too) propagates: it is
    not the object's fault, so the caller's event is delivered again."""
    from botocore.exceptions import ClientError

    try:
        obj = client("s3").get_object(Bucket=bucket(), Key=key)
    except ClientError as exc:
        if _code(exc) in MISSING:
            raise Gone(key) from None
        raise
    body = obj["Body"]
    announced = obj.get("ContentLength") or 0
    if announced > limit:
        body.close()
        raise TooLarge(announced, limit)
    with tempfile.SpooledTemporaryFile(max_size=_IN_MEMORY) as spool:
        digest, size = hashlib.sha256(), 0
        while chunk := body.read(_CHUNK):
            size += len(chunk)
            if size > limit:
                body.close()
                raise TooLarge(None, limit)
            digest.update(chunk)
            spool.write(chunk)
        spool.seek(0)
        etag = str(obj.get("ETag", ""))
        yield Fetched(key, cast(BinaryIO, spool), size, digest.hexdigest(), etag)


def copy_if_unchanged(source: str, target: str, etag: str, content_type: str) -> bool:
    """Copy ``source`` to ``target`` only if it still has ``etag`` (the bytes that were
    checked); False when it changed or went meanwhile (a newer upload has its own event)."""
    from botocore.exceptions import ClientError

    try:
        client("s3").copy_object(
            Bucket=bucket(),
            Key=target,
            CopySource={"Bucket": bucket(), "Key": source},
            CopySourceIfMatch=etag,
            ContentType=content_type,
            MetadataDirective="REPLACE",
        )
    except ClientError as exc:
        if _code(exc) in _CHANGED | MISSING:
            return False
        raise
    return True


def put(key: str, body: bytes, content_type: str) -> None:
    client("s3").put_object(Bucket=bucket(), Key=key, Body=body, ContentType=content_type)


def upload(file: IO[bytes], key: str, content_type: str) -> None:
    """A file of any size (multipart when large), from its current position."""
    client("s3").upload_fileobj(file, bucket(), key, ExtraArgs={"ContentType": content_type})


def delete_objects(keys: Sequence[str | None]) -> None:
    wanted = [{"Key": k} for k in keys if k]
    for start in range(0, len(wanted), 1000):
        client("s3").delete_objects(
            Bucket=bucket(), Delete={"Objects": wanted[start : start + 1000], "Quiet": True}
        )


def put_metadata(key: str, metadata: dict[str, Any]) -> None:
    body = gzip.compress(json.dumps(metadata, separators=(",", ":")).encode())
    client("s3").put_object(
        Bucket=bucket(),
        Key=key,
        Body=body,
        ContentType="application/json",
        ContentEncoding="gzip",
    )


def get_metadata(key: str) -> dict[str, Any]:
    """A version's parsed metadata (gzipped JSON); ``Gone`` when it is not there."""
    from botocore.exceptions import ClientError

    try:
        body = client("s3").get_object(Bucket=bucket(), Key=key)["Body"].read()
    except ClientError as exc:
        if _code(exc) in MISSING:
            raise Gone(key) from None
        raise
    return json.loads(gzip.decompress(body))
