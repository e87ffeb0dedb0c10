"""Provenance: the in-toto statement, its DSSE envelope signed with the KMS key (moto), and
verification with ``cryptography`` against the listed public keys."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime

import pytest

from chalicelib.trust import provenance
from chalicelib.trust.provenance import Artifact, Build, InvalidEnvelope, KmsSigner, Origin

WHEN = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
SHA = "cd" * 32


def _build(origin: Origin) -> Build:
    return Build(
        kind="module",
        subjects=[Artifact("registry.test/acme/vpc/aws@1.0.0", SHA)],
        address="registry.test/acme/vpc/aws",
        version="1.0.0",
        origin=origin,
        invocation_id="modver-1",
        started_on=WHEN,
        finished_on=WHEN,
    )


def _keys() -> dict[str, str]:
    return {key.key_id: key.pem for key, _ in provenance.public_keys()}


def test_pae_is_dsse_v1() -> None:
    assert provenance.pae("t/x", b"hello") == b"DSSEv1 3 t/x 5 hello"


def test_statement_of_an_upload_names_the_archive_and_its_uploader(aws: None) -> None:
    body = provenance.statement(_build(Origin("tfe-api", principal={"type": "user", "id": "u1"})))
    assert body["_type"] == "https://in-toto.io/Statement/v1"
    assert body["predicateType"] == "https://slsa.dev/provenance/v1"
    assert body["subject"] == [
        {"name": "registry.test/acme/vpc/aws@1.0.0", "digest": {"sha256": SHA}}
    ]
    definition = body["predicate"]["buildDefinition"]
    assert definition["externalParameters"] == {
        "module": "registry.test/acme/vpc/aws",
        "version": "1.0.0",
        "source": "upload",
        "uploaded-by": {"type": "user", "id": "u1"},
    }
    assert definition["resolvedDependencies"] == []
    run = body["predicate"]["runDetails"]
    assert run["builder"]["id"] == "http://registry.test"
    assert run["metadata"]["startedOn"] == "2026-11-28T12:00:00Z"


def test_statement_of_a_vcs_version_names_repository_tag_and_commit(aws: None) -> None:
    origin = Origin(
        "github", repository="https://github.com/acme/vpc", tag="v1.0.0", commit="f" * 40
    )
    definition = provenance.statement(_build(origin))["predicate"]["buildDefinition"]
    assert definition["externalParameters"]["source"] == "vcs"
    assert definition["externalParameters"]["commit"] == "f" * 40
    assert definition["resolvedDependencies"] == [
        {
            "uri": "git+https://github.com/acme/vpc@refs/tags/v1.0.0",
            "digest": {"gitCommit": "f" * 40},
        }
    ]


def test_envelope_signed_by_kms_verifies_and_a_changed_payload_does_not(aws: None) -> None:
    body = provenance.statement(_build(Origin("tfe-api", principal={"type": "user", "id": "u"})))
    envelope = provenance.sign(body, KmsSigner())
    keys = _keys()
    assert envelope["signatures"][0]["keyid"] in keys
    assert provenance.verify(envelope, keys) == body

    changed = json.loads(base64.b64decode(envelope["payload"]))
    changed["subject"][0]["digest"]["sha256"] = "00" * 32
    forged = {**envelope, "payload": base64.b64encode(json.dumps(changed).encode()).decode()}
    with pytest.raises(InvalidEnvelope):
        provenance.verify(forged, keys)
    # The signature binds the payload type too (PAE).
    with pytest.raises(InvalidEnvelope):
        provenance.verify({**envelope, "payloadType": "application/json"}, keys)
    # An unknown key id verifies nothing.
    with pytest.raises(InvalidEnvelope):
        provenance.verify(envelope, {"other": next(iter(keys.values()))})


def test_rotation_keeps_old_envelopes_verifiable(
    aws: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = provenance.sign({"n": 1}, KmsSigner())
    old_key = old["signatures"][0]["keyid"]
    new_key = provenance.create_signing_key()
    monkeypatch.setenv("REGISTRY_SIGNING_KEY", new_key)
    monkeypatch.setenv("REGISTRY_PREVIOUS_SIGNING_KEYS", f"alias/registry-dev-signing,{old_key}")
    provenance.get_settings.cache_clear()
    listed = provenance.public_keys()
    assert [(key.key_id, current) for key, current in listed] == [(new_key, True), (old_key, False)]
    new = provenance.sign({"n": 2}, KmsSigner())
    assert new["signatures"][0]["keyid"] == new_key
    keys = _keys()
    assert provenance.verify(old, keys) == {"n": 1}
    assert provenance.verify(new, keys) == {"n": 2}
    provenance.get_settings.cache_clear()


def test_a_statement_over_kms_limit_is_refused_before_kms(aws: None) -> None:
    with pytest.raises(ValueError, match="over KMS's 4096"):
        provenance.sign({"padding": "x" * 5000}, KmsSigner())
