"""SP-initiated sign-in: the AuthnRequest, sent by the HTTP-Redirect binding; and the
LogoutRequest (sign-out) and LogoutResponse (to an IdP's LogoutRequest), sent the same way.

``start(config, browser_secret, return_to)`` records the request (its ID, the browser, where
to return) and answers the URL of ``sso-endpoint-url`` carrying ``SAMLRequest`` (raw DEFLATE,
base64) and ``RelayState``. With ``authn-requests-signed`` the query string is signed as the
binding says (SAML bindings §3.4.4.1): the signature covers
``SAMLRequest=…&RelayState=…&SigAlg=…`` exactly as sent, made with the SP ``private-key``
and the ``signature-signing-method`` (the digest method applies to XML signatures, which the
redirect binding has none of). The browser is tied to the request by the cookie
``BROWSER_COOKIE`` (``SameSite=None; Secure``: the IdP's cross-site POST back must carry it).
"""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
import zlib
from datetime import timedelta
from urllib.parse import quote, urlsplit
from xml.sax.saxutils import quoteattr

from chalicelib.core.data.ids import now
from chalicelib.saml import config as saml_config
from chalicelib.saml import store
from chalicelib.saml.config import SamlConfig
from chalicelib.saml.errors import SamlRefused
from chalicelib.saml.metadata import POST_BINDING

BROWSER_COOKIE = "tfe_registry_saml"
REQUEST_SECONDS = 15 * 60  # time to sign in at the IdP (MFA included)
_BROWSER_SECRET = re.compile(r"[A-Za-z0-9_-]{43}")
SIG_ALGS = {
    "SHA1": "http://www.w3.org/2000/09/xmldsig#rsa-sha1",
    "SHA256": "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256",
}
EC_SIG_ALGS = {
    "SHA1": "http://www.w3.org/2001/04/xmldsig-more#ecdsa-sha1",
    "SHA256": "http://www.w3.org/2001/04/xmldsig-more#ecdsa-sha256",
}


def browser_hash(secret: str | None) -> str | None:
    """The stored form of the browser cookie (None for a missing or malformed one)."""
    if not secret or not _BROWSER_SECRET.fullmatch(secret):
        return None
    return hashlib.sha256(secret.encode()).hexdigest()


def browser_cookie(secret: str) -> str:
    return (
        f"{BROWSER_COOKIE}={secret}; Max-Age={REQUEST_SECONDS}; Path=/users/saml; "
        "HttpOnly; Secure; SameSite=None"
    )


def browser_cookie_cleared() -> str:
    return f"{BROWSER_COOKIE}=; Max-Age=0; Path=/users/saml; HttpOnly; Secure; SameSite=None"


def authn_request(config: SamlConfig, request_id: str, issued: str) -> str:
    destination = config.text("sso-endpoint-url")
    return (
        '<samlp:AuthnRequest xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" '
        'xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" '
        f'ID="{request_id}" Version="2.0" IssueInstant="{issued}" '
        f"Destination={quoteattr(destination)} "
        f"AssertionConsumerServiceURL={quoteattr(config.acs_url)} "
        f'ProtocolBinding="{POST_BINDING}">'
        f"<saml:Issuer>{config.entity_id.replace('&', '&amp;').replace('<', '&lt;')}"
        "</saml:Issuer></samlp:AuthnRequest>"
    )


def _deflated(xml: str) -> str:
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    data = compressor.compress(xml.encode()) + compressor.flush()
    return base64.b64encode(data).decode("ascii")


def _sign(query: str, method: str) -> tuple[str, str]:
    """(SigAlg, signature) over ``query`` with the SP private key."""
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa

    pem = saml_config.private_key()
    if not pem:
        raise SamlRefused(
            "This registry is set to sign its sign-in requests but has no private key.",
            log_detail="authn-requests-signed without a private key",
        )
    try:
        key = serialization.load_pem_private_key(pem.encode(), password=None)
    except (ValueError, TypeError):
        raise SamlRefused(
            "This registry's SAML private key cannot be read.",
            log_detail="the SP private key is not an unencrypted PEM key",
        ) from None
    digest = hashes.SHA1() if method == "SHA1" else hashes.SHA256()  # noqa: S303 - configured
    if isinstance(key, rsa.RSAPrivateKey):
        alg = SIG_ALGS[method]
        query += "&SigAlg=" + quote(alg, safe="")
        signature = key.sign(query.encode(), padding.PKCS1v15(), digest)
    elif isinstance(key, ec.EllipticCurvePrivateKey):
        alg = EC_SIG_ALGS[method]
        query += "&SigAlg=" + quote(alg, safe="")
        signature = key.sign(query.encode(), ec.ECDSA(digest))
    else:
        raise SamlRefused(
            "This registry's SAML private key is of a kind it cannot sign with.",
            log_detail="the SP private key is neither RSA nor EC",
        )
    return alg, base64.b64encode(signature).decode("ascii")


def start(config: SamlConfig, secret: str, return_to: str) -> str:
    """Record a new AuthnRequest for the browser holding ``secret`` and answer the IdP URL
    to send it to."""
    endpoint = config.text("sso-endpoint-url")
    if not config.enabled or urlsplit(endpoint).scheme not in ("https", "http"):
        raise SamlRefused(
            "Single sign-on is not set up on this registry.",
            "Sign in with your password or an API token, or ask your administrator to "
            "enable SAML single sign-on.",
            status=404,
        )
    moment = now()
    request_id = "_" + secrets.token_hex(20)
    issued = moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    hashed = browser_hash(secret)
    assert hashed is not None  # the caller made or checked the secret
    store.remember_request(
        request_id, hashed, return_to, moment + timedelta(seconds=REQUEST_SECONDS)
    )
    return _redirect(config, endpoint, authn_request(config, request_id, issued), return_to)


def _redirect(
    config: SamlConfig, endpoint: str, xml: str, relay: str | None, field: str = "SAMLRequest"
) -> str:
    """``endpoint`` carrying the message ``xml`` (a request, or with ``field``
    "SAMLResponse" a response) by the HTTP-Redirect binding (signed when
    ``authn-requests-signed``)."""
    query = field + "=" + quote(_deflated(xml), safe="")
    if relay is not None:
        query += "&RelayState=" + quote(relay, safe="")
    if config.values.get("authn-requests-signed"):
        method = str(config.values.get("signature-signing-method") or "SHA256")
        alg, signature = _sign(query, method)
        query += "&SigAlg=" + quote(alg, safe="") + "&Signature=" + quote(signature, safe="")
    return endpoint + ("&" if "?" in endpoint else "?") + query


def _escaped(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def logout_request(
    config: SamlConfig,
    request_id: str,
    issued: str,
    name_id: str,
    name_id_format: str | None,
    session_index: str | None,
) -> str:
    """The LogoutRequest (SAML core §3.7.1) naming the person the IdP signed in."""
    destination = config.text("slo-endpoint-url")
    fmt = f" Format={quoteattr(name_id_format)}" if name_id_format else ""
    index = (
        f"<samlp:SessionIndex>{_escaped(session_index)}</samlp:SessionIndex>"
        if session_index
        else ""
    )
    return (
        '<samlp:LogoutRequest xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" '
        'xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" '
        f'ID="{request_id}" Version="2.0" IssueInstant="{issued}" '
        f"Destination={quoteattr(destination)}>"
        f"<saml:Issuer>{_escaped(config.entity_id)}</saml:Issuer>"
        f"<saml:NameID{fmt}>{_escaped(name_id)}</saml:NameID>{index}"
        "</samlp:LogoutRequest>"
    )


def single_logout(
    config: SamlConfig,
    name_id: str,
    name_id_format: str | None,
    session_index: str | None,
    secret: str,
    issuer: str | None = None,
) -> str | None:
    """The IdP's single logout URL carrying a LogoutRequest for the person (None when SAML
    is off or ``slo-endpoint-url`` is not an http(s) URL). The request is recorded for the
    browser holding ``secret`` (the ``BROWSER_COOKIE``), with the IdP ``issuer`` that
    signed the person in: the IdP's LogoutResponse to ``/users/saml/slo`` must answer it
    (``logout.answered``). This registry has already ended its own session."""
    endpoint = config.text("slo-endpoint-url")
    if not config.enabled or urlsplit(endpoint).scheme not in ("https", "http"):
        return None
    moment = now()
    request_id = "_" + secrets.token_hex(20)
    xml = logout_request(
        config,
        request_id,
        moment.strftime("%Y-%m-%dT%H:%M:%SZ"),
        name_id,
        name_id_format,
        session_index,
    )
    location = _redirect(config, endpoint, xml, None)  # signs (or refuses) before recording
    hashed = browser_hash(secret)
    assert hashed is not None  # the caller made or checked the secret
    expires = moment + timedelta(seconds=REQUEST_SECONDS)
    store.remember_request(request_id, hashed, None, expires, kind="logout", issuer=issuer)
    return location


def logout_response(config: SamlConfig, in_response_to: str, relay: str | None) -> str | None:
    """The IdP's single logout URL carrying our LogoutResponse (Status Success) to its
    LogoutRequest ``in_response_to`` (SAML core §3.7.2), signed as our requests are; None
    when ``slo-endpoint-url`` is not an http(s) URL."""
    endpoint = config.text("slo-endpoint-url")
    if urlsplit(endpoint).scheme not in ("https", "http"):
        return None
    issued = now().strftime("%Y-%m-%dT%H:%M:%SZ")
    xml = (
        '<samlp:LogoutResponse xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" '
        'xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" '
        f'ID="_{secrets.token_hex(20)}" Version="2.0" IssueInstant="{issued}" '
        f"Destination={quoteattr(endpoint)} InResponseTo={quoteattr(in_response_to)}>"
        f"<saml:Issuer>{_escaped(config.entity_id)}</saml:Issuer>"
        '<samlp:Status><samlp:StatusCode Value="urn:oasis:names:tc:SAML:2.0:status:Success"/>'
        "</samlp:Status></samlp:LogoutResponse>"
    )
    return _redirect(config, endpoint, xml, relay, field="SAMLResponse")


def new_browser_secret() -> str:
    return secrets.token_urlsafe(32)
