"""What a provider publisher makes, for the tests: a throwaway signing key (PGPy, RSA), a
provider zip, SHA256SUMS as ``sha256sum`` writes it and its binary detached signature, as
``gpg --detach-sign`` writes it."""

from __future__ import annotations

import base64
import hashlib
import io
import stat
import warnings
import zipfile
from dataclasses import dataclass
from typing import Any

EXECUTABLE = "#!/bin/sh\necho 'a provider that only terraform init installs'\nexit 1\n"


@dataclass
class SigningKey:
    private: Any  # pgpy.PGPKey
    armor: str  # the public key, ASCII-armored
    key_id: str  # 16 hex digits, upper case

    def sign(self, data: bytes) -> bytes:
        """A binary detached signature of ``data``."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return bytes(self.private.sign(data))


def new_signing_key(name: str = "Provider Signer") -> SigningKey:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from pgpy import PGPUID, PGPKey
        from pgpy.constants import HashAlgorithm, KeyFlags, PubKeyAlgorithm

        key = PGPKey.new(PubKeyAlgorithm.RSAEncryptOrSign, 2048)
        key.add_uid(
            PGPUID.new(name, email="sign@example.test"),
            usage={KeyFlags.Sign},
            hashes=[HashAlgorithm.SHA256],
        )
        return SigningKey(key, str(key.pubkey), str(key.fingerprint.keyid).upper())


def provider_zip(
    name: str, version: str, extra: dict[str, bytes] | None = None, *, symlink: str = ""
) -> bytes:
    """A provider archive: ``terraform-provider-<name>_v<version>_x5`` at its root
    (executable), ``extra`` entries as given, and a symbolic link named ``symlink``."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        info = zipfile.ZipInfo(f"terraform-provider-{name}_v{version}_x5")
        info.external_attr = (stat.S_IFREG | 0o755) << 16
        info.create_system = 3
        archive.writestr(info, EXECUTABLE)
        for path, data in (extra or {}).items():
            archive.writestr(path, data)
        if symlink:
            link = zipfile.ZipInfo(symlink)
            link.create_system = 3
            link.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(link, "/etc/passwd")
    return out.getvalue()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def shasums(files: dict[str, bytes]) -> bytes:
    return "".join(f"{sha256(data)}  {name}\n" for name, data in sorted(files.items())).encode()


def expected_h1(archive: bytes) -> str:
    """terraform's h1: (Go's dirhash.HashZip), written out independently of the code."""
    with zipfile.ZipFile(io.BytesIO(archive)) as zipped:
        names = sorted(zipped.namelist())
        lines = "".join(f"{hashlib.sha256(zipped.read(n)).hexdigest()}  {n}\n" for n in names)
    return "h1:" + base64.b64encode(hashlib.sha256(lines.encode()).digest()).decode()
