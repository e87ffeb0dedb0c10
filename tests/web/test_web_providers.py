"""The provider pages in-process (Chalice's test client + moto): the organization's private
providers and a provider's page, with versions the registry verified and refused (signed
here with a throwaway key, checked by the real ingest dispatch), their platforms, the
signing key and the usage snippet; outsiders get the not-found page, members read.

The browser checks (axe, a 390 px phone) are in tests/e2e/test_web_ui.py."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest

from chalicelib.core.settings import get_settings
from tests.conftest import ADMIN_TOKEN, Api, doc, make_org, make_team
from tests.providers.helpers import VERSIONS, arrive, new_version, provider_org
from tests.support.provider_files import SigningKey, new_signing_key, provider_zip, sha256, shasums
from tests.support.web_browser import Browser

LIST = "/app/acme/registry/providers"
PAGE = "/app/acme/registry/providers/private/acme/mycloud"
LINUX = "terraform-provider-mycloud_1.0.0_linux_amd64.zip"
DARWIN = "terraform-provider-mycloud_1.0.0_darwin_arm64.zip"
GOOD = provider_zip("mycloud", "1.0.0")
NOT_A_ZIP = b"this is not a zip archive"


@pytest.fixture(scope="module")
def signer() -> SigningKey:
    return new_signing_key()


def platform(api: Api, version: str, os_: str, arch: str, filename: str, data: bytes) -> str:
    """A platform of ``version``; its upload link."""
    body = doc(
        "registry-provider-version-platforms",
        os=os_,
        arch=arch,
        shasum=sha256(data),
        filename=filename,
    )
    reply = api.post(f"{VERSIONS}/{version}/platforms", body)
    assert reply.status == 201, reply.json
    return reply.data["links"]["provider-binary-upload"]


@pytest.fixture
def published(api: Api, signer: SigningKey) -> Api:
    """acme/mycloud: 1.0.0 verified, with linux/amd64 verified and darwin/arm64 refused (not
    a zip); 1.1.0 refused (its SHA256SUMS signed by nobody's key), with a platform whose
    archive never came. And the organization ``other``."""
    provider_org(api, signer)
    links = new_version(api, signer.key_id, "1.0.0")
    sums = shasums({LINUX: GOOD, DARWIN: NOT_A_ZIP})
    linux = platform(api, "1.0.0", "linux", "amd64", LINUX, GOOD)
    darwin = platform(api, "1.0.0", "darwin", "arm64", DARWIN, NOT_A_ZIP)
    arrive(links["shasums-upload"], sums)
    arrive(links["shasums-sig-upload"], signer.sign(sums))
    arrive(linux, GOOD)
    arrive(darwin, NOT_A_ZIP)
    links = new_version(api, signer.key_id, "1.1.0")
    platform(api, "1.1.0", "linux", "amd64", "mycloud_1.1.0.zip", GOOD)
    arrive(links["shasums-upload"], sums)
    arrive(links["shasums-sig-upload"], b"\x00not a signature at all")
    make_org(api, "other")
    return api


def text_of(page: Any) -> str:
    """The page's text with tags dropped and entities read, spaces collapsed."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page.text)).split())


def test_the_provider_list(published: Api, browser: Browser) -> None:
    browser.sign_in(ADMIN_TOKEN)
    modules = browser.get("/app/acme/registry/modules").text
    assert f'href="{LIST}"' in modules  # the organization's nav links the providers
    listing = browser.get(LIST)
    assert listing.status_code == 200
    assert f'<a href="{PAGE}">mycloud</a>' in listing.text
    assert '<a href="/app/acme/registry/providers" aria-current="page">Providers</a>' in (
        listing.text
    )
    text = text_of(listing)
    assert "1 private provider" in text
    # The newest verified version, the count, the newest refused one and its reason.
    assert re.search(r"mycloud acme 1\.0\.0 Failed: 1\.1\.0: SHA256SUMS\.sig is not", text), text
    assert '</td>\n      <td data-label="Versions">2</td>' in listing.text
    empty = text_of(browser.get("/app/other/registry/providers"))
    assert "0 private providers" in empty and "No private provider is published" in empty


def test_the_provider_page_shows_the_newest_verified_version(
    published: Api, browser: Browser, signer: SigningKey
) -> None:
    browser.sign_in(ADMIN_TOKEN)
    page = browser.get(PAGE)
    assert page.status_code == 200
    text = text_of(page)
    assert "<h1>mycloud</h1>" in page.text and "version 1.0.0" in text
    assert 'id="version-status"' not in page.text  # verified: no notice
    # Platforms of 1.0.0: each with its file, its SHA-256 and its check.
    assert f"linux/amd64 Verified {LINUX} SHA-256 {sha256(GOOD)}" in text
    assert f"darwin/arm64 Failed the archive is not a zip file Check again… {DARWIN}" in text
    # Versions: both, the refused one with its reason.
    assert "1.1.0 Failed SHA256SUMS.sig is not an OpenPGP signature" in text
    assert f'<a href="{PAGE}/1.0.0" aria-current="page">1.0.0</a>' in page.text
    # The signing key: its id, and the armored key that verified the version, folded.
    assert f"Key id {signer.key_id}" in text
    details = page.text.split('<details class="directory">', 1)[1].split("</details>", 1)[0]
    assert "Public key (ASCII armor)" in details
    assert html.escape(signer.armor.strip(), quote=True).splitlines()[0] in details
    assert "-----END PGP PUBLIC KEY BLOCK-----" in details
    # The usage snippet: this host, the organization, the type, ~> MAJOR.MINOR.
    snippet = html.unescape(page.text.split('id="usage-snippet">', 1)[1].split("</code>", 1)[0])
    assert snippet == (
        "terraform {\n  required_providers {\n    mycloud = {\n"
        '      source  = "registry.test/acme/mycloud"\n      version = "~> 1.0"\n'
        "    }\n  }\n}\n"
    )
    # Plain HTTP: the CLI configuration's host block names providers.v1 too.
    config = html.unescape(page.text.split('id="cli-config">', 1)[1].split("</code>", 1)[0])
    assert 'host "registry.test"' in config
    assert '"providers.v1" = "http://registry.test/api/registry/v1/providers/"' in config
    assert '"modules.v1" = "http://registry.test/api/registry/v1/modules/"' in config
    # ... and says why terraform login's token is not read with TF_CLI_CONFIG_FILE set.
    assert 'id="tf-cli-config-file"' in page.text
    assert 'credentials "registry.test" { token' in html.unescape(page.text)
    assert get_settings().bucket not in page.text  # a reading page carries no file link


def test_a_refused_version_shows_its_reason_and_its_waiting_platform(
    published: Api, browser: Browser
) -> None:
    browser.sign_in(ADMIN_TOKEN)
    page = browser.get(PAGE + "/1.1.0")
    assert page.status_code == 200
    text = text_of(page)
    assert "Version 1.1.0: Failed. SHA256SUMS.sig is not an OpenPGP signature" in text
    assert "linux/amd64 Pending archive not uploaded yet Check again… mycloud_1.1.0.zip" in text
    assert "SHA256SUMS uploaded SHA256SUMS signature uploaded" in text
    assert 'version = "~> 1.1"' in html.unescape(page.text)


def test_a_version_that_is_not_checked_yet_says_what_it_waits_for(
    published: Api, browser: Browser, signer: SigningKey
) -> None:
    new_version(published, signer.key_id, "2.0.0-beta1")
    browser.sign_in(ADMIN_TOKEN)
    # The default stays the newest verified version; the pre-release opens by its URL.
    assert "version 1.0.0" in text_of(browser.get(PAGE))
    text = text_of(browser.get(PAGE + "/2.0.0-beta1"))
    assert "Version 2.0.0-beta1: Pending. Its SHA256SUMS and signature are not checked yet" in text
    assert "(waiting for SHA256SUMS and its signature)" in text
    assert "No platform yet." in text
    assert 'version = "2.0.0-beta1"' in html.unescape(browser.get(PAGE + "/2.0.0-beta1").text)


def test_outsiders_get_not_found_and_members_read(published: Api, browser: Browser) -> None:
    _, outsider = make_team(published, "other", "publishers", manage_providers=True)
    browser.sign_in(outsider)
    for path in (LIST, PAGE, PAGE + "/1.0.0", "/app/nowhere/registry/providers"):
        reply = browser.get(path)
        assert reply.status_code == 404, path
        assert "<h1>Page not found</h1>" in reply.text and "mycloud" not in reply.text
    _, reader = make_team(published, "acme", "readers")  # no organization access at all
    member = Browser(published.client)
    member.sign_in(reader)
    assert member.get(LIST).status_code == 200
    page = member.get(PAGE)
    assert page.status_code == 200 and "linux/amd64" in page.text
    assert "-----BEGIN PGP PUBLIC KEY BLOCK-----" in page.text
    for path in (PAGE + "/9.9.9", PAGE + "/not-a-version", LIST + "/private/acme/nope"):
        assert member.get(path).status_code == 404, path
    assert member.get(LIST + "?page=0").status_code == 400
    assert member.get(LIST + "?page=2").status_code == 404


def test_a_stranger_is_sent_to_sign_in(published: Api, browser: Browser) -> None:
    reply = browser.get(PAGE)
    assert reply.status_code == 303 and reply.headers["Location"].startswith("/app/sign-in?next=")


def test_a_publisher_has_a_platform_checked_again_after_a_confirmation(
    published: Api, browser: Browser
) -> None:
    """The page's "Check again" button opens a confirmation whose form (with its CSRF
    token) runs the API's retry; refusals (verified, nothing uploaded) show there."""
    from tests.modules.publishing import drain

    drain(run=False)
    retry = f"{PAGE}/1.0.0/platforms/darwin/arm64/retry"
    browser.sign_in(ADMIN_TOKEN)
    page = browser.get(PAGE + "/1.0.0").text
    # A button for the refused platform only, none for the verified one.
    assert f'action="{retry}"' in page
    assert "platforms/linux/amd64/retry" not in page
    confirm = browser.get(retry)
    assert confirm.status_code == 200
    assert "Check the uploaded archive of darwin/arm64 of version 1.0.0 again" in text_of(confirm)
    token = browser.csrf(retry)
    # Without the form's CSRF token: refused, nothing queued.
    assert browser.post(retry, {}).status_code == 403
    assert browser.post(retry, {"csrf_token": "forged"}).status_code == 403
    assert drain() == []
    done = browser.post(retry, {"csrf_token": token})
    assert done.status_code == 303, done.text
    assert done.headers["Location"] == f"{PAGE}/1.0.0?retried=darwin/arm64"
    shown = text_of(browser.get(done.headers["Location"]))
    assert "The archive of darwin/arm64 is being checked again" in shown
    assert drain() == ["s3"]  # its upload's event, run again: still not a zip
    assert "darwin/arm64 Failed the archive is not a zip file" in text_of(browser.get(PAGE))
    # A query naming no platform of the page shows nothing.
    assert 'id="retried"' not in browser.get(f"{PAGE}/1.0.0?retried=<b>x</b>").text
    # Refusals: the verified platform (409), a platform with nothing uploaded (422).
    verified = browser.post(f"{PAGE}/1.0.0/platforms/linux/amd64/retry", {"csrf_token": token})
    assert verified.status_code == 409 and "nothing to retry" in verified.text
    missing = browser.post(f"{PAGE}/1.1.0/platforms/linux/amd64/retry", {"csrf_token": token})
    assert missing.status_code == 422 and "no uploaded archive" in missing.text
    assert drain() == []


def test_readers_have_no_retry(published: Api) -> None:
    _, reader = make_team(published, "acme", "readers")
    member = Browser(published.client)
    member.sign_in(reader)
    assert "/retry" not in member.get(PAGE + "/1.0.0").text
    retry = f"{PAGE}/1.0.0/platforms/darwin/arm64/retry"
    assert member.get(retry).status_code == 404
    token = member.csrf(PAGE)
    assert member.post(retry, {"csrf_token": token}).status_code == 404


def test_the_provider_page_reads_the_provider_and_the_version_once(
    published: Api, browser: Browser, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The session, the user's rights (user, organization), the provider, its versions and
    the shown version's platforms: no second read of the organization, the provider or the
    version for the platforms (they were read, with the caller's rights, for the versions)."""
    from bench.reads import counting_reads

    monkeypatch.setenv("REGISTRY_SETTINGS_CACHE_SECONDS", "600")
    monkeypatch.setenv("REGISTRY_TOKEN_CACHE_SECONDS", "600")
    get_settings.cache_clear()
    browser.sign_in(ADMIN_TOKEN)
    for path in (PAGE, PAGE + "/1.1.0"):
        browser.get(path)  # the settings and the token are read (and cached) first
        with counting_reads() as reads:
            reply = browser.get(path)
        assert reply.status_code == 200
        assert "linux/amd64" in reply.text
        assert reads.total_calls <= 6, (path, reads.detail())


def test_the_latest_version_is_the_highest_verified_release_before_any_pre_release(
    api: Api, signer: SigningKey, browser: Browser
) -> None:
    """ "Latest" is ``semver.latest_of``, as for modules: a verified 2.0.0-beta.1 newer than
    the verified 1.0.0 is not the latest (terraform picks no pre-release unasked)."""
    provider_org(api, signer)
    for version in ("1.0.0", "2.0.0-beta.1"):
        links = new_version(api, signer.key_id, version)
        sums = shasums({f"terraform-provider-mycloud_{version}_linux_amd64.zip": GOOD})
        arrive(links["shasums-upload"], sums)
        arrive(links["shasums-sig-upload"], signer.sign(sums))
    browser.sign_in(ADMIN_TOKEN)
    assert re.search(r"mycloud acme 1\.0\.0 ", text_of(browser.get(LIST)))
    page = browser.get(PAGE)
    assert "version 1.0.0" in text_of(page)
    assert f'<a href="{PAGE}/1.0.0" aria-current="page">1.0.0</a>' in page.text
    assert "2.0.0-beta.1 Verified" in text_of(page)  # listed, not chosen
