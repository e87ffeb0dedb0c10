"""The provenance signing keys through the real local stack: served to anyone, as PEM P-256
keys whose ids name KMS keys the stack made (``provision`` creates the local one)."""

from __future__ import annotations

import pytest
import requests
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import load_pem_public_key

from tests.e2e.conftest import Stack

pytestmark = pytest.mark.e2e


def test_signing_keys_are_served_without_a_token(stack: Stack) -> None:
    reply = requests.get(f"{stack.url}/api/registry/v1/signing-keys", timeout=10)
    assert reply.status_code == 200, reply.text
    assert reply.headers["Content-Type"] == "application/json"
    (key,) = reply.json()["keys"]
    assert key["current"] is True and key["scheme"] == "ecdsa-sha2-nistp256"
    public = load_pem_public_key(key["pem"].encode())
    assert isinstance(public, ec.EllipticCurvePublicKey)
    assert public.curve.name == "secp256r1"
    # Served again, the same key (read once per instance, never changing).
    assert requests.get(f"{stack.url}/api/registry/v1/signing-keys", timeout=10).json() == {
        "keys": [key]
    }
