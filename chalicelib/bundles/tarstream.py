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
from collections.abc import Callable, Iterable, Iterator, Mapping
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
    """A write-only file whose bytes become the object ``key`` (multipart; ``abort`` drops
    what was sent).

    Resumable: made again with an earlier sink's ``upload_id`` and ``parts`` (each part's
    number, ETag and size) and a ``position`` at or before the end of those parts, it takes
    the same bytes written again from ``position`` and drops those the parts hold already,
    sending from the next part on. ``on_part`` is called after each part is sent (its job
    keeps the parts; it may stop the export there by raising)."""

    def __init__(
        self,
        key: str,
        upload_id: str | None = None,
        parts: Iterable[Mapping[str, Any]] = (),
        position: int = 0,
        on_part: Callable[[S3Sink], None] | None = None,
    ) -> None:
        super().__init__()
        self.key = key
        self.parts: list[dict[str, Any]] = [dict(p) for p in parts]
        self._sent_before = sum(int(p["size"]) for p in self.parts)
        if not 0 <= position <= self._sent_before:
            raise ValueError("a sink resumes at or before the end of its parts")
        self.size = position  # the bundle's bytes so far
        self._s3 = client("s3")
        self._buffer = bytearray()
        self._on_part = on_part
        if upload_id is None:
            started = self._s3.create_multipart_upload(Bucket=objects.bucket(), Key=key)
            upload_id = str(started["UploadId"])
        self.upload_id = upload_id

    def writable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.size

    def write(self, data: Any) -> int:
        view = bytes(data)
        start = self.size
        self.size += len(view)
        if self.size <= self._sent_before:  # written again: an earlier run sent it
            return len(view)
        self._buffer += view[max(0, self._sent_before - start) :]
        while len(self._buffer) >= PART:
            self._send(bytes(self._buffer[:PART]))
            del self._buffer[:PART]
        return len(view)

    def _send(self, body: bytes) -> None:
        number = len(self.parts) + 1
        answer = self._s3.upload_part(
            Bucket=objects.bucket(),
            Key=self.key,
            UploadId=self.upload_id,
            PartNumber=number,
            Body=body,
        )
        self.parts.append({"number": number, "etag": answer["ETag"], "size": len(body)})
        if self._on_part is not None:
            self._on_part(self)

    def finish(self) -> None:
        if self._buffer or not self.parts:
            body = bytes(self._buffer)
            self._buffer.clear()
            self._send(body)
        self._s3.complete_multipart_upload(
            Bucket=objects.bucket(),
            Key=self.key,
            UploadId=self.upload_id,
            MultipartUpload={
                "Parts": [{"PartNumber": p["number"], "ETag": p["etag"]} for p in self.parts]
            },
        )

    def abort(self) -> None:
        self._s3.abort_multipart_upload(
            Bucket=objects.bucket(), Key=self.key, UploadId=self.upload_id
        )


class TarWriter:
    """Members added one at a time to a tar stream written to ``sink``, from the sink's
    position on (``tell``): tar's own bytes go straight to the sink, so after each member the
    sink's position is where the next one starts (an export resumes there)."""

    def __init__(self, sink: IO[bytes] | io.RawIOBase) -> None:
        stream = cast(IO[bytes], sink)
        self._tar = tarfile.open(fileobj=stream, mode="w", format=tarfile.PAX_FORMAT)  # noqa: SIM115

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
