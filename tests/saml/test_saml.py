"""SAML single sign-on: the test is the identity provider (a throwaway key and certificate
made with ``cryptography``, Responses signed with signxml's ``XMLSigner``) and the browser.

Valid SP- and IdP-initiated sign-ins create the user and a session of
``sso-api-token-session-timeout``; every hostile Response (unsigned, another key, another
audience or destination, expired, not yet valid, replayed, an unknown InResponseTo, signature
wrapping, a comment in a name, two assertions, a DTD with entities) is a 4xx page that signs
nobody in and creates no user."""

from __future__ import annotations

import base64
import html
import zlib
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs, quote, unquote, urlsplit

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from lxml import etree

from tests.conftest import Api, make_org, make_team
from tests.saml.helpers import (
    ACS,
    ADMIN,
    ENTITY_ID,
    IDP,
    IDP_SSO,
    OTHER,
    A,
    Claims,
    P,
    configure,
    encode,
    key_pair,
    logout_request,
    post,
    single_logout_link,
)
from tests.support.web_browser import Browser


@pytest.fixture
def saml(api: Api) -> Api:
    configure(api)
    return api


def usernames() -> set[str]:
    from chalicelib.accounts.users import service as users_service

    return {user.username for user in users_service.all_users()}


def start(browser: Browser, next_: str = "/app/organizations") -> tuple[str, dict[str, list[str]]]:
    """SP-initiated: follow "Sign in with SSO"; (the AuthnRequest's ID, the query sent)."""
    reply = browser.get("/app/sign-in/sso?next=" + quote(next_, safe=""))
    assert reply.status_code == 303, reply.text
    location = reply.headers["Location"]
    assert location.startswith(IDP_SSO + "?")
    query = parse_qs(urlsplit(location).query)
    xml = zlib.decompress(base64.b64decode(query["SAMLRequest"][0]), -15)
    request = etree.fromstring(xml)
    assert request.get("AssertionConsumerServiceURL") == ACS
    assert request.get("ProtocolBinding") == "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST"
    assert request.findtext(f"{{{A}}}Issuer") == ENTITY_ID
    return request.get("ID"), query


# ----- sign-ins that work ---------------------------------------------------------------------


def test_idp_initiated_sign_in_creates_the_user_and_a_session(saml: Api) -> None:
    browser = Browser(saml.client)
    assert "jane" not in usernames()
    reply = post(browser, Claims().posted(), relay="/app/organizations")
    assert reply.status_code == 303, reply.text
    assert reply.headers["Location"] == "/app/organizations"
    session_cookie = next(c for c in browser.last_set_cookies if "tfe_registry_session=" in c)
    assert "Max-Age=3600" in session_cookie  # sso-api-token-session-timeout
    assert "jane" in usernames()
    assert browser.get("/app/organizations").status_code == 200  # signed in
    from chalicelib.web import store

    (item,) = store.sessions()
    left = (item.expires - datetime.now(UTC)).total_seconds()
    assert 3500 < left <= 3600


def test_sp_initiated_sign_in_comes_back_to_the_page_asked_for(saml: Api) -> None:
    browser = Browser(saml.client)
    assert "Sign in with SSO" in browser.get("/app/sign-in").text
    request_id, query = start(browser, "/app/organizations?x=1")
    assert query["RelayState"] == ["/app/organizations?x=1"]
    assert "Signature" not in query  # authn-requests-signed is off
    cookie = next(c for c in browser.last_set_cookies if c.startswith("tfe_registry_saml="))
    assert "SameSite=None" in cookie and "Secure" in cookie and "HttpOnly" in cookie
    reply = post(browser, Claims(in_response_to=request_id).posted())
    assert reply.status_code == 303, reply.text
    assert reply.headers["Location"] == "/app/organizations?x=1"
    assert "jane" in usernames()
    # The request was answered: another Response to it (a new assertion) is refused.
    other = Browser(saml.client)
    other.cookies = {"tfe_registry_saml": browser.cookies["tfe_registry_saml"]}
    again = post(other, Claims(in_response_to=request_id, username="mallory").posted())
    assert again.status_code == 403
    assert "mallory" not in usernames()


def test_a_signed_response_alone_is_enough_unless_assertions_must_be_signed(saml: Api) -> None:
    assert post(Browser(saml.client), Claims(sign="response").posted()).status_code == 303
    assert (
        post(Browser(saml.client), Claims(sign="both", username="bo").posted()).status_code == 303
    )
    configure(saml, **{"want-assertions-signed": True})
    refused = post(Browser(saml.client), Claims(sign="response", username="cy").posted())
    assert refused.status_code == 403
    assert "cy" not in usernames()


def test_an_existing_user_is_the_same_person(saml: Api) -> None:
    from chalicelib.accounts.users import service as users_service

    existing = users_service.create_user("Jane", "jane@old.example.com")
    assert post(Browser(saml.client), Claims(username="jane").posted()).status_code == 303
    assert [u.id for u in users_service.all_users() if u.username.lower() == "jane"] == [
        existing.id
    ]


def test_the_old_idp_certificate_is_accepted_until_revoked(saml: Api) -> None:
    new = key_pair("new.idp.example.com")
    configure(saml, **{"idp-cert": new.cert})  # IDP's becomes old-idp-cert
    assert post(Browser(saml.client), Claims(keys=new).posted()).status_code == 303
    assert post(Browser(saml.client), Claims(username="old").posted()).status_code == 303
    assert saml.post(ADMIN + "/actions/revoke-old-certificate").status == 200
    refused = post(Browser(saml.client), Claims(username="late").posted())
    assert refused.status_code == 403
    assert "late" not in usernames()


# ----- hostile and broken Responses -------------------------------------------------------------


def _wrapped_assertion() -> str:
    """Signature wrapping: the IdP's genuinely signed assertion for jane moved into an
    Extensions element, and an unsigned assertion for "admin" put where an SP reads it."""
    root = Claims().response()
    genuine = root.find(f"{{{A}}}Assertion")
    root.remove(genuine)
    extensions = etree.SubElement(root, f"{{{P}}}Extensions")
    extensions.append(genuine)
    evil = Claims(username="admin2", sign="none").assertion(datetime.now(UTC))
    root.append(evil)
    return encode(root)


def _wrapped_response() -> str:
    """The signed Response hidden inside a new one that carries an unsigned assertion."""
    genuine = Claims(sign="response").response()
    outer = Claims(username="admin2", sign="none").response()
    extensions = etree.Element(f"{{{P}}}Extensions")
    extensions.append(genuine)
    outer.insert(1, extensions)
    return encode(outer)


def _comment_in_name() -> str:
    """``adm<!---->in2``: a comment splitting the username (and the NameID)."""
    root = Claims(username="adm<!---->in2", name_id="admin2@example.com<!---->.evil.com").response()
    return encode(root)


def _entities() -> str:
    """A billion-laughs DTD in front of a genuinely signed Response."""
    xml = etree.tostring(Claims().response()).decode()
    dtd = (
        '<!DOCTYPE samlp:Response [<!ENTITY a "admin2"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">'
        '<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;">]>'
    )
    return base64.b64encode((dtd + xml).encode()).decode()


HOSTILE = {
    "unsigned": lambda: Claims(username="admin2", sign="none").posted(),
    "signed by another key": lambda: Claims(username="admin2", keys=OTHER).posted(),
    "response signed by another key": lambda: Claims(
        username="admin2", keys=OTHER, sign="response"
    ).posted(),
    "wrong audience": lambda: Claims(username="admin2", audience="https://other.sp/").posted(),
    "wrong destination": lambda: Claims(
        username="admin2", destination="https://other.sp/acs"
    ).posted(),
    "wrong recipient": lambda: Claims(username="admin2", recipient="https://other.sp/acs").posted(),
    "expired": lambda: Claims(
        username="admin2", not_before=timedelta(hours=-2), not_on_or_after=timedelta(hours=-1)
    ).posted(),
    "not yet valid": lambda: Claims(
        username="admin2", not_before=timedelta(hours=1), not_on_or_after=timedelta(hours=2)
    ).posted(),
    "unknown InResponseTo": lambda: Claims(username="admin2", in_response_to="_nope").posted(),
    # Signed by the IdP, but past what a key holds (DynamoDB: 2 KB; moto has no such limit).
    "overlong InResponseTo": lambda: Claims(
        username="admin2", in_response_to="_" + "r" * 3000
    ).posted(),
    "overlong assertion ID": lambda: Claims(
        username="admin2", assertion_id="_" + "a" * 3000
    ).posted(),
    "failed status": lambda: Claims(
        username="admin2", status="urn:oasis:names:tc:SAML:2.0:status:Requester"
    ).posted(),
    "two assertions": lambda: Claims(username="admin2").posted(assertions=2),
    "wrapped assertion": _wrapped_assertion,
    "wrapped response": _wrapped_response,
    "comment in a name": _comment_in_name,
    "entity expansion": _entities,
    "not base64": lambda: "%%%not base64%%%",
    "not XML": lambda: base64.b64encode(b"<samlp:Response").decode(),
    "empty": lambda: "",
}


# The reason each is refused for (the logged detail): removing that one check fails its case.
REASONS = {
    "unsigned": "unsigned assertion",
    "signed by another key": "signature not valid",
    "response signed by another key": "signature not valid",
    "wrong audience": "Audience is not the SP entity id",
    "wrong destination": "Destination is not the ACS URL",
    "wrong recipient": "Recipient is not the ACS URL",
    "expired": "NotOnOrAfter",
    "not yet valid": "NotBefore",
    "unknown InResponseTo": "unknown InResponseTo",
    "overlong InResponseTo": "ID too long",
    "overlong assertion ID": "ID too long",
    "failed status": "status urn:oasis:names:tc:SAML:2.0:status:Requester",
    "two assertions": "2 assertions",
    "wrapped assertion": "2 assertions",
    "wrapped response": "2 assertions",
    "comment in a name": "comment inside NameID or AttributeValue",
    "entity expansion": "DTD in the Response",
    "not base64": "not base64",
    "not XML": "bad XML",
    "empty": "bad size",
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_response_signs_nobody_in(
    saml: Api, case: str, caplog: pytest.LogCaptureFixture
) -> None:
    before = usernames()
    browser = Browser(saml.client)
    reply = post(browser, HOSTILE[case](), relay="/app/organizations")
    assert 400 <= reply.status_code < 500, (case, reply.status_code, reply.text)
    refusals = [r.getMessage() for r in caplog.records if r.name == "registry.web.sso"]
    assert refusals == [f"saml sign-in refused: {REASONS[case]}"] or (
        REASONS[case] == "signature not valid" and "signature not valid" in refusals[0]
    ), refusals
    assert "Single sign-on failed" in reply.text
    assert "tfe_registry_session" not in browser.cookies
    assert usernames() == before
    assert browser.get("/app/organizations").status_code == 303  # to the sign-in page


def test_a_replayed_response_is_refused(saml: Api) -> None:
    posted = Claims().posted()
    assert post(Browser(saml.client), posted).status_code == 303
    browser = Browser(saml.client)
    replay = post(browser, posted)
    assert replay.status_code == 403
    assert "used already" in replay.text
    assert "tfe_registry_session" not in browser.cookies


def test_a_response_to_another_browsers_request_is_refused(saml: Api) -> None:
    asking = Browser(saml.client)
    request_id, _ = start(asking)
    thief = Browser(saml.client)  # no cookie of the asking browser
    assert post(thief, Claims(in_response_to=request_id).posted()).status_code == 403
    assert "jane" not in usernames()
    assert post(asking, Claims(in_response_to=request_id).posted()).status_code == 303


def test_nothing_works_while_saml_is_disabled(api: Api) -> None:
    configure(api)
    configure(api, enabled=False)
    assert post(Browser(api.client), Claims().posted()).status_code == 404
    assert "Sign in with SSO" not in Browser(api.client).get("/app/sign-in").text
    assert Browser(api.client).get("/app/sign-in/sso").status_code == 404
    assert "jane" not in usernames()


# ----- teams and site admin -------------------------------------------------------------------


def test_teams_and_site_admin_follow_the_groups(saml: Api) -> None:
    from chalicelib.accounts.teams import service as teams_service
    from chalicelib.accounts.teams.store import TeamModel
    from chalicelib.accounts.users import service as users_service

    configure(saml, **{"team-management-enabled": True})
    make_org(saml, "acme")
    developers, _ = make_team(saml, "acme", "developers")
    ops, _ = make_team(saml, "acme", "ops")
    TeamModel(ops).update(actions=[TeamModel.sso_team_id.set("grp-ops")])
    untouched, _ = make_team(saml, "acme", "untouched")

    groups = ["developers", "grp-ops", "site-admins", "no-such-team"]
    assert post(Browser(saml.client), Claims(groups=groups).posted()).status_code == 303
    jane = users_service.find_user_by_name("jane")
    assert jane.is_site_admin
    assert {ref.split("/")[1] for ref in jane.team_refs} == {developers, ops}
    # Added by hand: SAML leaves it alone.
    teams_service.set_team_members(teams_service.find_team(untouched), {jane.id})

    assert post(Browser(saml.client), Claims(groups=["developers"]).posted()).status_code == 303
    jane = users_service.find_user_by_name("jane")
    assert not jane.is_site_admin  # SAML gave it, SAML takes it back
    assert {ref.split("/")[1] for ref in jane.team_refs} == {developers, untouched}
    assert jane.id not in (teams_service.find_team(ops).user_ids or set())


def test_site_admin_from_the_attribute_and_a_flag_given_otherwise_is_kept(saml: Api) -> None:
    from chalicelib.accounts.users import service as users_service

    extra = {"SiteAdmin": ["true"]}
    assert post(Browser(saml.client), Claims(extra=extra).posted()).status_code == 303
    assert users_service.find_user_by_name("jane").is_site_admin
    # The bootstrap admin (made an admin another way) signs in without the flag: kept.
    assert post(Browser(saml.client), Claims(username="admin").posted()).status_code == 303
    assert users_service.find_user_by_name("admin").is_site_admin


def test_an_account_whose_email_is_unconfirmed_is_never_signed_in_to(saml: Api) -> None:
    """Issue 33: "jane", made through an invitation link no mail carried (whoever held the
    link chose her password), is not the identity provider's jane until the address is
    confirmed: refused, nothing changes (no session, no flag, no team)."""
    from chalicelib.accounts.teams import service as teams_service
    from chalicelib.accounts.users import service as users_service
    from tests.web.helpers import join_unmailed

    make_org(saml)
    jane_id = join_unmailed(saml, "jane", "jane@example.com")
    before = users_service.get_user(jane_id)
    assert before.email_unconfirmed
    configure(saml, **{"team-management-enabled": True})
    ops, _ = make_team(saml, "acme", "ops")
    browser = Browser(saml.client)
    claims = Claims(extra={"SiteAdmin": ["true"]}, groups=["ops"])
    refused = post(browser, claims.posted(), relay="/app/organizations")
    assert refused.status_code == 403, refused.text
    assert "email address is not confirmed" in html.unescape(refused.text)
    assert "tfe_registry_session" not in browser.cookies
    after = users_service.get_user(jane_id)
    assert not after.is_site_admin and after.team_refs == before.team_refs
    assert jane_id not in (teams_service.find_team(ops).user_ids or set())
    assert [u.id for u in users_service.all_users() if u.username.lower() == "jane"] == [jane_id]


# ----- the SP's documents ---------------------------------------------------------------------


def test_the_metadata_names_the_entity_id_and_the_acs(saml: Api) -> None:
    sp = key_pair("registry.test")
    configure(saml, certificate=sp.cert)
    reply = Browser(saml.client).get("/users/saml/metadata")
    assert reply.status_code == 200
    assert reply.headers["Content-Type"].startswith("application/samlmetadata+xml")
    root = etree.fromstring(reply.body)
    md = "{urn:oasis:names:tc:SAML:2.0:metadata}"
    assert root.get("entityID") == ENTITY_ID
    acs = root.find(f"{md}SPSSODescriptor/{md}AssertionConsumerService")
    assert acs.get("Location") == ACS
    assert acs.get("Binding") == "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST"
    body = "".join(sp.cert.split("\n")[1:-2])
    assert body in reply.text.replace("\n", "")


def test_a_signed_authn_request_verifies_with_the_sp_certificate(saml: Api) -> None:
    sp = key_pair("registry.test")
    configure(
        saml,
        **{"authn-requests-signed": True, "certificate": sp.cert, "private-key": sp.key.decode()},
    )
    browser = Browser(saml.client)
    reply = browser.get("/app/sign-in/sso")
    assert reply.status_code == 303, reply.text
    query = urlsplit(reply.headers["Location"]).query
    signed_part, _, signature = query.rpartition("&Signature=")
    assert signed_part.startswith("SAMLRequest=") and "&RelayState=" in signed_part
    assert "&SigAlg=http%3A%2F%2Fwww.w3.org%2F2001%2F04%2Fxmldsig-more%23rsa-sha256" in signed_part
    public = x509.load_pem_x509_certificate(sp.cert.encode()).public_key()
    public.verify(  # raises when the signature is not the SP key's over the query as sent
        base64.b64decode(unquote(signature)),
        signed_part.encode(),
        padding.PKCS1v15(),
        hashes.SHA256(),
    )


# ----- sign-out with single logout, debug, unknown groups, break-glass -------------------------


def test_signing_out_of_a_saml_session_sends_a_logout_request_to_the_idp(saml: Api) -> None:
    browser = Browser(saml.client)
    assert post(browser, Claims().posted(), relay="/app/organizations").status_code == 303
    csrf = browser.csrf("/app/organizations")
    reply = browser.post("/app/sign-out", {"csrf_token": csrf})
    request = logout_request(single_logout_link(reply))
    assert any(c.startswith("tfe_registry_session=;") for c in browser.last_set_cookies)
    assert request.tag == f"{{{P}}}LogoutRequest"
    assert request.get("Destination") == "https://idp.example.com/slo"
    assert request.findtext(f"{{{A}}}Issuer") == ENTITY_ID
    name_id = request.find(f"{{{A}}}NameID")
    assert name_id.text == "jane@example.com"
    assert name_id.get("Format") == "urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress"
    # The session ended here first, and its SAML record went with it.
    assert browser.get("/app/organizations").status_code == 303
    from chalicelib.saml.store import SamlStateModel
    from chalicelib.web import store

    assert store.sessions() == []
    assert not [i for i in SamlStateModel.scan() if i.key.startswith("session#")]


def test_a_session_saml_did_not_open_signs_out_locally(saml: Api) -> None:
    browser = Browser(saml.client)
    assert browser.sign_in(saml.token).status_code == 303
    reply = browser.post("/app/sign-out", {"csrf_token": browser.csrf("/app/organizations")})
    assert reply.status_code == 303 and reply.headers["Location"] == "/app/sign-in"


def test_a_signed_logout_request_verifies_with_the_sp_certificate(saml: Api) -> None:
    sp = key_pair("registry.example.com")
    configure(
        saml,
        **{
            "authn-requests-signed": True,
            "certificate": sp.cert,
            "private-key": sp.key.decode(),
        },
    )
    browser = Browser(saml.client)
    assert post(browser, Claims().posted()).status_code == 303
    reply = browser.post("/app/sign-out", {"csrf_token": browser.csrf("/app/organizations")})
    location = single_logout_link(reply)
    logout_request(location)
    raw = urlsplit(location).query
    signed_part, _, signature = raw.rpartition("&Signature=")
    public_key = x509.load_pem_x509_certificate(sp.cert.encode()).public_key()
    assert isinstance(public_key, rsa.RSAPublicKey)
    public_key.verify(
        base64.b64decode(unquote(signature)),
        signed_part.encode(),
        padding.PKCS1v15(),
        hashes.SHA256(),
    )


def test_debug_shows_a_site_admin_the_response_and_the_values_taken(saml: Api) -> None:
    configure(saml, debug=True)
    admin = Browser(saml.client)
    reply = post(admin, Claims(groups=["site-admins", "no-such-team"]).posted(), relay="/app/x")
    assert reply.status_code == 303
    assert reply.headers["Location"] == "/app/sign-in/sso/debug"
    assert not any("debug" in c or "<" in c for c in admin.last_set_cookies)  # kept server-side
    page = admin.get("/app/sign-in/sso/debug")
    assert page.status_code == 200, page.text
    text = page.text
    assert "jane@example.com" in text and "site-admins" in text and "no-such-team" in text
    assert "&lt;saml:Assertion" in text and "<saml:Assertion" not in text  # escaped
    assert 'href="/app/x"' in text  # on to the page asked for
    assert "(left out)" in text
    from chalicelib.saml.metadata import certificate_body

    assert certificate_body(IDP.cert)[:40] not in text  # no certificate, no signature value
    # Anybody else (another browser, signed in or not) sees nothing.
    assert Browser(saml.client).get("/app/sign-in/sso/debug").status_code == 404
    other = Browser(saml.client)
    assert other.sign_in(saml.token).status_code == 303
    assert other.get("/app/sign-in/sso/debug").status_code == 404
    # Someone who is not a site admin goes straight on; so does everyone without debug.
    plain = post(Browser(saml.client), Claims(username="bo", name_id="bo@x.io").posted(), "/app/y")
    assert plain.headers["Location"] == "/app/y"
    configure(saml, debug=False)
    again = post(Browser(saml.client), Claims(groups=["site-admins"]).posted(), relay="/app/z")
    assert again.headers["Location"] == "/app/z"


def test_groups_naming_no_team_are_ignored_and_logged(
    saml: Api, caplog: pytest.LogCaptureFixture
) -> None:
    configure(saml, **{"team-management-enabled": True})
    make_org(saml, "acme")
    make_team(saml, "acme", "developers")
    with caplog.at_level("INFO", logger="registry.saml"):
        reply = post(Browser(saml.client), Claims(groups=["developers", "ghosts"]).posted())
    assert reply.status_code == 303  # signed in all the same
    logged = [r.getMessage() for r in caplog.records if "naming no team" in r.getMessage()]
    assert len(logged) == 1 and "ghosts" in logged[0] and "developers" not in logged[0]


def test_the_bootstrap_admin_token_still_works_with_saml_enabled(saml: Api) -> None:
    assert saml.get(ADMIN).data["attributes"]["enabled"] is True
    me = saml.get("/api/v2/account/details")
    assert me.status == 200 and me.data["attributes"]["is-site-admin"] is True


def test_the_owners_team_follows_groups_only_by_its_sso_team_id(saml: Api) -> None:
    """As TFE: a group named ``owners`` does not make anyone an owner; an owners team whose
    sso-team-id is set follows that group."""
    from chalicelib.accounts.teams import service as teams_service
    from chalicelib.accounts.teams.store import TeamModel
    from chalicelib.accounts.users import service as users_service

    configure(saml, **{"team-management-enabled": True})
    make_org(saml, "acme")
    (owners,) = [t for t in TeamModel.scan() if t.name == "owners" and t.organization == "acme"]
    assert post(Browser(saml.client), Claims(groups=["owners"]).posted()).status_code == 303
    jane = users_service.find_user_by_name("jane")
    assert jane.id not in (teams_service.find_team(owners.id).user_ids or set())

    TeamModel(owners.id).update(actions=[TeamModel.sso_team_id.set("grp-owners")])
    assert post(Browser(saml.client), Claims(groups=["grp-owners"]).posted()).status_code == 303
    assert jane.id in (teams_service.find_team(owners.id).user_ids or set())


# ----- the audit trail ------------------------------------------------------------------------


def test_an_sso_sign_in_its_account_and_a_refused_one_are_recorded(saml: Api) -> None:
    from tests.admin.helpers import events_of, trail_events

    posted = Claims().posted()
    before = len(trail_events())
    assert post(Browser(saml.client), posted).status_code == 303
    made, signed_in = trail_events()[before:]  # the account at the first sign-in, then it
    from chalicelib.accounts.users import service as users_service

    jane = users_service.find_user_by_name("jane")
    assert jane is not None
    assert made["resource"] == {
        "id": jane.id,
        "type": "user",
        "action": "created",
        "meta": {"username": "jane", "via": "sso", "outcome": "succeeded"},
    }
    assert made["auth"]["type"] == "System"  # on the identity provider's word
    assert signed_in["resource"]["action"] == "signed-in"
    assert signed_in["resource"]["meta"] == {"method": "sso", "outcome": "succeeded"}
    assert signed_in["auth"]["accessor_id"] == jane.id

    before = len(trail_events())
    assert post(Browser(saml.client), posted).status_code == 403  # replayed
    assert len(trail_events()) == before + 1
    [refused] = events_of("sign-in-failed")
    assert refused["resource"]["meta"]["method"] == "sso"
    assert refused["resource"]["meta"]["outcome"] == "failed"
    assert posted not in str(refused)
