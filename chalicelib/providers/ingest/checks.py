"""What is checked of a provider version's files, on bytes alone (no AWS here).

* ``verify_signature``: SHA256SUMS.sig is a detached *binary* OpenPGP signature (what
  ``gpg --detach-sign`` writes and terraform reads) of SHA256SUMS, made by the version's key
  or one of its subkeys (PGPy).
* ``parse_shasums``: SHA256SUMS as ``sha256sum`` writes it, one ``<64 hex>  <filename>``
  line per archive.
* ``check_archive``: a platform's zip is a zip, holds the provider's executable
  (``terraform-provider-<name>*``) at its root, and no unsafe entry (absolute path, ``..``,
  a backslash, a symbolic link or other special file); entries, their unpacked bytes and
  their CRCs are checked while reading, so a zip bomb stops at the cap.

Every refusal is the pipeline's ``Refused`` with a reason for the publisher; any other
exception a parser raises on hostile bytes is turned into one by the caller
(``pipeline.unforeseen``). The archive's own size limit is a setting
(``REGISTRY_PROVIDER_MAX_ARCHIVE_BYTES``), applied as it is read.
"""

from __future__ import annotations

import re
import stat
import warnings
import zipfile
import zlib
from typing import IO, Any

from chalicelib.artifacts.pipeline import Refused

# SHA256SUMS of a provider lists one line per platform archive (and maybe a manifest).
MAX_SHASUMS_BYTES = 1024 * 1024
MAX_SIGNATURE_BYTES = 64 * 1024
# A provider archive: terraform-provider-aws is about 150 MB zipped and 600 MB unpacked.
MAX_UNPACKED_BYTES = 2 * 1024 * 1024 * 1024
MAX_ENTRIES = 1000
_CHUNK = 1024 * 1024
_SHASUM_LINE = re.compile(r"^([0-9a-fA-F]{64}) [ *]?(\S(?:.*\S)?)\Z")


def _pgpy() -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import pgpy
    return pgpy


def verify_signature(armor: str, key_id: str, shasums: bytes, signature: bytes) -> None:
    """Refused unless ``signature`` is a binary detached signature of ``shasums`` by the key
    ``armor`` (whose id is ``key_id``) or one of its subkeys."""
    if signature.lstrip().startswith(b"-----BEGIN"):
        raise Refused(
            "SHA256SUMS.sig is ASCII-armored; terraform reads a binary detached signature "
            "(gpg --detach-sign, without --armor)"
        )
    pgpy = _pgpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        key, _ = pgpy.PGPKey.from_blob(armor)
        try:
            sig = pgpy.PGPSignature.from_blob(signature)
        except Exception as exc:  # noqa: BLE001 - PGPy raises many kinds on garbage
            raise Refused(f"SHA256SUMS.sig is not an OpenPGP signature ({exc})") from None
        signers = {str(key.fingerprint.keyid).upper()}
        signers |= {str(k).upper() for k in key.subkeys}
        signer = str(sig.signer or "").upper()
        if signer not in signers:
            raise Refused(
                f"SHA256SUMS.sig was made by key {signer or 'unknown'}, not by the "
                f"version's key {key_id.upper()}"
            )
        if not key.verify(shasums, sig):
            raise Refused(
                f"SHA256SUMS.sig does not verify against key {key_id.upper()}: SHA256SUMS "
                "is not the file that was signed"
            )


def parse_shasums(shasums: bytes) -> dict[str, str]:
    """filename -> lower-case sha256; Refused for anything but ``sha256sum`` lines."""
    try:
        text = shasums.decode("utf-8")
    except UnicodeDecodeError:
        raise Refused("SHA256SUMS is not UTF-8 text") from None
    found: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        match = _SHASUM_LINE.match(line.rstrip("\r"))
        if match is None:
            raise Refused(
                f"SHA256SUMS line {number} is not '<sha256 in hex>  <filename>' "
                "(as sha256sum writes it)"
            )
        found[match.group(2)] = match.group(1).lower()
    if not found:
        raise Refused("SHA256SUMS lists no file")
    return found


def _unsafe(info: zipfile.ZipInfo) -> str | None:
    name = info.filename
    if name.startswith("/") or re.match(r"^[A-Za-z]:", name):
        return "an absolute path"
    if "\\" in name:
        return "a backslash in its path"
    if ".." in name.split("/"):
        return "a '..' in its path"
    mode = info.external_attr >> 16
    if (
        info.create_system == 3
        and mode
        and stat.S_IFMT(mode) not in (0, stat.S_IFREG, stat.S_IFDIR)
    ):
        return "a symbolic link" if stat.S_ISLNK(mode) else "a special file"
    return None


def check_archive(archive: IO[bytes], provider_name: str) -> None:
    """Refused unless ``archive`` (seekable) is a sound zip holding the provider binary."""
    try:
        zipped = zipfile.ZipFile(archive)
    except zipfile.BadZipFile:
        raise Refused("the archive is not a zip file") from None
    with zipped:
        entries = zipped.infolist()
        if len(entries) > MAX_ENTRIES:
            raise Refused(f"the archive holds {len(entries)} entries, over {MAX_ENTRIES}")
        prefix = f"terraform-provider-{provider_name}"
        binary = False
        unpacked = 0
        for info in entries:
            problem = _unsafe(info)
            if problem:
                raise Refused(f"the archive's entry {info.filename[:200]!r} has {problem}")
            if info.is_dir():
                continue
            binary = binary or ("/" not in info.filename and info.filename.startswith(prefix))
            unpacked = _read_entry(zipped, info, unpacked)
        if not binary:
            raise Refused(f"the archive has no {prefix}* executable at its root")


def _read_entry(zipped: zipfile.ZipFile, info: zipfile.ZipInfo, unpacked: int) -> int:
    """Read one entry (its CRC is checked at its end), counting real bytes: the sizes in the
    headers are the archive's word, not a bound. Returns the bytes unpacked so far."""
    try:
        with zipped.open(info) as member:
            while chunk := member.read(_CHUNK):
                unpacked += len(chunk)
                if unpacked > MAX_UNPACKED_BYTES:
                    raise Refused(f"the archive unpacks to over {MAX_UNPACKED_BYTES} bytes")
    except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
        name = info.filename[:200]
        raise Refused(f"the archive's entry {name!r} is corrupt: {exc}") from None
    return unpacked
