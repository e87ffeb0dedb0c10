"""Secrets at rest: envelope encryption with a KMS key.

``seal`` asks KMS for a fresh 256-bit data key (GenerateDataKey), encrypts the value locally
with AES-256-GCM and keeps only the KMS-encrypted copy of the data key beside the ciphertext.
``unseal`` has KMS decrypt the data key (Decrypt) and opens the ciphertext. The ``purpose``
(e.g. ``smtp/password``) is bound twice: as the KMS encryption context and as the AES-GCM
associated data, so a sealed value copied into another field does not open.

Plaintext never leaves this module except as the return value of ``unseal``; nothing here logs.
"""

from __future__ import annotations

import base64
import os
from typing import TYPE_CHECKING, Any

from chalicelib.core.data.aws import client
from chalicelib.core.settings import get_settings

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

Sealed = dict[str, str]
_VERSION = "kms-aes256gcm-1"


def _aesgcm(key: bytes) -> AESGCM:
    # cryptography (about 5 ms and 4.7 MB of the zip) loads with the first secret sealed or
    # opened: most requests of the functions that import this module handle none.
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    return AESGCM(key)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def seal(plaintext: str, *, purpose: str) -> Sealed:
    context = {"purpose": purpose}
    key = client("kms").generate_data_key(
        KeyId=get_settings().kms_key, KeySpec="AES_256", EncryptionContext=context
    )
    nonce = os.urandom(12)
    ciphertext = _aesgcm(key["Plaintext"]).encrypt(nonce, plaintext.encode(), purpose.encode())
    return {
        "v": _VERSION,
        "key": _b64(key["CiphertextBlob"]),
        "nonce": _b64(nonce),
        "data": _b64(ciphertext),
    }


def unseal(sealed: Sealed, *, purpose: str) -> str:
    if sealed.get("v") != _VERSION:
        raise ValueError("unknown sealed-secret format")
    data_key = client("kms").decrypt(
        CiphertextBlob=base64.b64decode(sealed["key"]), EncryptionContext={"purpose": purpose}
    )["Plaintext"]
    plaintext = _aesgcm(data_key).decrypt(
        base64.b64decode(sealed["nonce"]), base64.b64decode(sealed["data"]), purpose.encode()
    )
    return plaintext.decode()


def is_sealed(value: Any) -> bool:
    return isinstance(value, dict) and value.get("v") == _VERSION


def ensure_key() -> str:
    """Create the configured KMS key alias if it does not exist (local runs and tests).

    A key id or ARN is assumed to exist already. Returns the key id behind the alias.
    """
    kms = client("kms")
    name = get_settings().kms_key
    if not name.startswith("alias/"):
        return name
    for page in kms.get_paginator("list_aliases").paginate():
        for alias in page["Aliases"]:
            if alias["AliasName"] == name and alias.get("TargetKeyId"):
                target: str = alias["TargetKeyId"]
                return target
    key_id: str = kms.create_key(
        Description="tfe-module-registry secrets (envelope encryption)",
        KeyUsage="ENCRYPT_DECRYPT",
        KeySpec="SYMMETRIC_DEFAULT",
    )["KeyMetadata"]["KeyId"]
    kms.create_alias(AliasName=name, TargetKeyId=key_id)
    return key_id
