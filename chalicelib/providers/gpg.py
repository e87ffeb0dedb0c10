"""Reading an ASCII-armored OpenPGP public key (PGPy): its 16-hex-digit key id and
whether its algorithm is one terraform can verify a provider's SHA256SUMS with.

TFE accepts RSA and DSA keys; terraform's own verification (golang.org/x/crypto/openpgp)
reads those, and refuses EdDSA and ECDSA primary keys in older releases: such keys are
refused here with a 422 that says so, rather than accepted and failing at install time.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

from chalicelib.core.api.errors import Unprocessable

POINTER = "/data/attributes/ascii-armor"
# An armored RSA-4096 key with a few user ids and signatures is about 3 KB; 64 KB leaves
# room for many signatures and keeps a parse bounded.
MAX_ARMOR_LENGTH = 64 * 1024
ARMOR_HEADER = "-----BEGIN PGP PUBLIC KEY BLOCK-----"


@dataclass(frozen=True)
class ParsedKey:
    key_id: str  # 16 hex digits, upper case
    algorithm: str


def _pgpy() -> Any:
    """PGPy, imported on first use (only key writes pay for it); its import warns about
    ``imghdr`` on Python 3.11, which is not ours to fix."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import pgpy
        from pgpy.constants import PubKeyAlgorithm
    return pgpy, PubKeyAlgorithm


def parse_public_key(armor: str) -> ParsedKey:
    """The key id and algorithm of an armored public key; a 422 pointing at
    ``ascii-armor`` for anything else (garbage, a private key, an unsupported algorithm)."""
    if len(armor) > MAX_ARMOR_LENGTH:
        raise Unprocessable(f"ascii-armor is longer than {MAX_ARMOR_LENGTH} bytes", pointer=POINTER)
    if ARMOR_HEADER not in armor:
        raise Unprocessable(
            f"ascii-armor must be an ASCII-armored public key ({ARMOR_HEADER})", pointer=POINTER
        )
    pgpy, algorithms = _pgpy()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            key, _ = pgpy.PGPKey.from_blob(armor)
    except Exception as exc:  # noqa: BLE001 - PGPy raises many kinds for malformed input
        raise Unprocessable(
            f"ascii-armor is not a readable OpenPGP key: {exc}", pointer=POINTER
        ) from None
    if not key.is_public:
        raise Unprocessable("ascii-armor must be a public key, not a private one", pointer=POINTER)
    accepted = {
        algorithms.RSAEncryptOrSign: "RSA",
        algorithms.RSASign: "RSA",
        algorithms.DSA: "DSA",
    }
    algorithm = accepted.get(key.key_algorithm)
    if algorithm is None:
        name = getattr(key.key_algorithm, "name", str(key.key_algorithm))
        raise Unprocessable(
            f"ascii-armor: {name} keys are not accepted; use an RSA or DSA signing key "
            "(terraform verifies provider signatures with those)",
            pointer=POINTER,
        )
    return ParsedKey(key_id=str(key.fingerprint.keyid).upper(), algorithm=algorithm)
