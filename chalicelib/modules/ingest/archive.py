"""Defensive reading of uploaded module archives (.tar.gz).

The archive is untrusted (the upload pipeline hands it over as fetched from S3, see
``artifacts.pipeline``), so it is read strictly sequentially, as a non-seekable stream would
be, and every size is bounded while the bytes are being read:

* compressed bytes are hashed and counted as they pass (cap: ``max_compressed``);
* gzip is decoded by our own reader (``zlib`` with gzip framing) and fed to ``tarfile`` in
  plain ``"r|"`` stream mode.  ``tarfile``'s own ``"r|gz"`` ignores the gzip trailer, so it
  accepts corrupt (bad CRC) and some truncated archives; our reader verifies CRC and length;
* decompressed bytes are capped as a whole (``max_unpacked`` plus an allowance for tar
  headers), which also stops bombs hidden in tar metadata (a huge pax header is read into
  memory by ``tarfile``) or in zeros after the end of the tar;
* regular file sizes are summed per member, and bytes of kept files are counted as read.

Only the files the metadata parser needs (``*.tf``, ``*.tf.json``, OpenTofu's ``*.tofu`` and
``*.tofu.json``, README*) are kept.

Errors: whatever the bytes are, ``read_archive`` raises ArchiveError (a reason for the
publisher; an unforeseen exception from ``tarfile`` on hostile input becomes one too), except
when reading the underlying stream itself fails (S3, the network): that is StreamError, with
the original exception as ``error``, so the caller can retry instead of refusing the upload.

Links that stay inside the archive are accepted, as real modules ship them (a test fixture
``fixture/locals.tf -> ../locals.tf``): a symbolic link is followed component by component
through the archive's own links (at most ``_MAX_LINK_HOPS``) and must end inside the root;
a hard link must name a file earlier in the archive. The parser sees a kept link as a copy of
its target (a directory link as a copy of the kept files below it), and those copies count
against ``max_unpacked`` like any other bytes. The archive itself is stored as uploaded.
"""

from __future__ import annotations

import hashlib
import posixpath
import tarfile
import zlib
from dataclasses import dataclass, field
from typing import BinaryIO, Self

from chalicelib.modules.ingest.hcl import SUFFIXES as TERRAFORM_SUFFIXES

__all__ = ["ArchiveContents", "ArchiveError", "StreamError", "read_archive"]

_CHUNK = 64 * 1024
_GZIP_MAGIC = b"\x1f\x8b"
# Slack for tar framing on top of max_unpacked: headers, padding, pax records, end blocks.
_FIXED_OVERHEAD = 1024 * 1024
_PER_MEMBER_OVERHEAD = 2048
# Symbolic links followed while resolving one path (Linux allows 40).
_MAX_LINK_HOPS = 40


class ArchiveError(Exception):
    """The archive is unusable; ``message`` is safe and meant to be shown to the publisher."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class StreamError(Exception):
    """Reading the source stream failed (not the archive's fault); ``error`` is the cause."""

    def __init__(self, error: Exception) -> None:
        super().__init__(f"reading the archive's stream failed: {type(error).__name__}")
        self.error = error


@dataclass
class ArchiveContents:
    files: dict[str, bytes] = field(default_factory=dict)
    sha256: str = ""
    compressed_size: int = 0
    unpacked_size: int = 0
    file_count: int = 0


class _HashingReader:
    """Counts and hashes the compressed bytes; enforces ``max_compressed``."""

    def __init__(self, stream: BinaryIO, limit: int) -> None:
        self._stream = stream
        self._limit = limit
        self.digest = hashlib.sha256()
        self.size = 0

    def read(self, size: int) -> bytes:
        try:
            data = self._stream.read(size)
        except Exception as exc:
            raise StreamError(exc) from exc
        if data:
            self.size += len(data)
            if self.size > self._limit:
                raise ArchiveError(
                    f"archive is larger than the maximum allowed size of {self._limit} bytes "
                    "(compressed)"
                )
            self.digest.update(data)
        return data

    def drain(self) -> None:
        while self.read(_CHUNK):
            pass


class _GunzipReader:
    """File-like ``read(n)`` over decompressed gzip data (multi-member aware).

    Raises ArchiveError for non-gzip input, corrupt or truncated data and when more than
    ``limit`` decompressed bytes would be produced.
    """

    def __init__(self, raw: _HashingReader, limit: int, max_unpacked: int) -> None:
        self._raw = raw
        self.limit = limit
        self._max_unpacked = max_unpacked
        self._pending = b""
        self._decomp: zlib._Decompress | None = None
        self._done = False
        self.total = 0
        self._start()

    def _start(self) -> None:
        head = self._raw.read(_CHUNK)
        while 0 < len(head) < 2:  # a stream may legitimately return a single byte
            more = self._raw.read(_CHUNK)
            if not more:
                break
            head += more
        if not head:
            raise ArchiveError("archive is empty")
        if not head.startswith(_GZIP_MAGIC):
            raise ArchiveError(_describe_non_gzip(head))
        self._pending = head
        self._decomp = zlib.decompressobj(wbits=31)

    def _next_member(self) -> None:
        """Called at the end of a gzip member: start the next one or finish."""
        assert self._decomp is not None
        rest = self._decomp.unused_data
        while len(rest) < 2:
            more = self._raw.read(_CHUNK)
            if not more:
                break
            rest += more
        if not rest:
            self._done = True
            return
        if rest.startswith(_GZIP_MAGIC):
            self._pending = rest
            self._decomp = zlib.decompressobj(wbits=31)
            return
        # Some tools pad the file with NULs (tape blocking); anything else is garbage.
        while rest:
            if rest.strip(b"\0"):
                raise ArchiveError("archive has unexpected data after the end of the gzip stream")
            rest = self._raw.read(_CHUNK)
        self._done = True

    def read(self, size: int = -1) -> bytes:
        if size == 0:
            return b""
        if size is None or size < 0:
            size = _CHUNK
        while not self._done:
            assert self._decomp is not None
            if self._decomp.eof:
                self._next_member()
                continue
            data = self._pending or self._raw.read(_CHUNK)
            if not data:
                raise ArchiveError("archive is truncated: the gzip data ends unexpectedly")
            try:
                out = self._decomp.decompress(data, size)
            except zlib.error as exc:
                raise ArchiveError(f"archive is corrupt: invalid gzip data ({exc})") from None
            self._pending = self._decomp.unconsumed_tail
            if out:
                self.total += len(out)
                if self.total > self.limit:
                    raise ArchiveError(
                        f"archive unpacks to more than the maximum allowed size of "
                        f"{self._max_unpacked} bytes"
                    )
                return out
        return b""


def _describe_non_gzip(head: bytes) -> str:
    if head.startswith(b"PK\x03\x04"):
        return "archive is not gzip-compressed (it looks like a zip file; upload a .tar.gz)"
    if head[257:262] == b"ustar":
        return "archive is not gzip-compressed (it is a plain tar; compress it with gzip)"
    return "archive is not gzip-compressed"


class _CheckedTarInfo(tarfile.TarInfo):
    """Records header errors that ``tarfile`` would otherwise treat as end-of-archive.

    In ``TarFile.next`` an invalid or truncated header after the first member silently ends
    iteration, which would hide corruption (and everything after it).
    """

    @classmethod
    def fromtarfile(cls, tarfile_: tarfile.TarFile) -> Self:
        try:
            return super().fromtarfile(tarfile_)
        except (
            tarfile.InvalidHeaderError,  # type: ignore[attr-defined]  # not in tarfile's stubs
            tarfile.TruncatedHeaderError,  # type: ignore[attr-defined]
        ) as exc:
            tarfile_._ingest_bad_header = str(exc)  # type: ignore[attr-defined]
            raise


def _is_kept(path: str) -> bool:
    # Hidden files and directories are ignored like Terraform does; this also drops the
    # "._main.tf" AppleDouble files that macOS tar adds, which are binary.
    if any(part.startswith(".") for part in path.split("/")):
        return False
    base = posixpath.basename(path)
    return _is_tf(base) or base.lower().startswith("readme")


def _is_tf(path: str) -> bool:
    return path.endswith(TERRAFORM_SUFFIXES)


def _normalise(name: str) -> str:
    """Validate a member name and return it as a clean relative path ("" for the root)."""
    if "\0" in name:
        raise ArchiveError(f"archive member {name!r} has a NUL character in its name")
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raise ArchiveError(f"archive member {name!r} has a name that is not valid UTF-8") from None
    if "\\" in name:
        raise ArchiveError(f"archive member {name!r} has a backslash in its path")
    if name.startswith("/"):
        raise ArchiveError(f"archive member {name!r} has an absolute path")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise ArchiveError(f"archive member {name!r} has a '..' path component")
    return "/".join(parts)


def _check_type(member: tarfile.TarInfo) -> None:
    name = member.name
    if member.issym() or member.islnk():
        return  # checked once the whole archive is known (``_Links``)
    if member.ischr() or member.isblk():
        raise ArchiveError(f"archive member {name!r} is a device file; devices are not allowed")
    if member.isfifo():
        raise ArchiveError(f"archive member {name!r} is a FIFO; FIFOs are not allowed")
    if member.issparse():
        raise ArchiveError(
            f"archive member {name!r} is a sparse file; sparse files are not allowed"
        )
    if not (member.isreg() or member.isdir()):
        raise ArchiveError(
            f"archive member {name!r} has an unsupported type ({member.type!r}); only regular "
            "files and directories are allowed"
        )


def read_archive(
    stream: BinaryIO,
    *,
    max_compressed: int,
    max_unpacked: int,
    max_members: int = 10_000,
) -> ArchiveContents:
    """Read and validate a module .tar.gz from a non-seekable stream (only ``read(n)`` used).

    Raises ArchiveError with a publisher-facing message for anything unsafe or unusable,
    StreamError when ``stream.read`` itself fails.
    """
    try:
        return _read_archive(stream, max_compressed, max_unpacked, max_members)
    except (ArchiveError, StreamError):
        raise
    except Exception as exc:  # tarfile (or we) did not foresee these bytes: still refused
        raise ArchiveError(
            f"archive is corrupt or unreadable ({type(exc).__name__} while reading it)"
        ) from None


def _read_archive(
    stream: BinaryIO, max_compressed: int, max_unpacked: int, max_members: int
) -> ArchiveContents:
    raw = _HashingReader(stream, max_compressed)
    # The decompressed-bytes cap grows with the members seen so far, so tar metadata can
    # never add more than a small, bounded amount on top of max_unpacked.
    base_limit = max_unpacked + _FIXED_OVERHEAD
    gunzip = _GunzipReader(raw, base_limit + _PER_MEMBER_OVERHEAD, max_unpacked)
    result = ArchiveContents()
    try:
        # Closed by the "with tar:" below; open() itself may raise before that.
        # The stubs want a seekable file; stream mode ("r|") only ever reads.
        tar = tarfile.open(  # type: ignore[call-overload]  # noqa: SIM115
            fileobj=gunzip, mode="r|", tarinfo=_CheckedTarInfo
        )
    except tarfile.ReadError as exc:
        if str(exc) == "empty file":
            raise ArchiveError("archive is empty (the gzip data contains no tar content)") from None
        raise ArchiveError(f"archive is gzip-compressed but is not a tar archive ({exc})") from None

    members = 0
    last = ""
    seen: set[str] = set()
    links = _Links()
    try:
        with tar:
            for member in tar:
                members += 1
                if members > max_members:
                    raise ArchiveError(f"archive has more than {max_members} members")
                gunzip.limit = base_limit + _PER_MEMBER_OVERHEAD * (members + 1)
                _check_type(member)
                path = _normalise(member.name)
                last = member.name
                if member.isdir():
                    continue
                if not path:
                    raise ArchiveError(f"archive member {member.name!r} is not a valid file name")
                if path in seen:
                    raise ArchiveError(f"archive contains {path!r} more than once")
                seen.add(path)
                if member.issym() or member.islnk():
                    links.add(member, path, seen)
                    continue
                links.files.add(path)
                result.file_count += 1
                result.unpacked_size += member.size
                if result.unpacked_size > max_unpacked:
                    raise ArchiveError(
                        f"archive unpacks to more than the maximum allowed size of "
                        f"{max_unpacked} bytes (at member {member.name!r})"
                    )
                if _is_kept(path):
                    result.files[path] = _read_member(tar, member, max_unpacked)
            bad = getattr(tar, "_ingest_bad_header", None)
            if bad is not None:
                where = f"after member {last!r}" if last else "at the start"
                raise ArchiveError(f"archive is corrupt: invalid tar header {where} ({bad})")
        # Read to the end so the gzip trailer (CRC, length) is verified and the digest covers
        # the whole object; both readers keep enforcing their caps.
        while gunzip.read(_CHUNK):
            pass
        raw.drain()
    except tarfile.TarError as exc:
        where = f" after member {last!r}" if last else ""
        raise ArchiveError(f"archive is corrupt or truncated{where} ({exc})") from None
    except EOFError:
        raise ArchiveError("archive is truncated: the data ends unexpectedly") from None

    links.resolve_into(result, max_unpacked)
    _check_root(result.files)
    result.sha256 = raw.digest.hexdigest()
    result.compressed_size = raw.size
    return result


def _read_member(tar: tarfile.TarFile, member: tarfile.TarInfo, max_unpacked: int) -> bytes:
    """Read one member in chunks, counting what is actually produced, not the header size."""
    fobj = tar.extractfile(member)
    if fobj is None:  # pragma: no cover - regular files always have a file object
        return b""
    chunks: list[bytes] = []
    got = 0
    while True:
        chunk = fobj.read(_CHUNK)
        if not chunk:
            break
        got += len(chunk)
        if got > member.size or got > max_unpacked:
            raise ArchiveError(f"archive member {member.name!r} is larger than its header says")
        chunks.append(chunk)
    return b"".join(chunks)


def _check_root(files: dict[str, bytes]) -> None:
    tf_paths = [p for p in files if _is_tf(p)]
    if any("/" not in p for p in tf_paths):
        return
    if not tf_paths:
        raise ArchiveError(
            "archive contains no Terraform files (*.tf, *.tf.json, *.tofu or *.tofu.json); the "
            "module files must be at the root of the archive"
        )
    tops = {p.split("/", 1)[0] for p in tf_paths}
    message = (
        "no Terraform files (*.tf, *.tf.json, *.tofu or *.tofu.json) at the archive root: the "
        "module files must be at the root of the archive, not in a subdirectory"
    )
    if len(tops) == 1:
        (top,) = tops
        message += (
            f"; all .tf files are inside the folder {top + '/'!r}, so create the archive from "
            f"inside that folder (e.g. tar -czf module.tar.gz -C {top} .)"
        )
    raise ArchiveError(message)


class _Links:
    """The archive's links, checked and resolved once every member has been seen."""

    def __init__(self) -> None:
        self.symbolic: dict[str, str] = {}  # link path -> target as written
        self.hard: dict[str, str] = {}  # link path -> the earlier member it names
        self.files: set[str] = set()  # regular files

    def add(self, member: tarfile.TarInfo, path: str, seen: set[str]) -> None:
        target = member.linkname
        if "\0" in target or "\\" in target:
            raise ArchiveError(f"archive member {member.name!r} links to an invalid name")
        if member.islnk():
            # A hard link names another member of the archive, by its archive path.
            try:
                named = _normalise(target)
            except ArchiveError:
                named = None
            if not named or named not in self.files:
                raise ArchiveError(
                    f"archive member {member.name!r} is a hard link to {target!r}, which is "
                    "not a file earlier in the archive"
                )
            self.hard[path] = named
            return
        if not target or target.startswith("/"):
            raise ArchiveError(
                f"archive member {member.name!r} is a symbolic link to {target!r}: links must "
                "be relative and stay inside the module"
            )
        self.symbolic[path] = target

    def _real(self, path: str, origin: str) -> str:
        """``path`` with every symbolic link in it followed; refuses a path that leaves the
        root or loops."""
        hops = 0
        parts = [p for p in path.split("/") if p]
        resolved: list[str] = []
        while parts:
            part = parts.pop(0)
            candidate = "/".join([*resolved, part])
            target = self.symbolic.get(candidate)
            if target is None:
                resolved.append(part)
                continue
            hops += 1
            if hops > _MAX_LINK_HOPS:
                raise ArchiveError(f"archive member {origin!r} is a symbolic link that loops")
            joined = posixpath.normpath(posixpath.join("/".join(resolved), target))
            if joined == ".." or joined.startswith("../"):
                raise ArchiveError(
                    f"archive member {origin!r} is a symbolic link that leaves the module "
                    f"(to {self.symbolic.get(origin, target)!r})"
                )
            parts = [p for p in joined.split("/") if p not in ("", ".")] + parts
            resolved = []
        return "/".join(resolved)

    def resolve_into(self, result: ArchiveContents, max_unpacked: int) -> None:
        """Check every link and give the parser the kept files seen through them."""
        for path in [*self.files, *self.symbolic, *self.hard]:
            parts = path.split("/")
            for depth in range(1, len(parts)):
                ancestor = "/".join(parts[:depth])
                if ancestor in self.symbolic:
                    raise ArchiveError(
                        f"archive member {path!r} is inside {ancestor!r}, which is a symbolic "
                        "link: unpacking it would write through the link"
                    )
        copies: dict[str, str] = {}
        for path in self.symbolic:
            real = self._real(path, path)
            if real in self.files:
                copies[path] = real
            elif _is_tf(path):
                raise ArchiveError(
                    f"archive member {path!r} is a link to {real!r}, which is not a Terraform "
                    "file in the archive"
                )
            else:  # a directory (or nothing): what is kept below it shows through the link
                prefix = real + "/" if real else ""
                for file in result.files:
                    if file.startswith(prefix) and file not in self.symbolic:
                        copies[path + "/" + file[len(prefix) :]] = file
        for path, named in self.hard.items():
            copies[path] = named
        for path, source in copies.items():
            if not _is_kept(path) or path in result.files:
                continue
            if source not in result.files:
                if _is_tf(path):
                    raise ArchiveError(
                        f"archive member {path!r} is a link to {source!r}, which is not a "
                        "Terraform file in the archive"
                    )
                continue
            content = result.files[source]
            result.unpacked_size += len(content)
            if result.unpacked_size > max_unpacked:
                raise ArchiveError(
                    f"archive unpacks to more than the maximum allowed size of {max_unpacked} "
                    f"bytes (following the link {path!r})"
                )
            result.files[path] = content
