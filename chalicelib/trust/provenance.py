"""Signed provenance: an in-toto Statement v1 with the SLSA provenance v1 predicate, in a DSSE
envelope signed by an asymmetric KMS key.

* The **statement** (``statement``) names its subjects by SHA-256 (a module version: the
  archive ``terraform init`` downloads; a provider version: its SHA256SUMS, which names each
  platform zip's SHA-256), says how they came (``buildDefinition``: an upload by which
  principal, or a VCS repository, tag and commit) and who makes the claim
  (``runDetails.builder.id``: this registry's address).
* The **envelope** (``sign``) is DSSE: the signature is over ``PAE(payloadType, payload)``
  (``pae``), never over the JSON itself, so no canonical form is needed; its ``keyid`` is the
  KMS key id that ``GET /api/registry/v1/signing-keys`` lists with its PEM public key.
* The **key** is KMS ``ECC_NIST_P256`` used with ``ECDSA_SHA_256`` (``Signer``): its private
  half never leaves KMS. KMS signs the PAE itself (``MessageType=RAW``, which KMS caps at
  4096 bytes: ``MAX_SIGNED_BYTES``; every field of a statement is bounded and a provider's
  statement names its SHA256SUMS, not each zip, so one stays far below). ``DIGEST`` would
  lift the cap, but moto signs a digest as if it were the message, so the path tests run
  would not be the one AWS runs. Signatures are DER, base64 in the envelope, verified with
  ``cryptography`` (``verify``).
* **Rotation**: ``REGISTRY_SIGNING_KEY`` signs; ``REGISTRY_PREVIOUS_SIGNING_KEYS`` stay listed
  (``public_keys``) so envelopes signed before a rotation still verify. A key's public half
  never changes: each is read from KMS once per instance (``_public_keys``).
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from chalicelib.core.data.aws import client
from chalicelib.core.settings import get_settings

MEDIA_TYPE = "application/vnd.dsse.envelope.v1+json"
PAYLOAD_TYPE = "application/vnd.in-toto+json"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://slsa.dev/provenance/v1"
KEY_SPEC = "ECC_NIST_P256"
ALGORITHM = "ECDSA_SHA_256"
# How the signing-keys document and verifiers name the scheme (securesystemslib's name).
SCHEME = "ecdsa-sha2-nistp256"
# KMS signs at most this many bytes of a RAW message.
MAX_SIGNED_BYTES = 4096
# buildType: how to read externalParameters (documented in docs/provenance.md).
BUILD_TYPES = {
    "module": "urn:tfe-module-registry:build-type:module-version:v1",
    "provider": "urn:tfe-module-registry:build-type:provider-version:v1",
}


class InvalidEnvelope(Exception):
    """An envelope that does not verify: malformed, unknown key, or a bad signature."""


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE's pre-authentication encoding: what is signed, binding the payload's type."""
    kind = payload_type.encode()
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload)


# ----- the statement ------------------------------------------------------------------------


@dataclass(frozen=True)
class Artifact:
    """A subject: a name and its hex SHA-256."""

    name: str
    sha256: str


@dataclass(frozen=True)
class Origin:
    """How a version came to the registry: uploaded by ``principal`` (the version's
    ``created_by``: {"type", "id"}), or fetched from a VCS ``repository`` at ``tag`` and
    ``commit``. ``source`` is the version's (``tfe-api``, or the VCS service provider)."""

    source: str
    principal: dict[str, Any] | None = None
    repository: str | None = None
    tag: str | None = None
    commit: str | None = None

    @property
    def from_vcs(self) -> bool:
        return bool(self.repository)

    def external_parameters(self) -> dict[str, Any]:
        if self.from_vcs:
            vcs = {"repository": self.repository, "tag": self.tag, "commit": self.commit}
            return {"source": "vcs", "service-provider": self.source, **_present(vcs)}
        return {"source": "upload", "uploaded-by": self.principal}

    def resolved_dependencies(self) -> list[dict[str, Any]]:
        """The repository's commit the archive was made from (VCS versions only)."""
        if not (self.from_vcs and self.commit):
            return []
        ref = f"@refs/tags/{self.tag}" if self.tag else ""
        return [{"uri": f"git+{self.repository}{ref}", "digest": {"gitCommit": self.commit}}]


def _present(values: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in values.items() if value is not None}


@dataclass(frozen=True)
class Build:
    """One version's provenance: what (``subjects``), of which kind (``module`` or
    ``provider``), which version (``address``, ``version``), how it came (``origin``), its
    id and times, and anything else the kind records (``internal``)."""

    kind: str
    subjects: Sequence[Artifact]
    address: str
    version: str
    origin: Origin
    invocation_id: str
    started_on: datetime
    finished_on: datetime
    internal: dict[str, Any] = field(default_factory=dict)


def builder_id() -> str:
    """This registry, as the builder that makes the claim: its public address, else a URN
    that says none is configured (set ``REGISTRY_PUBLIC_URL``)."""
    return get_settings().public_base_url or "urn:tfe-module-registry:no-public-address"


def _time(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def statement(build: Build) -> dict[str, Any]:
    """The in-toto Statement v1 of ``build``, with the SLSA provenance v1 predicate."""
    settings = get_settings()
    return {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": s.name, "digest": {"sha256": s.sha256}} for s in build.subjects],
        "predicateType": PREDICATE_TYPE,
        "predicate": {
            "buildDefinition": {
                "buildType": BUILD_TYPES[build.kind],
                "externalParameters": {
                    build.kind: build.address,
                    "version": build.version,
                    **build.origin.external_parameters(),
                },
                "internalParameters": build.internal,
                "resolvedDependencies": build.origin.resolved_dependencies(),
            },
            "runDetails": {
                "builder": {
                    "id": builder_id(),
                    "version": {"tfe-module-registry": settings.app_version},
                },
                "metadata": {
                    "invocationId": build.invocation_id,
                    "startedOn": _time(build.started_on),
                    "finishedOn": _time(build.finished_on),
                },
            },
        },
    }


# ----- signing ------------------------------------------------------------------------------


class Signer(Protocol):
    """What signs an envelope: ``sign(message)`` is an ECDSA P-256/SHA-256 signature (DER)
    over ``message``; ``key_id`` names the key in the envelope."""

    def key_id(self) -> str: ...

    def sign(self, message: bytes) -> bytes: ...


def bare_key_id(key: str) -> str:
    """A KMS key ARN's id (``arn:...:key/<id>`` -> ``<id>``); an id stays as it is."""
    return key.rsplit("key/", 1)[-1] if ":key/" in key else key


@dataclass
class KmsSigner:
    """The configured KMS key (``REGISTRY_SIGNING_KEY``: an id, ARN or alias)."""

    key: str = field(default_factory=lambda: get_settings().signing_key)
    _resolved: str | None = None

    def key_id(self) -> str:
        if self._resolved is None:
            self._resolved = public_key(self.key).key_id
        return self._resolved

    def sign(self, message: bytes) -> bytes:
        if len(message) > MAX_SIGNED_BYTES:
            raise ValueError(
                f"the statement is {len(message)} bytes to sign, over KMS's {MAX_SIGNED_BYTES}"
            )
        answer = client("kms").sign(
            KeyId=self.key, Message=message, MessageType="RAW", SigningAlgorithm=ALGORITHM
        )
        self._resolved = bare_key_id(answer["KeyId"])
        signature: bytes = answer["Signature"]
        return signature


def sign(body: dict[str, Any], signer: Signer) -> dict[str, Any]:
    """The DSSE envelope of ``body`` (a statement), signed by ``signer``."""
    payload = json.dumps(body, separators=(",", ":"), sort_keys=True).encode()
    signature = signer.sign(pae(PAYLOAD_TYPE, payload))
    return {
        "payloadType": PAYLOAD_TYPE,
        "payload": base64.b64encode(payload).decode("ascii"),
        "signatures": [
            {"keyid": signer.key_id(), "sig": base64.b64encode(signature).decode("ascii")}
        ],
    }


def encode(envelope: dict[str, Any]) -> bytes:
    """The envelope as stored and served."""
    return json.dumps(envelope, indent=2).encode()


# ----- public keys and verification ---------------------------------------------------------


@dataclass(frozen=True)
class PublicKey:
    key_id: str
    pem: str


_public_keys: dict[str, PublicKey] = {}
_lock = threading.Lock()


def public_key(key: str) -> PublicKey:
    """The public half of a KMS key (id, ARN or alias), read once per instance."""
    with _lock:
        known = _public_keys.get(key)
    if known is not None:
        return known
    from cryptography.hazmat.primitives.serialization import (
        Encoding,
        PublicFormat,
        load_der_public_key,
    )

    answer = client("kms").get_public_key(KeyId=key)
    pem = load_der_public_key(answer["PublicKey"]).public_bytes(
        Encoding.PEM, PublicFormat.SubjectPublicKeyInfo
    )
    found = PublicKey(bare_key_id(answer["KeyId"]), pem.decode("ascii"))
    with _lock:
        _public_keys[key] = found
    return found


def forget_public_keys() -> None:
    """Tests: start as a cold instance would."""
    with _lock:
        _public_keys.clear()


def public_keys() -> list[tuple[PublicKey, bool]]:
    """Every key an envelope may name, the signing one first: (key, whether it signs now)."""
    settings = get_settings()
    current = public_key(settings.signing_key)
    listed = {current.key_id: (current, True)}
    for key in settings.previous_signing_keys:
        older = public_key(key)
        listed.setdefault(older.key_id, (older, False))
    return list(listed.values())


def verify(envelope: dict[str, Any], keys: dict[str, str]) -> dict[str, Any]:
    """The statement inside ``envelope`` once one of its signatures verifies with the PEM
    key its ``keyid`` names in ``keys`` (key id -> PEM); ``InvalidEnvelope`` otherwise. What
    a verifier does offline (docs/provenance.md shows the same steps)."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.serialization import load_pem_public_key

    try:
        payload_type = envelope["payloadType"]
        payload = base64.b64decode(envelope["payload"], validate=True)
        signatures = list(envelope["signatures"])
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidEnvelope(f"not a DSSE envelope: {exc}") from None
    if payload_type != PAYLOAD_TYPE:
        raise InvalidEnvelope(f"payloadType is {payload_type!r}, not {PAYLOAD_TYPE!r}")
    signed = pae(payload_type, payload)
    for signature in signatures:
        pem = keys.get(str(signature.get("keyid")))
        if pem is None:
            continue
        key = load_pem_public_key(pem.encode())
        if not isinstance(key, ec.EllipticCurvePublicKey):
            continue
        try:
            key.verify(base64.b64decode(signature["sig"]), signed, ec.ECDSA(hashes.SHA256()))
        except (InvalidSignature, ValueError, KeyError):
            continue
        body: dict[str, Any] = json.loads(payload)
        return body
    raise InvalidEnvelope("no signature verifies with a known key")


# ----- the key itself (local stack and tests) -----------------------------------------------


def ensure_signing_key() -> str:
    """Create the configured signing key alias if it does not exist (local runs and tests;
    the stack creates its key in the template). A key id or ARN is assumed to exist."""
    kms = client("kms")
    name = get_settings().signing_key
    if not name.startswith("alias/"):
        return name
    for page in kms.get_paginator("list_aliases").paginate():
        for alias in page["Aliases"]:
            if alias["AliasName"] == name and alias.get("TargetKeyId"):
                target: str = alias["TargetKeyId"]
                return target
    key_id = create_signing_key()
    kms.create_alias(AliasName=name, TargetKeyId=key_id)
    return key_id


def create_signing_key() -> str:
    """A new signing key (its id): for the local stack, tests and rotation drills."""
    created: str = client("kms").create_key(
        Description="tfe-module-registry provenance signing (DSSE, ECDSA P-256)",
        KeyUsage="SIGN_VERIFY",
        KeySpec=KEY_SPEC,
    )["KeyMetadata"]["KeyId"]
    return created
