"""Writing and reading a bundle as a stream.

An export never holds the bundle: ``S3Sink`` is a write-only file that sends what tar
writes to S3 as a multipart upload, one part (``PART`` bytes) in memory at a time; each
member comes from a spooled copy of its object (``objects.fetch``: memory up to 16 MiB,
then /tmp), one at a time. An import reads the bundle object's body as tar's stream mode
reads it (``r|``), twice: once to check it, once to write what it creates.
"""

from __future__ import annotations

import hashlib
import io
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO, Any, BinaryIO, cast

from chalicelib.artifacts import objects
from chalicelib.bundles.manifest import MANIFEST, BadBundle
from chalicelib.core.data.aws import client

PART = 8 * 1024 * 1024  # S3's parts are at least 5 MiB (the last excepted)
CHUNK = 1024 * 1024
SPOOL = 16 * 1024 * 1024
MAX_MEMBERS = 20_000


class S3Sink(io.RawIOBase):
    """A write-only file whose bytes become the object ``key`` (multipart; aborted when
    ``abort`` is called or the ``with`` block raises)."""

    def __init__(self, key: str) -> None:
        super().__init__()
        self.key = key
        self.size = 0
        self._s3 = client("s3")
        self._buffer = bytearray()
        self._parts: list[dict[str, Any]] = []
        started = self._s3.create_multipart_upload(Bucket=objects.bucket(), Key=key)
        self._upload_id = started["UploadId"]

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        view = bytes(data)
        self._buffer += view
        self.size += len(view)
        while len(self._buffer) >= PART:
            self._send(bytes(self._buffer[:PART]))
            del self._buffer[:PART]
        return len(view)

    def _send(self, body: bytes) -> None:
        number = len(self._parts) + 1
        answer = self._s3.upload_part(
            Bucket=objects.bucket(),
            Key=self.key,
            UploadId=self._upload_id,
            PartNumber=number,
            Body=body,
        )
        self._parts.append({"PartNumber": number, "ETag": answer["ETag"]})

    def finish(self) -> None:
        if self._buffer or not self._parts:
            self._send(bytes(self._buffer))
            self._buffer.clear()
        self._s3.complete_multipart_upload(
            Bucket=objects.bucket(),
            Key=self.key,
            UploadId=self._upload_id,
            MultipartUpload={"Parts": self._parts},
        )

    def abort(self) -> None:
        self._s3.abort_multipart_upload(
            Bucket=objects.bucket(), Key=self.key, UploadId=self._upload_id
        )


class TarWriter:
    """Members added one at a time to a tar stream written to ``sink``."""

    def __init__(self, sink: IO[bytes] | io.RawIOBase) -> None:
        stream = cast(IO[bytes], sink)
        self._tar = tarfile.open(fileobj=stream, mode="w|", format=tarfile.PAX_FORMAT)  # noqa: SIM115

    def add(self, path: str, file: IO[bytes], size: int) -> None:
        info = tarfile.TarInfo(path)
        info.size = size
        info.mode = 0o644
        self._tar.addfile(info, file)

    def add_bytes(self, path: str, data: bytes) -> None:
        self.add(path, io.BytesIO(data), len(data))

    def close(self) -> None:
        self._tar.close()


@dataclass
class Member:
    """One regular file of a bundle being read: its path, size and a reader of its bytes
    (valid until the next member is asked for)."""

    path: str
    size: int
    file: IO[bytes]


def open_body(key: str, etag: str | None = None) -> IO[bytes]:
    """The bundle object's body, streamed (only while it still has ``etag``, when given: the
    bytes checked are the bytes imported); ``objects.Gone`` when nothing was uploaded."""
    from botocore.exceptions import ClientError

    extra = {"IfMatch": etag} if etag else {}
    try:
        answer = client("s3").get_object(Bucket=objects.bucket(), Key=key, **extra)
    except ClientError as exc:
        code = str(exc.response.get("Error", {}).get("Code", ""))
        if code in objects.MISSING:
            raise objects.Gone(key) from None
        raise
    return cast(IO[bytes], answer["Body"])


def members(stream: IO[bytes]) -> Iterator[Member]:
    """The bundle's regular files in order; ``BadBundle`` for anything else in it (a link,
    a device, a folder, a name twice, a path leaving the bundle, too many members)."""
    seen: set[str] = set()
    try:
        with tarfile.open(fileobj=stream, mode="r|") as tar:
            for info in tar:
                if not info.isfile():
                    raise BadBundle(f"{info.name!r} is not a regular file")
                name = info.name
                if name.startswith("/") or ".." in name.split("/") or name in seen:
                    raise BadBundle(f"{name!r} is not a path a bundle may hold (or comes twice)")
                seen.add(name)
                if len(seen) > MAX_MEMBERS:
                    raise BadBundle(f"a bundle holds at most {MAX_MEMBERS} files")
                reader = tar.extractfile(info)
                assert reader is not None  # a regular file
                yield Member(name, info.size, reader)
    except tarfile.TarError as exc:
        raise BadBundle(f"the bundle is not a readable tar file ({exc})") from None


def digest_of(file: IO[bytes], keep: int = 0) -> tuple[str, int, bytes | None]:
    """``file``'s SHA-256 and size, read in chunks; its bytes too when at most ``keep``."""
    digest, size, held = hashlib.sha256(), 0, bytearray()
    while chunk := file.read(CHUNK):
        digest.update(chunk)
        size += len(chunk)
        if size <= keep:
            held += chunk
    return digest.hexdigest(), size, bytes(held) if size <= keep else None


@contextmanager
def spooled(file: IO[bytes]) -> Iterator[tuple[BinaryIO, str, int]]:
    """A copy of ``file`` that can be read again (memory up to 16 MiB, then /tmp), with its
    SHA-256 and size."""
    with tempfile.SpooledTemporaryFile(max_size=SPOOL) as spool:
        digest, size = hashlib.sha256(), 0
        while chunk := file.read(CHUNK):
            digest.update(chunk)
            size += len(chunk)
            spool.write(chunk)
        spool.seek(0)
        yield cast(BinaryIO, spool), digest.hexdigest(), size


def is_manifest(member: Member) -> bool:
    return member.path == MANIFEST
