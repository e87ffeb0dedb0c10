"""SAML single sign-on end to end: the real local stack, an independent IdP (pysaml2 with
Debian's ``xmlsec1``, ``tests/support/saml_idp.py``) on another site (``localhost`` against the
registry's ``127.0.0.1``), and headless Chromium.

SAML is configured through the admin API with the IdP's certificate and SSO URL. Then:
SP-initiated sign-in from "Sign in with SSO" lands signed in on the page asked for (the
request's ``SameSite=None`` cookie survived the real cross-site form POST: without it the
Response would name a request this browser never made) and in the team its groups name;
IdP-initiated sign-in works; a Response from another IdP key is the error page and creates
nobody; ``terraform login``'s authorization page sends a session-less person through SSO and
``terraform get`` installs a module with the token it saved; with ``debug`` a site admin
sees the Response first, and signing out sends a LogoutRequest the IdP accepts, whose
LogoutResponse shows the registry's signed-out page; signing out at the IdP (its
LogoutRequest) ends the registry session; a replayed
Response is refused; certificate rotation (``old-idp-cert`` until revoked) with the IdP's
two keys; the bootstrap admin's token still works with SAML on (break-glass). The hostile
Responses pysaml2 will not make (unsigned, wrapped, a comment in the NameID, ...) are in
``tests/saml/test_saml.py``, where the test is the IdP.

On the shared stack, in this module's own organization and team: the SAML settings it
saves are switched back (disabled) when the module ends, so they reach no other module.
"""

from __future__ import annotations

import html
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests
from playwright.sync_api import Browser, BrowserContext, Page, expect

from tests.conftest import doc
from tests.e2e.conftest import Stack
from tests.e2e.pages import TIMEOUT_MS, check_page
from tests.e2e.test_terraform_login import (
    approve_on,
    publish_module,
    terraform_get,
    terraform_login,
)
from tests.support.saml_idp import Idp, IdpUser, saml_idp

pytestmark = pytest.mark.e2e

ORG = "saml-co"
TEAM = "saml-platform"


@dataclass
class Site:
    stack: Stack
    idp: Idp
    team_id: str


def configure_saml(stack: Stack, **extra: object) -> None:
    reply = stack.session().patch(
        stack.api("/admin/saml-settings"),
        json={"data": {"type": "saml-settings", "attributes": extra}},
    )
    assert reply.status_code == 200, reply.text


@pytest.fixture(scope="module")
def site(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    """An organization with a published module and a team, and the IdP; SAML as it was
    (off) again afterwards."""
    if shutil.which("xmlsec1") is None:
        pytest.fail("Debian's xmlsec1 is missing: `make browser` installs it")
    publish_module(stack, ORG)
    team = stack.session().post(
        stack.api(f"/organizations/{ORG}/teams"), json=doc("teams", name=TEAM)
    )
    assert team.status_code == 201, team.text
    metadata = requests.get(f"{stack.url}/users/saml/metadata", timeout=10)
    assert metadata.status_code == 200
    with saml_idp(tmp_path_factory.mktemp("idp"), metadata.text) as idp:
        configure_saml(
            stack,
            **{
                "enabled": True,
                "idp-cert": idp.cert,
                "sso-endpoint-url": f"{idp.base}/sso",
                "slo-endpoint-url": f"{idp.base}/slo",
                "team-management-enabled": True,
            },
        )
        # A certificate another module saved would be kept as the old one: not this IdP's.
        revoked = stack.session().post(
            stack.api("/admin/saml-settings/actions/revoke-old-certificate")
        )
        assert revoked.status_code == 200, revoked.text
        try:
            yield Site(stack, idp, team.json()["data"]["id"])
        finally:
            configure_saml(stack, **{"enabled": False, "team-management-enabled": False})


@pytest.fixture
def context(site: Site, browser: Browser) -> Iterator[BrowserContext]:
    """A fresh browser (no cookies) for one scenario."""
    opened = browser.new_context(base_url=site.stack.url, ignore_https_errors=True)
    opened.set_default_timeout(TIMEOUT_MS)
    yield opened
    opened.close()


def users_named(stack: Stack, username: str) -> list[str]:
    reply = stack.session().get(stack.api("/admin/users"), params={"q": username})
    assert reply.status_code == 200, reply.text
    return [u["attributes"]["username"] for u in reply.json()["data"]]


def team_members(stack: Stack, team_id: str) -> set[str]:
    reply = stack.session().get(stack.api(f"/teams/{team_id}"), params={"include": "users"})
    assert reply.status_code == 200, reply.text
    return {u["attributes"]["username"] for u in reply.json().get("included", [])}


def sign_in_with_sso(page: Page) -> None:
    assert "/app/sign-in" in page.url, page.url
    page.get_by_role("link", name="Sign in with SSO").click()


def test_sp_initiated_sign_in_lands_on_the_page_asked_for_in_the_groups_teams(
    site: Site, context: BrowserContext
) -> None:
    site.idp.user = IdpUser("ana@example.com", "ana", [TEAM, "no-such-team"])
    page = context.new_page()
    page.goto(f"/app/{ORG}/registry/modules")
    sign_in_with_sso(page)
    page.wait_for_url(f"**/app/{ORG}/registry/modules")
    expect(page.get_by_role("link", name="network", exact=False).first).to_be_visible()
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()
    assert len(site.idp.requests) >= 1  # it went through the IdP's SSO endpoint
    assert users_named(site.stack, "ana") == ["ana"]
    assert "ana" in team_members(site.stack, site.team_id)


def test_idp_initiated_sign_in(site: Site, context: BrowserContext) -> None:
    site.idp.user = IdpUser("ben@example.com", "ben", [TEAM])
    page = context.new_page()
    page.goto(f"{site.idp.base}/unsolicited?relay=/app/{ORG}/registry/modules")
    page.wait_for_url(f"{site.stack.url}/app/{ORG}/registry/modules")
    expect(page.get_by_role("link", name="network", exact=False).first).to_be_visible()
    assert "ben" in team_members(site.stack, site.team_id)


def test_a_response_signed_by_another_key_signs_nobody_in(
    site: Site, context: BrowserContext
) -> None:
    site.idp.user = IdpUser("mallory@example.com", "mallory", [TEAM])
    page = context.new_page()
    reply = None
    with page.expect_response(lambda r: r.url.endswith("/users/saml/auth")) as answered:
        page.goto(f"{site.idp.base}/other/unsolicited?relay=/app/organizations")
    reply = answered.value
    assert reply.status == 403
    expect(page.get_by_role("heading", level=1)).to_be_visible()
    assert "does not match the identity provider" in page.content()
    assert users_named(site.stack, "mallory") == []
    page.goto("/app/organizations")
    assert "/app/sign-in" in page.url  # no session either


def test_debug_then_sign_out_through_the_idps_single_logout(
    site: Site, context: BrowserContext
) -> None:
    """A site admin (the ``site-admins`` group) with ``debug`` on sees the Response pysaml2
    sent and the values taken, continues, then signs out: the session ends here and the
    IdP receives a LogoutRequest it accepts, naming her."""
    configure_saml(site.stack, debug=True)
    try:
        site.idp.user = IdpUser("dora@example.com", "dora", ["site-admins", "ghosts"])
        page = context.new_page()
        page.goto(f"/app/{ORG}/registry/modules")
        sign_in_with_sso(page)
        page.wait_for_url("**/app/sign-in/sso/debug")
        values = page.locator("#saml-debug-values")
        for shown in ("dora", "dora@example.com", "site-admins", "ghosts", "yes"):
            expect(values).to_contain_text(shown)
        response = page.locator("#saml-debug-response").inner_text()
        assert "<ns1:Assertion" in response and "(left out)" in response
        assert "BEGIN" not in response and "PRIVATE" not in response
        check_page(page)  # axe finds nothing serious; it fits a phone (the XML scrolls)
        page.get_by_role("link", name="Continue").click()
        page.wait_for_url(f"**/app/{ORG}/registry/modules")
    finally:
        configure_saml(site.stack, debug=False)

    with page.expect_response(lambda r: r.url.endswith("/app/sign-out")) as signed_out:
        page.get_by_role("button", name="Sign out").click()
    assert signed_out.value.status == 200  # a page going on to the IdP (see sso.signed_out)
    page.wait_for_url(f"{site.idp.base}/slo?**")
    expect(page.get_by_role("heading", level=1)).to_have_text("Signed out at the IdP")
    logout = site.idp.logouts[-1]
    assert logout.name_id == "dora@example.com"
    assert logout.issuer == f"{site.stack.url}/users/saml/metadata"
    assert logout.session_indexes and all(logout.session_indexes)
    # The IdP's LogoutResponse back at the registry's single logout: the signed-out page.
    page.get_by_role("link", name="Back to the registry").click()
    page.wait_for_url(f"{site.stack.url}/users/saml/slo?**")
    expect(page.locator("#signed-out-everywhere")).to_be_visible()
    page.goto(f"{site.stack.url}/app/organizations")
    assert "/app/sign-in" in page.url  # the registry's session ended too


def test_signing_out_at_the_idp_ends_the_registry_session(
    site: Site, context: BrowserContext
) -> None:
    """IdP-initiated single logout: the IdP's signed LogoutRequest, through the browser,
    ends the session SSO opened; the browser goes back to the IdP with a LogoutResponse
    pysaml2 reads as Success."""
    site.idp.user = IdpUser("finn@example.com", "finn", [TEAM])
    page = context.new_page()
    page.goto("/app/organizations")
    sign_in_with_sso(page)
    page.wait_for_url("**/app/organizations")
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()
    page.goto(site.idp.logout_request_url("finn@example.com"))
    page.wait_for_url(f"{site.idp.base}/slo?**")
    expect(page.get_by_role("heading", level=1)).to_have_text("The registry signed you out")
    assert site.idp.logout_answers[-1] == "urn:oasis:names:tc:SAML:2.0:status:Success"
    page.goto(f"{site.stack.url}/app/organizations")
    assert "/app/sign-in" in page.url


def idp_form(site: Site, url: str) -> dict[str, str]:
    """The form fields of the IdP's auto-submitting page at ``url`` (read without a browser)."""
    page = requests.get(url, verify=site.idp.tls_cert, timeout=30).text
    fields = dict(re.findall(r'name="(SAMLResponse|RelayState)" value="([^"]*)"', page))
    assert "SAMLResponse" in fields, page
    return {name: html.unescape(value) for name, value in fields.items()}


def acs_post(site: Site, form: dict[str, str]) -> requests.Response:
    return requests.post(
        f"{site.stack.url}/users/saml/auth", data=form, allow_redirects=False, timeout=30
    )


def test_a_replayed_response_is_refused(site: Site) -> None:
    site.idp.user = IdpUser("eve@example.com", "eve", [])
    form = idp_form(site, f"{site.idp.base}/unsolicited?relay=/app/organizations")
    assert acs_post(site, form).status_code == 303
    again = acs_post(site, form)
    assert again.status_code == 403 and "used already" in again.text


def test_certificate_rotation_with_old_idp_cert_until_revoked(site: Site) -> None:
    """The IdP moves to a new key: PATCHing its certificate keeps the current one as
    ``old-idp-cert``, both sign in until it is revoked, then only the new one does."""
    site.idp.user = IdpUser("finn@example.com", "finn", [])
    old = f"{site.idp.base}/unsolicited?relay=/app/organizations"
    new = f"{site.idp.base}/other/unsolicited?relay=/app/organizations"
    configure_saml(site.stack, **{"idp-cert": site.idp.other_cert})
    try:
        assert acs_post(site, idp_form(site, old)).status_code == 303
        assert acs_post(site, idp_form(site, new)).status_code == 303
        revoke = site.stack.session().post(
            site.stack.api("/admin/saml-settings/actions/revoke-old-certificate")
        )
        assert revoke.status_code == 200, revoke.text
        refused = acs_post(site, idp_form(site, old))
        assert refused.status_code == 403 and "does not match" in refused.text
        assert acs_post(site, idp_form(site, new)).status_code == 303
    finally:  # back to the first key, for the other scenarios
        configure_saml(site.stack, **{"idp-cert": site.idp.cert})
        site.stack.session().post(
            site.stack.api("/admin/saml-settings/actions/revoke-old-certificate")
        )


def test_the_bootstrap_admin_token_still_works_with_saml_enabled(site: Site) -> None:
    settings = site.stack.session().get(site.stack.api("/admin/saml-settings"))
    assert settings.status_code == 200 and settings.json()["data"]["attributes"]["enabled"]
    me = site.stack.session().get(site.stack.api("/account/details"))
    assert me.status_code == 200 and me.json()["data"]["attributes"]["is-site-admin"]


@pytest.mark.skipif(shutil.which("terraform") is None, reason="terraform is not on PATH")
def test_terraform_login_through_sso_then_get(
    site: Site, context: BrowserContext, tmp_path: Path
) -> None:
    site.idp.user = IdpUser("cleo@example.com", "cleo", [TEAM])
    page = context.new_page()

    def approve(url: str) -> tuple[str, str | None]:
        page.goto(url)
        sign_in_with_sso(page)  # no session in this browser: the IdP signs her in
        page.wait_for_url("**/app/oauth/authorize?**")
        return approve_on(page)

    logged_in = terraform_login(site.stack, tmp_path, approve)
    me = site.stack.session(logged_in.token).get(site.stack.api("/account/details"))
    assert me.status_code == 200 and me.json()["data"]["attributes"]["username"] == "cleo"
    assert terraform_get(logged_in, ORG) == "1.0.0"
