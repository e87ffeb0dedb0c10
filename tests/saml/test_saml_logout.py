"""SAML single logout at ``/users/saml/slo`` (HTTP-Redirect binding), in process.

The test is the IdP (``tests.saml.helpers``'s key, messages signed over the query string with
``cryptography``) and, for interoperability, pysaml2 (``tests.support.saml_idp``). Accepted: the
IdP's LogoutResponse to our sign-out (the signed-out page, once); the IdP's LogoutRequest
(every session SAML opened for that NameID ends; the browser goes back to the IdP with our
LogoutResponse). Every refusal (forged or missing signature, another key, an unknown,
replayed or expired InResponseTo, another browser, wrong Destination or Issuer, expired,
malformed, not deflated, oversized, a deflate bomb) is a 4xx page that changes nothing."""

from __future__ import annotations

import base64
import html
import os
import re
import zlib
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, quote_plus, unquote, urlsplit

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding
from lxml import etree

from tests.conftest import Api
from tests.saml.helpers import (
    ENTITY_ID,
    IDP,
    OTHER,
    Claims,
    KeyPair,
    configure,
    key_pair,
    logout_request,
    post,
    single_logout_link,
    stamp,
)
from tests.support.web_browser import HOST, Browser

P = "urn:oasis:names:tc:SAML:2.0:protocol"
A = "urn:oasis:names:tc:SAML:2.0:assertion"
SLO = f"http://{HOST}/users/saml/slo"
IDP_SLO = "https://idp.example.com/slo"
IDP_ISSUER = "https://idp.example.com"  # the Issuer of Claims' assertions
RSA_SHA256 = "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256"
RSA_SHA1 = "http://www.w3.org/2000/09/xmldsig#rsa-sha1"
SUCCESS = "urn:oasis:names:tc:SAML:2.0:status:Success"


@pytest.fixture
def saml(api: Api) -> Api:
    configure(api)
    return api


# ----- the test IdP's HTTP-Redirect messages --------------------------------------------------


def deflated(xml: str | bytes) -> str:
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    data = xml.encode() if isinstance(xml, str) else xml
    return base64.b64encode(compressor.compress(data) + compressor.flush()).decode()


def redirect_query(
    field: str,
    message: str,
    keys: KeyPair | None = IDP,
    relay: str | None = None,
    alg: str = RSA_SHA256,
    plus: bool = False,
    lower: bool = False,
) -> str:
    """The query string carrying ``message`` (already deflated and base64), signed over
    ``field=…[&RelayState=…]&SigAlg=…`` with ``keys`` (none: unsigned) as encoded: ``+``
    for a space with ``plus`` (Python's urlencode), lower-case escapes with ``lower``."""

    def encode(value: str) -> str:
        encoded = quote_plus(value, safe="") if plus else quote(value, safe="")
        return re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), encoded) if lower else encoded

    parts = [(field, message)] + ([("RelayState", relay)] if relay is not None else [])
    if keys is not None:
        parts.append(("SigAlg", alg))
    query = "&".join(f"{name}={encode(value)}" for name, value in parts)
    if keys is not None:
        key: Any = serialization.load_pem_private_key(keys.key, password=None)
        digest = hashes.SHA1() if alg == RSA_SHA1 else hashes.SHA256()  # noqa: S303
        signature = key.sign(query.encode(), padding.PKCS1v15(), digest)
        query += "&Signature=" + encode(base64.b64encode(signature).decode())
    return query


def idp_request_xml(
    request_id: str = "",
    name_id: str = "jane@example.com",
    issuer: str = IDP_ISSUER,
    destination: str | None = SLO,
    issued: timedelta = timedelta(0),
    not_on_or_after: timedelta | None = timedelta(minutes=5),
    root: str = "LogoutRequest",
) -> str:
    moment = datetime.now(UTC)
    until = (
        f' NotOnOrAfter="{stamp(moment + not_on_or_after)}"' if not_on_or_after is not None else ""
    )
    to = f' Destination="{destination}"' if destination is not None else ""
    name = f"<saml:NameID>{name_id}</saml:NameID>" if name_id else ""
    return (
        f'<samlp:{root} xmlns:samlp="{P}" xmlns:saml="{A}" '
        f'ID="{request_id or "_lr" + base64.b16encode(rand()).decode()}" Version="2.0" '
        f'IssueInstant="{stamp(moment + issued)}"{to}{until}>'
        f"<saml:Issuer>{issuer}</saml:Issuer>{name}"
        "<samlp:SessionIndex>_s1</samlp:SessionIndex>"
        f"</samlp:{root}>"
    )


def idp_response_xml(
    in_response_to: str,
    issuer: str = IDP_ISSUER,
    destination: str | None = SLO,
    status: str = SUCCESS,
) -> str:
    to = f' Destination="{destination}"' if destination is not None else ""
    return (
        f'<samlp:LogoutResponse xmlns:samlp="{P}" xmlns:saml="{A}" '
        f'ID="_r{base64.b16encode(rand()).decode()}" Version="2.0" '
        f'IssueInstant="{stamp(datetime.now(UTC))}"{to} InResponseTo="{in_response_to}">'
        f"<saml:Issuer>{issuer}</saml:Issuer>"
        f'<samlp:Status><samlp:StatusCode Value="{status}"/></samlp:Status>'
        "</samlp:LogoutResponse>"
    )


def rand() -> bytes:
    return os.urandom(10)


# ----- helpers --------------------------------------------------------------------------------


def signed_in_by_saml(api: Api, claims: Claims | None = None) -> Browser:
    browser = Browser(api.client)
    assert (
        post(browser, (claims or Claims()).posted(), relay="/app/organizations").status_code == 303
    )
    assert is_signed_in(browser)
    return browser


def is_signed_in(browser: Browser) -> bool:
    return bool(browser.get("/app/organizations").status_code == 200)


def sign_out(browser: Browser) -> str:
    """Sign out of a SAML session: the ID of the LogoutRequest sent to the IdP."""
    reply = browser.post("/app/sign-out", {"csrf_token": browser.csrf("/app/organizations")})
    return str(logout_request(single_logout_link(reply)).get("ID"))


def slo(browser: Browser, query: str) -> Any:
    return browser.get("/users/saml/slo?" + query)


def state_keys() -> set[str]:
    from chalicelib.saml.store import SamlStateModel

    return {item.key for item in SamlStateModel.scan()}


def web_sessions() -> set[str]:
    from chalicelib.web import store

    return {item.session_hash for item in store.sessions()}


def refusal_logged(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "registry.web.sso" and "refused" in r.getMessage()
    ]


def idp_reply(location: str) -> tuple[Any, dict[str, list[str]]]:
    """Our LogoutResponse in the redirect to the IdP, and the query carrying it."""
    assert location.startswith(IDP_SLO + "?"), location
    query = parse_qs(urlsplit(location).query)
    xml = zlib.decompress(base64.b64decode(query["SAMLResponse"][0]), -15)
    return etree.fromstring(xml), query


# ----- what the IdP is told -------------------------------------------------------------------


def test_the_metadata_and_the_settings_page_name_the_single_logout_url(saml: Api) -> None:
    root = etree.fromstring(Browser(saml.client).get("/users/saml/metadata").body)
    md = "{urn:oasis:names:tc:SAML:2.0:metadata}"
    (service,) = root.findall(f"{md}SPSSODescriptor/{md}SingleLogoutService")
    assert service.get("Location") == SLO
    assert service.get("Binding") == "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect"
    admin = Browser(saml.client)
    assert admin.sign_in(saml.token).status_code == 303
    page = admin.get("/app/admin/settings/saml")
    assert page.status_code == 200
    assert f'<code id="slo-url">{SLO}</code>' in page.text


# ----- the IdP's LogoutResponse to our sign-out -----------------------------------------------


def test_the_idps_logout_response_shows_the_signed_out_page_once(saml: Api) -> None:
    browser = signed_in_by_saml(saml)
    request_id = sign_out(browser)
    assert f"logout#{request_id}" in state_keys()
    query = redirect_query("SAMLResponse", deflated(idp_response_xml(request_id)))
    reply = slo(browser, query)
    assert reply.status_code == 200, reply.text
    assert "signed out of this registry and of your identity provider" in reply.text
    assert f"logout#{request_id}" not in state_keys()
    assert any(c.startswith("tfe_registry_saml=;") for c in browser.last_set_cookies)
    again = slo(browser, query)  # a replay: the request was answered
    assert again.status_code == 403
    assert "Single logout failed" in again.text


def test_an_unsigned_logout_response_is_accepted_unless_assertions_must_be_signed(
    saml: Api,
) -> None:
    browser = signed_in_by_saml(saml)
    unsigned = redirect_query("SAMLResponse", deflated(idp_response_xml(sign_out(browser))), None)
    assert slo(browser, unsigned).status_code == 200
    configure(saml, **{"want-assertions-signed": True})
    browser = signed_in_by_saml(saml)
    request_id = sign_out(browser)
    unsigned = redirect_query("SAMLResponse", deflated(idp_response_xml(request_id)), None)
    assert slo(browser, unsigned).status_code == 403
    assert f"logout#{request_id}" in state_keys()  # nothing changed
    signed = redirect_query("SAMLResponse", deflated(idp_response_xml(request_id)))
    assert slo(browser, signed).status_code == 200


def test_a_logout_response_that_is_not_success_says_the_idp_may_still_have_a_session(
    saml: Api,
) -> None:
    browser = signed_in_by_saml(saml)
    xml = idp_response_xml(sign_out(browser), status="urn:oasis:names:tc:SAML:2.0:status:Responder")
    reply = slo(browser, redirect_query("SAMLResponse", deflated(xml)))
    assert reply.status_code == 200
    assert "did not confirm" in reply.text


LogoutResponseCase = Callable[[str], tuple[str, Browser | None]]


def _expired(request_id: str) -> str:
    from chalicelib.saml.store import SamlStateModel

    SamlStateModel(f"logout#{request_id}").update(
        actions=[SamlStateModel.expires.set(datetime.now(UTC) - timedelta(seconds=1))]
    )
    return redirect_query("SAMLResponse", deflated(idp_response_xml(request_id)))


def _forged(query: str) -> str:
    head, _, signature = query.rpartition("&Signature=")
    raw = bytearray(base64.b64decode(unquote(signature)))
    raw[10] ^= 1
    return head + "&Signature=" + quote(base64.b64encode(bytes(raw)).decode(), safe="")


HOSTILE_RESPONSES: dict[str, tuple[Callable[[str], str], str]] = {
    "unknown InResponseTo": (
        lambda rid: redirect_query("SAMLResponse", deflated(idp_response_xml("_nope"))),
        "unknown InResponseTo",
    ),
    "expired": (_expired, "unknown InResponseTo"),
    "forged signature": (
        lambda rid: _forged(redirect_query("SAMLResponse", deflated(idp_response_xml(rid)))),
        "signature not valid for idp-cert or old-idp-cert",
    ),
    "another key": (
        lambda rid: redirect_query("SAMLResponse", deflated(idp_response_xml(rid)), OTHER),
        "signature not valid for idp-cert or old-idp-cert",
    ),
    "two SAMLResponse parameters": (
        lambda rid: (
            redirect_query("SAMLResponse", deflated(idp_response_xml(rid)))
            + "&SAMLResponse="
            + quote(deflated(idp_response_xml(rid)), safe="")
        ),
        "SAMLResponse sent twice",
    ),
    "wrong Destination": (
        lambda rid: redirect_query(
            "SAMLResponse", deflated(idp_response_xml(rid, destination="https://evil.test/slo"))
        ),
        "Destination is not the SLO URL",
    ),
    "wrong Issuer": (
        lambda rid: redirect_query(
            "SAMLResponse", deflated(idp_response_xml(rid, issuer="https://evil.test"))
        ),
        "Issuer is not the IdP's entity id",
    ),
    "not deflated": (
        lambda rid: redirect_query(
            "SAMLResponse", base64.b64encode(idp_response_xml(rid).encode()).decode()
        ),
        "not deflated",
    ),
    "an InResponseTo no key can hold": (  # unsigned: accepted while assertions need not be
        lambda rid: redirect_query(
            "SAMLResponse", deflated(idp_response_xml("_" + "a" * 3000)), None
        ),
        "unknown InResponseTo",
    ),
    "a LogoutRequest": (
        lambda rid: redirect_query("SAMLResponse", deflated(idp_request_xml())),
        "unknown InResponseTo",
    ),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_RESPONSES))
def test_a_hostile_logout_response_is_refused_and_changes_nothing(
    saml: Api, case: str, caplog: pytest.LogCaptureFixture
) -> None:
    make, detail = HOSTILE_RESPONSES[case]
    browser = signed_in_by_saml(saml)
    request_id = sign_out(browser)
    query = make(request_id)
    before = state_keys()
    reply = slo(browser, query)
    assert 400 <= reply.status_code < 500, (case, reply.status_code)
    assert "Single logout failed" in reply.text
    assert refusal_logged(caplog) == [f"saml single logout refused: {detail}"]
    assert state_keys() == before  # the request is still outstanding (unless it expired)
    assert not any(c.startswith("tfe_registry_saml=;") for c in browser.last_set_cookies)


def test_a_logout_response_from_another_browser_is_refused(saml: Api) -> None:
    browser = signed_in_by_saml(saml)
    request_id = sign_out(browser)
    query = redirect_query("SAMLResponse", deflated(idp_response_xml(request_id)))
    assert slo(Browser(saml.client), query).status_code == 403  # no cookie of the browser
    assert slo(browser, query).status_code == 200


# ----- the IdP's LogoutRequest ----------------------------------------------------------------


def test_the_idps_logout_request_ends_every_saml_session_of_that_person(saml: Api) -> None:
    from chalicelib.core.auth import TokenModel

    first, second = signed_in_by_saml(saml), signed_in_by_saml(saml)
    other = signed_in_by_saml(saml, Claims(username="bo", name_id="bo@example.com"))
    pasted = Browser(saml.client)
    assert pasted.sign_in(saml.token).status_code == 303  # not opened by SAML: stays
    tokens_before = {t.token_hash for t in TokenModel.scan()}
    xml = idp_request_xml("_idp-logout-1")
    reply = slo(first, redirect_query("SAMLRequest", deflated(xml), relay="back-to-idp"))
    assert reply.status_code == 303, reply.text
    answer, query = idp_reply(reply.headers["Location"])
    assert answer.tag == f"{{{P}}}LogoutResponse"
    assert answer.get("InResponseTo") == "_idp-logout-1"
    assert answer.get("Destination") == IDP_SLO
    assert answer.findtext(f"{{{A}}}Issuer") == ENTITY_ID
    assert answer.find(f"{{{P}}}Status/{{{P}}}StatusCode").get("Value") == SUCCESS
    assert query["RelayState"] == ["back-to-idp"]
    assert any(c.startswith("tfe_registry_session=;") for c in first.last_set_cookies)
    assert "Signature" not in query  # authn-requests-signed is off
    assert not is_signed_in(first) and not is_signed_in(second)
    assert is_signed_in(other) and is_signed_in(pasted)
    assert len(tokens_before - {t.token_hash for t in TokenModel.scan()}) == 2  # minted ones
    assert len([k for k in state_keys() if k.startswith("session#")]) == 1  # bo's is kept
    # The same request again is a replay.
    assert slo(first, redirect_query("SAMLRequest", deflated(xml))).status_code == 403


def test_a_logout_request_for_someone_without_a_session_still_succeeds(saml: Api) -> None:
    reply = slo(Browser(saml.client), redirect_query("SAMLRequest", deflated(idp_request_xml())))
    assert reply.status_code == 303
    answer, _ = idp_reply(reply.headers["Location"])
    assert answer.find(f"{{{P}}}Status/{{{P}}}StatusCode").get("Value") == SUCCESS


def test_our_logout_response_is_signed_when_requests_are(saml: Api) -> None:
    sp = key_pair("registry.example.com")
    configure(
        saml,
        **{"authn-requests-signed": True, "certificate": sp.cert, "private-key": sp.key.decode()},
    )
    browser = signed_in_by_saml(saml)
    reply = slo(browser, redirect_query("SAMLRequest", deflated(idp_request_xml())))
    assert reply.status_code == 303
    assert not is_signed_in(browser)
    raw = urlsplit(reply.headers["Location"]).query
    signed_part, _, signature = raw.rpartition("&Signature=")
    assert signed_part.startswith("SAMLResponse=") and "&SigAlg=" in signed_part
    public_key: Any = x509.load_pem_x509_certificate(sp.cert.encode()).public_key()
    public_key.verify(
        base64.b64decode(unquote(signature)),
        signed_part.encode(),
        padding.PKCS1v15(),
        hashes.SHA256(),
    )


def test_the_encodings_idps_sign_with_and_the_old_certificate_are_accepted(saml: Api) -> None:
    browser = signed_in_by_saml(saml)
    query = redirect_query("SAMLRequest", deflated(idp_request_xml()), relay="a b/c", plus=True)
    assert slo(browser, query).status_code == 303  # '+' for a space (urlencode, pysaml2)
    assert not is_signed_in(browser)
    browser = signed_in_by_saml(saml)
    query = redirect_query("SAMLRequest", deflated(idp_request_xml()), relay="x/y", lower=True)
    assert "%2f" in query  # AD FS escapes in lower case
    assert slo(browser, query).status_code == 303
    browser = signed_in_by_saml(saml)
    configure(saml, **{"idp-cert": OTHER.cert})  # rotation: IDP is now old-idp-cert
    assert (
        slo(browser, redirect_query("SAMLRequest", deflated(idp_request_xml()))).status_code == 303
    )
    assert not is_signed_in(browser)


def _bomb() -> str:
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    data = compressor.compress(b"<a>" + b" " * 10_000_000) + compressor.flush()
    return base64.b64encode(data).decode()


def _truncated() -> str:
    return base64.b64encode(base64.b64decode(deflated(idp_request_xml()))[:-8]).decode()


HOSTILE_REQUESTS: dict[str, tuple[Callable[[], str], str]] = {
    "unsigned": (
        lambda: redirect_query("SAMLRequest", deflated(idp_request_xml()), None),
        "unsigned logout message",
    ),
    "forged signature": (
        lambda: _forged(redirect_query("SAMLRequest", deflated(idp_request_xml()))),
        "signature not valid for idp-cert or old-idp-cert",
    ),
    "another key": (
        lambda: redirect_query("SAMLRequest", deflated(idp_request_xml()), OTHER),
        "signature not valid for idp-cert or old-idp-cert",
    ),
    "SHA-1 not allowed": (
        lambda: redirect_query("SAMLRequest", deflated(idp_request_xml()), alg=RSA_SHA1),
        "bad SigAlg or size",
    ),
    "wrong Destination": (
        lambda: redirect_query(
            "SAMLRequest", deflated(idp_request_xml(destination="https://evil.test/slo"))
        ),
        "Destination is not the SLO URL",
    ),
    "no Destination": (
        lambda: redirect_query("SAMLRequest", deflated(idp_request_xml(destination=None))),
        "no Destination",
    ),
    "wrong Issuer": (
        lambda: redirect_query("SAMLRequest", deflated(idp_request_xml(issuer="https://evil"))),
        "Issuer is not the IdP's entity id",
    ),
    "expired NotOnOrAfter": (
        lambda: redirect_query(
            "SAMLRequest", deflated(idp_request_xml(not_on_or_after=timedelta(minutes=-5)))
        ),
        "expired LogoutRequest",
    ),
    "issued long ago": (
        lambda: redirect_query(
            "SAMLRequest",
            deflated(idp_request_xml(issued=timedelta(minutes=-20), not_on_or_after=None)),
        ),
        "expired LogoutRequest",
    ),
    "issued in the future": (
        lambda: redirect_query(
            "SAMLRequest", deflated(idp_request_xml(issued=timedelta(minutes=10)))
        ),
        "IssueInstant",
    ),
    "no NameID": (
        lambda: redirect_query("SAMLRequest", deflated(idp_request_xml(name_id=""))),
        "no NameID",
    ),
    "a LogoutResponse": (
        lambda: redirect_query("SAMLRequest", deflated(idp_response_xml("_x"))),
        "not a LogoutRequest",
    ),
    "not base64": (lambda: redirect_query("SAMLRequest", "%%%not base64%%%"), "not base64"),
    "not deflated": (
        lambda: redirect_query(
            "SAMLRequest", base64.b64encode(idp_request_xml().encode()).decode()
        ),
        "not deflated",
    ),
    "truncated": (lambda: redirect_query("SAMLRequest", _truncated()), "truncated deflate"),
    "not XML": (lambda: redirect_query("SAMLRequest", deflated("<a><b></a>")), "bad XML"),
    "a DTD": (
        lambda: redirect_query(
            "SAMLRequest",
            deflated('<!DOCTYPE a [<!ENTITY e "jane@example.com">]>' + idp_request_xml()),
        ),
        "DTD in the Response",
    ),
    "oversized": (
        lambda: redirect_query("SAMLRequest", deflated(b"<a>" + os.urandom(20_000) + b"</a>")),
        "bad size",
    ),
    "deflate bomb": (lambda: redirect_query("SAMLRequest", _bomb()), "too large inflated"),
    "neither message": (lambda: "RelayState=x", ""),
    "an ID no key can hold": (
        lambda: redirect_query("SAMLRequest", deflated(idp_request_xml("_" + "a" * 3000))),
        "not a LogoutRequest",
    ),
    "a RelayState too long": (
        lambda: redirect_query("SAMLRequest", deflated(idp_request_xml()), relay="r" * 1025),
        "RelayState too long",
    ),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_REQUESTS))
def test_a_hostile_logout_request_is_refused_and_ends_nothing(
    saml: Api, case: str, caplog: pytest.LogCaptureFixture
) -> None:
    make, detail = HOSTILE_REQUESTS[case]
    browser = signed_in_by_saml(saml)
    query = make()
    before, sessions = state_keys(), web_sessions()
    reply = slo(browser, query)
    assert 400 <= reply.status_code < 500, (case, reply.status_code, reply.text[:300])
    assert "Single logout failed" in reply.text
    if detail:
        assert refusal_logged(caplog) == [f"saml single logout refused: {detail}"]
    assert state_keys() == before and web_sessions() == sessions
    assert is_signed_in(browser)


def test_nothing_at_the_slo_url_while_saml_is_disabled(saml: Api) -> None:
    browser = signed_in_by_saml(saml)
    configure(saml, enabled=False)
    query = redirect_query("SAMLRequest", deflated(idp_request_xml()))
    assert slo(browser, query).status_code == 404
    configure(saml, enabled=True)
    assert is_signed_in(browser)


def test_nothing_of_the_messages_is_logged(saml: Api, caplog: pytest.LogCaptureFixture) -> None:
    browser = signed_in_by_saml(saml)
    query = redirect_query("SAMLRequest", deflated(idp_request_xml()), relay="r")
    with caplog.at_level("DEBUG"):
        assert slo(browser, query).status_code == 303
        assert slo(browser, _forged(query)).status_code == 403
    logged = "\n".join(r.getMessage() for r in caplog.records)
    signature = unquote(query.rpartition("&Signature=")[2])
    message = unquote(query.split("&")[0].split("=", 1)[1])
    assert signature[:20] not in logged and message[:20] not in logged
    assert "SAMLRequest=" not in logged and "SAMLResponse=" not in logged


# ----- pysaml2, an independent IdP ------------------------------------------------------------


@pytest.fixture
def pysaml2_idp(saml: Api, tmp_path: Path) -> Any:
    from tests.support.saml_idp import Idp

    metadata = Browser(saml.client).get("/users/saml/metadata").text
    idp = Idp(tmp_path, "https://idp.example.com", metadata)
    configure(saml, **{"idp-cert": idp.cert})
    return idp


def _pysaml2_sign_in(api: Api, idp: Any) -> Browser:
    form = idp.unsolicited(idp.server, "/app/organizations")
    posted = html.unescape(re.search(r'name="SAMLResponse" value="([^"]+)"', form).group(1))
    browser = Browser(api.client)
    assert post(browser, posted).status_code == 303
    return browser


def test_pysaml2s_logout_request_and_logout_response_are_accepted(
    saml: Api, pysaml2_idp: Any
) -> None:
    idp = pysaml2_idp
    browser = _pysaml2_sign_in(saml, idp)
    assert is_signed_in(browser)
    location = idp.logout_request_url(idp.user.email, relay="rs")
    reply = browser.get(location.removeprefix(f"http://{HOST}"))
    assert reply.status_code == 303, reply.text
    assert not is_signed_in(browser)
    response = idp.server.parse_logout_request_response(
        parse_qs(urlsplit(reply.headers["Location"]).query)["SAMLResponse"][0],
        "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect",
    )
    assert response.response.status.status_code.value == SUCCESS
    # Another key, and unsigned: refused.
    browser = _pysaml2_sign_in(saml, idp)
    forged = idp.logout_request_url(idp.user.email, other=True)
    assert browser.get(forged.removeprefix(f"http://{HOST}")).status_code == 403
    unsigned = idp.logout_request_url(idp.user.email, sign=False)
    assert browser.get(unsigned.removeprefix(f"http://{HOST}")).status_code == 403
    assert is_signed_in(browser)
    # Our sign-out: pysaml2 answers with a signed LogoutResponse, accepted once.
    reply = browser.post("/app/sign-out", {"csrf_token": browser.csrf("/app/organizations")})
    location = single_logout_link(reply)
    page = idp.single_logout({k: v[0] for k, v in parse_qs(urlsplit(location).query).items()})
    back = html.unescape(re.search(r'id="back" href="([^"]+)"', page).group(1))
    answered = browser.get(back.removeprefix(f"http://{HOST}"))
    assert answered.status_code == 200, answered.text
    assert "signed out of this registry and of your identity provider" in answered.text
    assert browser.get(back.removeprefix(f"http://{HOST}")).status_code == 403


def test_without_a_key_to_sign_our_answer_the_sessions_still_end(
    saml: Api, caplog: pytest.LogCaptureFixture
) -> None:
    sp = key_pair("registry.example.com")
    unreadable = {"certificate": sp.cert, "private-key": "not a PEM key"}
    configure(saml, **{"authn-requests-signed": True, **unreadable})
    browser = signed_in_by_saml(saml)
    reply = slo(browser, redirect_query("SAMLRequest", deflated(idp_request_xml())))
    assert reply.status_code == 200, reply.text
    assert "signed out of this registry" in reply.text
    assert not is_signed_in(browser)
    assert "saml logout response not sent: the SP private key is not an unencrypted PEM key" in [
        r.getMessage() for r in caplog.records
    ]
