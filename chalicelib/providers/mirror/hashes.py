"""The two hashes terraform records for a provider package.

* ``zh:`` the SHA-256 of the zip archive itself, in hex (what SHA256SUMS lists);
* ``h1:`` Go's ``dirhash.Hash1`` of the archive's contents, as terraform's
  ``PackageHashV1`` computes it with ``dirhash.HashZip``: one ``"<sha256 hex>  <name>\\n"``
  line per zip entry, sorted by name, then the base64 of the SHA-256 of those lines.
"""

from __future__ import annotations

import base64
import hashlib
import zipfile
from typing import IO


class NotAZip(ValueError):
    """The archive is not a zip terraform could install."""


def zh(sha256_hex: str) -> str:
    return f"zh:{sha256_hex.lower()}"


def h1(archive: IO[bytes]) -> str:
    """``h1:`` of the zip in ``archive`` (a seekable file); ``NotAZip`` when it is none, or
    when an entry's name would break the line format (as dirhash refuses it)."""
    try:
        with zipfile.ZipFile(archive) as zipped:
            lines = []
            for name in sorted(info.filename for info in zipped.infolist()):
                if "\n" in name:
                    raise NotAZip(f"an entry's name holds a newline: {name!r}")
                digest = hashlib.sha256()
                with zipped.open(name) as entry:
                    for chunk in iter(lambda: entry.read(1 << 20), b""):
                        digest.update(chunk)
                lines.append(f"{digest.hexdigest()}  {name}\n")
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, NotImplementedError) as exc:
        raise NotAZip(f"not a zip archive: {exc}") from None
    summary = hashlib.sha256("".join(lines).encode()).digest()
    return "h1:" + base64.b64encode(summary).decode()
