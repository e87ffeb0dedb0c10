"""Tests for the hostile-archive reader (chalicelib.modules.ingest.archive)."""

from __future__ import annotations

import gzip
import hashlib
import io
import tarfile
import time
import tracemalloc
import zlib

import pytest

from chalicelib.modules.ingest.archive import ArchiveError, read_archive

MB = 1024 * 1024
LIMITS = {"max_compressed": 5 * MB, "max_unpacked": 10 * MB}


class NonSeekable:
    """Mimics a boto3 StreamingBody: only read(n), possibly returning short reads."""

    def __init__(self, data: bytes, max_chunk: int | None = None) -> None:
        self._buf = io.BytesIO(data)
        self._max_chunk = max_chunk
        self.bytes_read = 0

    def read(self, n: int = -1) -> bytes:
        if self._max_chunk is not None and (n is None or n < 0 or n > self._max_chunk):
            n = self._max_chunk
        data = self._buf.read(n)
        self.bytes_read += len(data)
        return data


class Zeros(io.RawIOBase):
    """An endless source of NUL bytes that never holds more than one chunk in memory."""

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:  # type: ignore[no-untyped-def]
        b[:] = bytes(len(b))
        return len(b)


def reg(name: str, data: bytes = b"") -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, data


def special(name: str, kind: bytes, linkname: str = "") -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = linkname
    return info, b""


def dirent(name: str) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.type = tarfile.DIRTYPE
    return info, b""


def tar_bytes(entries: list[tuple[tarfile.TarInfo, bytes]], **kwargs) -> bytes:  # type: ignore[no-untyped-def]
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT, **kwargs) as tar:
        for info, data in entries:
            tar.addfile(info, io.BytesIO(data) if info.isreg() else None)
    return buf.getvalue()


def targz(entries: list[tuple[tarfile.TarInfo, bytes]], **kwargs) -> bytes:  # type: ignore[no-untyped-def]
    return gzip.compress(tar_bytes(entries, **kwargs))


def read(data: bytes, max_chunk: int | None = None, **limits: int):  # type: ignore[no-untyped-def]
    return read_archive(NonSeekable(data, max_chunk), **{**LIMITS, **limits})


def error_of(data: bytes, **limits: int) -> str:
    with pytest.raises(ArchiveError) as excinfo:
        read(data, **limits)
    assert excinfo.value.message == str(excinfo.value)
    return excinfo.value.message


MAIN_TF = b'variable "region" {\n  type = string\n}\n'


# --- good archives ---------------------------------------------------------------------------


@pytest.mark.parametrize("max_chunk", [None, 1, 700])
def test_good_archive_with_dot_slash_prefix(max_chunk: int | None) -> None:
    png = bytes(range(256)) * 40
    data = targz(
        [
            dirent("./"),
            reg("./main.tf", MAIN_TF),
            reg("./outputs.tf.json", b'{"output": {}}'),
            reg("./README.md", b"# Module"),
            dirent("./modules"),
            dirent("./modules/sub"),
            reg("./modules/sub/main.tf", b"# sub"),
            reg("./modules/sub/readme.MD", b"sub readme"),
            reg("./docs/diagram.png", png),
            reg("./.terraform-version", b"1.6.0"),
        ],
        pax_headers={"comment": "git archive style global header"},
    )
    result = read(data, max_chunk)
    assert result.files == {
        "main.tf": MAIN_TF,
        "outputs.tf.json": b'{"output": {}}',
        "README.md": b"# Module",
        "modules/sub/main.tf": b"# sub",
        "modules/sub/readme.MD": b"sub readme",
    }
    assert result.file_count == 7
    assert result.unpacked_size == len(MAIN_TF) + 14 + 8 + 5 + 10 + len(png) + 5
    assert result.compressed_size == len(data)
    assert result.sha256 == hashlib.sha256(data).hexdigest()


def test_opentofu_files_are_kept_and_make_a_module() -> None:
    """``.tofu`` and ``.tofu.json`` files are configuration: kept, and enough at the root."""
    data = targz(
        [
            reg("main.tofu", b'variable "a" {}'),
            reg("outputs.tofu.json", b'{"output": {}}'),
            reg("modules/sub/main.tofu", b"# sub"),
            reg("notes.txt", b"dropped"),
        ]
    )
    assert set(read(data).files) == {"main.tofu", "outputs.tofu.json", "modules/sub/main.tofu"}


def test_digest_covers_bytes_after_the_tar_end() -> None:
    # Extra gzip padding after the tar end-of-archive marker must still be hashed.
    tar = tar_bytes([reg("main.tf", MAIN_TF)]) + bytes(50_000)
    data = gzip.compress(tar) + bytes(100)
    stream = NonSeekable(data)
    result = read_archive(stream, **LIMITS)
    assert stream.bytes_read == len(data)
    assert result.compressed_size == len(data)
    assert result.sha256 == hashlib.sha256(data).hexdigest()


def test_multi_member_gzip_is_accepted() -> None:
    tar = tar_bytes([reg("main.tf", MAIN_TF), reg("b.tf", b"# b" * 500)])
    data = gzip.compress(tar[:700]) + gzip.compress(tar[700:])
    assert set(read(data).files) == {"main.tf", "b.tf"}


def test_macos_appledouble_and_hidden_files_are_not_kept() -> None:
    data = targz(
        [
            reg("./._main.tf", b"\x00\x05\x16\x07binary"),
            reg("./main.tf", MAIN_TF),
            reg("./.terraform/modules/x/main.tf", b"# cached"),
        ]
    )
    assert set(read(data).files) == {"main.tf"}


# --- unsafe members ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["../x.tf", "./../x.tf", "modules/../../x.tf", "a/.."])
def test_path_traversal_is_rejected(name: str) -> None:
    message = error_of(targz([reg("main.tf", MAIN_TF), reg(name, b"x")]))
    assert repr(name) in message
    assert "'..'" in message


def test_absolute_path_is_rejected() -> None:
    message = error_of(targz([reg("main.tf", MAIN_TF), reg("/etc/evil.tf", b"x")]))
    assert "'/etc/evil.tf'" in message
    assert "absolute path" in message


def test_backslash_path_is_rejected() -> None:
    message = error_of(targz([reg("main.tf", MAIN_TF), reg("..\\evil.tf", b"x")]))
    assert "backslash" in message


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        (special("link.tf", tarfile.SYMTYPE, "/etc/passwd"), "symbolic link"),
        (special("hard.tf", tarfile.LNKTYPE, "/etc/passwd"), "hard link"),
        (special("tty", tarfile.CHRTYPE), "device"),
        (special("disk", tarfile.BLKTYPE), "device"),
        (special("pipe", tarfile.FIFOTYPE), "FIFO"),
    ],
)
def test_links_devices_and_fifos_are_rejected(
    entry: tuple[tarfile.TarInfo, bytes], expected: str
) -> None:
    message = error_of(targz([reg("main.tf", MAIN_TF), entry]))
    assert expected in message
    assert repr(entry[0].name) in message


def test_duplicate_file_is_rejected() -> None:
    message = error_of(targz([reg("main.tf", MAIN_TF), reg("./main.tf", b"# other")]))
    assert "'main.tf' more than once" in message


# --- broken or non-archives --------------------------------------------------------------------


def test_not_gzip() -> None:
    assert error_of(b"variable x {}\n" * 10) == "archive is not gzip-compressed"
    assert "zip file" in error_of(b"PK\x03\x04" + bytes(100))
    assert "plain tar" in error_of(tar_bytes([reg("main.tf", MAIN_TF)]))


def test_empty_stream() -> None:
    assert error_of(b"") == "archive is empty"


def test_gzip_but_not_tar() -> None:
    message = error_of(gzip.compress(b"just some text, not a tar archive\n" * 100))
    assert "gzip-compressed but is not a tar archive" in message


@pytest.mark.parametrize("cut", [0.5, 0.9])
def test_truncated_gzip(cut: float) -> None:
    data = targz([reg("main.tf", MAIN_TF), reg("big.tf", bytes(range(256)) * 200)])
    message = error_of(data[: int(len(data) * cut)])
    assert "truncated" in message


def test_truncated_gzip_trailer_is_detected() -> None:
    # Only the CRC/length trailer is missing: tarfile's own "r|gz" would accept this.
    data = targz([reg("main.tf", MAIN_TF)])
    assert "truncated" in error_of(data[:-4])


def test_corrupt_crc_is_detected() -> None:
    data = bytearray(targz([reg("main.tf", MAIN_TF)]))
    data[-6] ^= 0xFF
    assert "corrupt" in error_of(bytes(data))


def test_invalid_tar_header_after_first_member_is_not_silently_ignored() -> None:
    tar = bytearray(tar_bytes([reg("main.tf", MAIN_TF), reg("second.tf", b"# 2")]))
    second = tar.index(b"second.tf") - 0  # header of the second member starts with its name
    tar[second : second + 100] = b"\xff" * 100
    message = error_of(gzip.compress(bytes(tar)))
    assert "corrupt" in message
    assert "'main.tf'" in message


def test_trailing_garbage_after_gzip_is_rejected() -> None:
    data = targz([reg("main.tf", MAIN_TF)]) + b"garbage"
    assert "after the end of the gzip stream" in error_of(data)


# --- limits ------------------------------------------------------------------------------------


def _assert_fast_and_small(data: bytes, **limits: int) -> str:
    tracemalloc.start()
    started = time.perf_counter()
    try:
        message = error_of(data, **limits)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert time.perf_counter() - started < 5
    assert peak < 60 * MB, f"peak memory {peak / MB:.1f} MB"
    return message


@pytest.fixture(scope="module")
def zero_bomb() -> bytes:
    """A tar.gz holding one honest 300 MB file of zeros (about 300 KB compressed)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=1) as tar:
        tar.addfile(reg("main.tf", MAIN_TF)[0], io.BytesIO(MAIN_TF))
        info = tarfile.TarInfo("zeros.bin")
        info.size = 300 * MB
        tar.addfile(info, io.BufferedReader(Zeros(), 1 * MB))
    return buf.getvalue()


def _gzip_stream(head: bytes, zero_megabytes: int) -> bytes:
    comp = zlib.compressobj(1, zlib.DEFLATED, 31)
    parts = [comp.compress(head)]
    zero = bytes(MB)
    parts += [comp.compress(zero) for _ in range(zero_megabytes)]
    parts.append(comp.flush())
    return b"".join(parts)


def test_gzip_bomb_file_is_stopped_early(zero_bomb: bytes) -> None:
    assert len(zero_bomb) < 2 * MB
    message = _assert_fast_and_small(zero_bomb)
    assert "'zeros.bin'" in message
    assert "maximum allowed size" in message


def test_gzip_bomb_after_tar_end_is_stopped() -> None:
    # A valid small tar followed by 300 MB of zeros inside the same gzip stream: the header
    # sizes are honest, only counting decompressed bytes catches it.
    data = _gzip_stream(tar_bytes([reg("main.tf", MAIN_TF)]), 300)
    assert "maximum allowed size" in _assert_fast_and_small(data)


def test_huge_pax_header_is_stopped() -> None:
    # tarfile reads a pax header's data into memory in one go; the decompressed-bytes cap
    # must stop it long before 300 MB are buffered.
    info = tarfile.TarInfo("././@PaxHeader")
    info.type = tarfile.XHDTYPE
    info.size = 300 * MB
    data = _gzip_stream(info.tobuf(tarfile.USTAR_FORMAT), 300)
    assert "maximum allowed size" in _assert_fast_and_small(data)


def test_unpacked_size_is_the_sum_of_members() -> None:
    entries = [reg("main.tf", MAIN_TF)] + [reg(f"f{i}.bin", bytes(300_000)) for i in range(5)]
    data = targz(entries)
    message = error_of(data, max_unpacked=1_000_000)
    assert "'f3.bin'" in message
    assert read(data, max_unpacked=1_600_000).unpacked_size == len(MAIN_TF) + 1_500_000


def test_max_compressed() -> None:
    data = targz([reg("main.tf", MAIN_TF), reg("noise.bin", bytes(range(256)) * 100)])
    assert "maximum allowed size" in error_of(data, max_compressed=len(data) - 1)
    assert read(data, max_compressed=len(data)).compressed_size == len(data)


def test_max_compressed_counts_trailing_bytes() -> None:
    data = targz([reg("main.tf", MAIN_TF)]) + bytes(10_000)
    assert "maximum allowed size" in error_of(data, max_compressed=len(data) - 5_000)


def test_too_many_members() -> None:
    entries = [reg("main.tf", MAIN_TF)] + [reg(f"f{i}.txt", b"x") for i in range(20)]
    message = error_of(targz(entries), max_members=10)
    assert "more than 10 members" in message
    assert read(targz(entries), max_members=21).file_count == 21


# --- layout ------------------------------------------------------------------------------------


def test_module_in_a_single_subfolder_names_the_folder() -> None:
    data = targz(
        [
            dirent("terraform-aws-thing"),
            reg("terraform-aws-thing/main.tf", MAIN_TF),
            reg("terraform-aws-thing/modules/a/main.tf", b""),
            reg("terraform-aws-thing/README.md", b"hi"),
        ]
    )
    message = error_of(data)
    assert "at the root of the archive, not in a subdirectory" in message
    assert "'terraform-aws-thing/'" in message


def test_module_files_in_several_subfolders() -> None:
    message = error_of(targz([reg("a/main.tf", MAIN_TF), reg("b/main.tf", MAIN_TF)]))
    assert "not in a subdirectory" in message
    assert "'a/'" not in message


def test_archive_without_terraform_files() -> None:
    message = error_of(targz([reg("README.md", b"hello")]))
    assert "no Terraform files" in message


# --- links that stay inside the module --------------------------------------------------------

LOCALS_TF = b'locals { region = "eu-west-1" }\n'


def test_a_link_inside_the_module_is_followed_for_parsing() -> None:
    """A real module's test fixture: ``unit-test-fixture/locals.tf -> ../locals.tf``."""
    contents = read(
        targz(
            [
                reg("main.tf", MAIN_TF),
                special("unit-test-fixture/locals.tf", tarfile.SYMTYPE, "../locals.tf"),
                reg("locals.tf", LOCALS_TF),  # the target may come after the link
                special("examples/basic", tarfile.SYMTYPE, "../modules/basic"),
                reg("modules/basic/main.tf", b'variable "x" {}\n'),
                special("chain.tf", tarfile.SYMTYPE, "unit-test-fixture/locals.tf"),
                special("hard.tf", tarfile.LNKTYPE, "main.tf"),
            ]
        )
    )
    assert contents.files["unit-test-fixture/locals.tf"] == LOCALS_TF
    assert contents.files["examples/basic/main.tf"] == b'variable "x" {}\n'
    assert contents.files["chain.tf"] == LOCALS_TF
    assert contents.files["hard.tf"] == MAIN_TF


@pytest.mark.parametrize(
    ("entries", "expected"),
    [
        ([special("up.tf", tarfile.SYMTYPE, "../outside.tf")], "leaves the module"),
        ([special("a/b/c.tf", tarfile.SYMTYPE, "../../../etc/x.tf")], "leaves the module"),
        (  # each hop stays inside, the second one climbs out through the first
            [special("up", tarfile.SYMTYPE, ".."), special("via.tf", tarfile.SYMTYPE, "up/x.tf")],
            "leaves the module",
        ),
        ([special("abs.tf", tarfile.SYMTYPE, "/etc/passwd")], "relative"),
        (
            [special("a.tf", tarfile.SYMTYPE, "b.tf"), special("b.tf", tarfile.SYMTYPE, "a.tf")],
            "loops",
        ),
        ([special("hard.tf", tarfile.LNKTYPE, "later.tf"), reg("later.tf", b"")], "hard link"),
        ([special("hard.tf", tarfile.LNKTYPE, "../main.tf")], "hard link"),
        (  # the classic: a link to a directory, then a file written through it
            [special("d", tarfile.SYMTYPE, "modules"), reg("d/evil.tf", b"")],
            "write through the link",
        ),
        ([special("gone.tf", tarfile.SYMTYPE, "missing.tf")], "not a Terraform file"),
    ],
)
def test_links_that_leave_the_module_or_loop_are_refused(
    entries: list[tuple[tarfile.TarInfo, bytes]], expected: str
) -> None:
    message = error_of(targz([reg("main.tf", MAIN_TF), dirent("modules/"), *entries]))
    assert expected in message


def test_links_do_not_multiply_the_bytes_parsed_beyond_the_cap() -> None:
    big = b"# " + b"x" * 40_000 + b"\n"
    links = [special(f"copy{i}.tf", tarfile.SYMTYPE, "big.tf") for i in range(30)]
    archive = targz([reg("main.tf", MAIN_TF), reg("big.tf", big), *links])
    message = error_of(archive, max_unpacked=500_000)
    assert "following the link" in message
