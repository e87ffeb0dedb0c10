"""Checks after upload of a provider version's files (``providers.ingest``), through the API
and the ingest function's dispatch of S3 events (moto): real signatures made here with a
throwaway RSA key, then tampered SHA256SUMS, wrong signers, wrong binaries, bad zips and
zip-slip entries, each refused with its reason on the version or platform."""

from __future__ import annotations

from typing import Any

import pytest

from chalicelib.core.data.aws import client
from chalicelib.core.settings import get_settings
from tests.conftest import Api, doc
from tests.providers.helpers import (
    FILENAME,
    GOOD_ZIP,
    KEYS,
    VERSIONS,
    _key_of,
    arrive,
    new_platform,
    new_version,
    provider_org,
    publish,
)
from tests.support.provider_files import SigningKey, new_signing_key, provider_zip, sha256, shasums


@pytest.fixture(scope="module")
def signer() -> SigningKey:
    return new_signing_key()


@pytest.fixture
def acme(api: Api, signer: SigningKey) -> Api:
    return provider_org(api, signer)


def version_state(api: Api) -> tuple[str, str | None]:
    attrs = api.get(f"{VERSIONS}/1.0.0").data["attributes"]
    return attrs["status"], attrs["error"]


def platform_state(api: Api) -> tuple[str, str | None]:
    attrs = api.get(f"{VERSIONS}/1.0.0/platforms/linux/amd64").data["attributes"]
    return attrs["status"], attrs["error"]


@pytest.mark.parametrize("binary_first", [False, True])
def test_a_signed_version_and_its_archive_verify(
    acme: Api, signer: SigningKey, binary_first: bool
) -> None:
    """In either order of arrival (the archive before the signature is checked, or after)."""
    links = new_version(acme, signer.key_id)
    assert version_state(acme) == ("pending", None)
    sums = shasums({FILENAME: GOOD_ZIP})
    upload = new_platform(acme, sha256(GOOD_ZIP))
    if binary_first:
        arrive(upload, GOOD_ZIP)
        assert platform_state(acme) == ("pending", None)
    arrive(links["shasums-upload"], sums)
    assert version_state(acme) == ("pending", None)  # waits for the signature
    arrive(links["shasums-sig-upload"], signer.sign(sums))
    assert version_state(acme) == ("verified", None)
    if not binary_first:
        assert platform_state(acme) == ("pending", None)
        arrive(upload, GOOD_ZIP)
    assert platform_state(acme) == ("verified", None)


def test_a_tampered_shasums_is_refused(acme: Api, signer: SigningKey) -> None:
    sums = shasums({FILENAME: GOOD_ZIP})
    tampered = sums.replace(sha256(GOOD_ZIP)[:8].encode(), b"00000000")
    publish(acme, signer, sums=tampered, signature=signer.sign(sums))
    status, error = version_state(acme)
    assert status == "failed" and "does not verify" in error
    assert platform_state(acme) == ("pending", None)  # its version failed: never served


def test_a_signature_by_another_key_is_refused(acme: Api, signer: SigningKey) -> None:
    other = new_signing_key("Someone Else")
    sums = shasums({FILENAME: GOOD_ZIP})
    publish(acme, signer, sums=sums, signature=other.sign(sums))
    status, error = version_state(acme)
    assert status == "failed" and f"made by key {other.key_id}" in error


@pytest.mark.parametrize(
    ("signature", "words"),
    [
        (b"-----BEGIN PGP SIGNATURE-----\n\nabc\n-----END PGP SIGNATURE-----\n", "ASCII-armored"),
        (b"\x00not a signature at all", "not an OpenPGP signature"),
    ],
)
def test_a_signature_that_is_not_a_binary_signature_is_refused(
    acme: Api, signer: SigningKey, signature: bytes, words: str
) -> None:
    publish(acme, signer, signature=signature)
    status, error = version_state(acme)
    assert status == "failed" and words in error


def test_a_version_whose_key_is_not_in_the_namespace_is_refused(acme: Api) -> None:
    stranger = new_signing_key("Not Added")
    publish(acme, stranger)
    status, error = version_state(acme)
    assert (
        status == "failed" and f"GPG key {stranger.key_id} is not a key of namespace acme" in error
    )


def test_a_malformed_shasums_is_refused(acme: Api, signer: SigningKey) -> None:
    sums = b"this is not a shasums file\n"
    publish(acme, signer, sums=sums)
    status, error = version_state(acme)
    assert status == "failed" and "SHA256SUMS line 1" in error


def test_a_wrong_binary_is_refused(acme: Api, signer: SigningKey) -> None:
    """The archive uploaded is not the one the platform's shasum (and SHA256SUMS) names."""
    other = provider_zip("mycloud", "1.0.0", {"README": b"something else"})
    links = new_version(acme, signer.key_id)
    sums = shasums({FILENAME: GOOD_ZIP})
    upload = new_platform(acme, sha256(GOOD_ZIP))
    arrive(links["shasums-upload"], sums)
    arrive(links["shasums-sig-upload"], signer.sign(sums))
    arrive(upload, other)
    status, error = platform_state(acme)
    assert status == "failed" and f"sha256 is {sha256(other)}" in error


def test_a_platform_shasum_other_than_the_shasums_line_is_refused(
    acme: Api, signer: SigningKey
) -> None:
    other = provider_zip("mycloud", "1.0.0", {"README": b"x"})
    publish(acme, signer, archive=other, sums=shasums({FILENAME: GOOD_ZIP}))
    status, error = platform_state(acme)
    assert status == "failed" and f"SHA256SUMS lists {sha256(GOOD_ZIP)}" in error


def test_a_platform_missing_from_shasums_is_refused(acme: Api, signer: SigningKey) -> None:
    publish(acme, signer, sums=shasums({"terraform-provider-mycloud_1.0.0_darwin_arm64.zip": b"x"}))
    assert version_state(acme) == ("verified", None)
    status, error = platform_state(acme)
    assert status == "failed" and f"SHA256SUMS has no line for {FILENAME}" in error


@pytest.mark.parametrize(
    ("archive", "words"),
    [
        (b"PK\x03\x04 but not really a zip", "not a zip file"),
        (provider_zip("mycloud", "1.0.0", {"../../evil.sh": b"x"}), "has a '..' in its path"),
        (provider_zip("mycloud", "1.0.0", {"/etc/cron.d/evil": b"x"}), "an absolute path"),
        (provider_zip("mycloud", "1.0.0", symlink="passwd"), "has a symbolic link"),
        (provider_zip("othercloud", "1.0.0"), "no terraform-provider-mycloud* executable"),
    ],
    ids=["not-a-zip", "zip-slip", "absolute", "symlink", "no-binary"],
)
def test_unsafe_or_unusable_archives_are_refused(
    acme: Api, signer: SigningKey, archive: bytes, words: str
) -> None:
    publish(acme, signer, archive=archive)
    assert version_state(acme) == ("verified", None)
    status, error = platform_state(acme)
    assert status == "failed" and words in error, error


def test_a_zip_with_a_bad_crc_is_refused(acme: Api, signer: SigningKey) -> None:
    stored = bytearray(provider_zip("mycloud", "1.0.0", {"data.txt": b"A" * 4096}))
    # Flip one byte of the stored (deflated) data of the first entry.
    stored[60] ^= 0xFF
    archive = bytes(stored)
    publish(acme, signer, archive=archive)
    status, error = platform_state(acme)
    assert status == "failed" and "is corrupt" in error, error
    from chalicelib.providers.store import ProviderModel

    (provider,) = ProviderModel.scan()
    assert provider.served_versions()["1.0.0"]["key-id"] == signer.key_id
    assert provider.served_platform_entries() == {}


def test_any_exception_while_checking_is_a_refusal(
    acme: Api, signer: SigningKey, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chalicelib.providers.ingest import checks

    def explode(*args: Any) -> None:
        raise ValueError("a parser bug")

    monkeypatch.setattr(checks, "check_archive", explode)
    publish(acme, signer)
    status, error = platform_state(acme)
    assert status == "failed" and "unexpected ValueError" in error


def test_a_shasums_tampered_after_verification_is_refused(acme: Api, signer: SigningKey) -> None:
    """A re-upload to the still-valid link is checked again: the version fails."""
    links = new_version(acme, signer.key_id)
    sums = shasums({FILENAME: GOOD_ZIP})
    upload = new_platform(acme, sha256(GOOD_ZIP))
    arrive(links["shasums-upload"], sums)
    arrive(links["shasums-sig-upload"], signer.sign(sums))
    arrive(upload, GOOD_ZIP)
    assert version_state(acme) == ("verified", None)
    arrive(links["shasums-upload"], sums + b"0" * 64 + b"  extra.zip\n")
    status, error = version_state(acme)
    assert status == "failed" and "does not verify" in error


# ----- retrying a platform's check ----------------------------------------------------------

RETRY = f"{VERSIONS}/1.0.0/platforms/linux/amd64/actions/retry"


def lost(url: str, body: bytes) -> None:
    """The publisher's PUT lands, and its S3 event is lost (dead-lettered)."""
    from tests.modules.publishing import drain

    client("s3").put_object(Bucket=get_settings().bucket, Key=_key_of(url), Body=body)
    drain(run=False)


def test_retry_checks_an_archive_whose_event_was_lost(acme: Api, signer: SigningKey) -> None:
    from tests.modules.publishing import drain

    links = new_version(acme, signer.key_id)
    sums = shasums({FILENAME: GOOD_ZIP})
    upload = new_platform(acme, sha256(GOOD_ZIP))
    arrive(links["shasums-upload"], sums)
    arrive(links["shasums-sig-upload"], signer.sign(sums))
    lost(upload, GOOD_ZIP)
    assert platform_state(acme) == ("pending", None)
    retried = acme.post(RETRY)
    assert retried.status == 200, retried.json
    assert retried.data["attributes"]["status"] == "pending"
    assert drain() == ["s3"]  # the archive's event only: its version is verified
    assert platform_state(acme) == ("verified", None)
    # Verified: nothing to retry, and nothing queued.
    again = acme.post(RETRY)
    assert again.status == 409 and "nothing to retry" in again.json["errors"][0]["detail"]
    assert drain() == []


def test_retry_checks_a_version_and_its_archive_whose_events_were_lost(
    acme: Api, signer: SigningKey
) -> None:
    from tests.modules.publishing import drain

    links = new_version(acme, signer.key_id)
    sums = shasums({FILENAME: GOOD_ZIP})
    upload = new_platform(acme, sha256(GOOD_ZIP))
    lost(links["shasums-upload"], sums)
    lost(links["shasums-sig-upload"], signer.sign(sums))
    lost(upload, GOOD_ZIP)
    assert (version_state(acme), platform_state(acme)) == (("pending", None), ("pending", None))
    assert acme.post(RETRY).status == 200
    assert drain() == ["s3", "s3", "s3"]
    assert (version_state(acme), platform_state(acme)) == (("verified", None), ("verified", None))


def test_retry_checks_a_failed_archive_again(
    acme: Api, signer: SigningKey, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A check that failed for a reason since gone (here a parser bug) passes on retry."""
    from chalicelib.providers.ingest import checks
    from tests.modules.publishing import drain

    def explode(*args: Any) -> None:
        raise ValueError("a parser bug")

    with monkeypatch.context() as patched:
        patched.setattr(checks, "check_archive", explode)
        publish(acme, signer)
    assert platform_state(acme)[0] == "failed"
    drain(run=False)
    assert acme.post(RETRY).status == 200
    assert drain() == ["s3"]
    assert platform_state(acme) == ("verified", None)


def test_retry_refuses_when_there_is_nothing_to_retry(acme: Api, signer: SigningKey) -> None:
    from tests.conftest import make_team
    from tests.modules.publishing import drain

    links = new_version(acme, signer.key_id)
    sums = shasums({FILENAME: GOOD_ZIP})
    upload = new_platform(acme, sha256(GOOD_ZIP))
    drain(run=False)
    nothing = acme.post(RETRY)
    assert nothing.status == 422 and "no uploaded archive" in nothing.json["errors"][0]["detail"]
    lost(upload, GOOD_ZIP)
    arrive(links["shasums-upload"], sums)  # the signature is not uploaded yet
    drain(run=False)
    waiting = acme.post(RETRY)
    assert waiting.status == 422, waiting.json
    assert "SHA256SUMS.sig" in waiting.json["errors"][0]["detail"]
    # Readers do not retry (a 404, as every publisher's action of the registry).
    _, token = make_team(acme, "acme", "readers")
    assert acme.as_(token).post(RETRY).status == 404
    assert acme.post(f"{VERSIONS}/1.0.0/platforms/linux/arm64/actions/retry").status == 404
    assert drain() == []
    assert platform_state(acme) == ("pending", None)


def test_retry_verifies_a_version_refused_before_its_key_was_added(acme: Api) -> None:
    from tests.modules.publishing import drain

    late = new_signing_key("Added Later")
    publish(acme, late)
    assert version_state(acme)[0] == "failed"
    assert platform_state(acme) == ("pending", None)
    added = acme.post(KEYS, doc("gpg-keys", namespace="acme", **{"ascii-armor": late.armor}))
    assert added.status == 201, added.json
    drain(run=False)
    assert acme.post(RETRY).status == 200
    assert sorted(drain()) == ["s3", "s3", "s3"]
    assert (version_state(acme), platform_state(acme)) == (("verified", None), ("verified", None))


def test_the_archive_size_limit_is_a_setting(
    acme: Api, signer: SigningKey, monkeypatch: pytest.MonkeyPatch
) -> None:
    """REGISTRY_PROVIDER_MAX_ARCHIVE_BYTES, as REGISTRY_MAX_ARCHIVE_BYTES is for modules."""
    from tests.modules.publishing import drain

    size = len(GOOD_ZIP)
    monkeypatch.setenv("REGISTRY_PROVIDER_MAX_ARCHIVE_BYTES", str(size - 1))
    get_settings.cache_clear()
    publish(acme, signer)
    assert version_state(acme) == ("verified", None)
    assert platform_state(acme) == (
        "failed",
        f"the archive is {size} bytes, over the limit of {size - 1} bytes",
    )
    monkeypatch.setenv("REGISTRY_PROVIDER_MAX_ARCHIVE_BYTES", str(size))
    get_settings.cache_clear()
    drain(run=False)
    assert acme.post(RETRY).status == 200
    assert drain() == ["s3"]
    assert platform_state(acme) == ("verified", None)
