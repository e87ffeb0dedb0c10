"""``terraform login``: the OAuth 2.0 authorization-code grant with PKCE (RFC 6749, RFC 7636)
that terraform's "Server-side Login Protocol" describes, for one public client.

How it goes:

* ``/.well-known/terraform.json`` advertises ``login.v1`` (``LOGIN_V1``; the meta function
  serves its own copy, ``tests/test_login.py`` keeps the two equal): the client id
  ``terraform-cli``, the ``authz_code`` grant, the authorization endpoint (a UI page,
  ``AUTHZ_PATH``), the token endpoint (``TOKEN_PATH``) and the loopback ports
  (``PORTS``) terraform may listen on for the answer. The CLI resolves the two relative
  paths against the discovery document's URL.
* The CLI opens the browser at the authorization endpoint with ``response_type=code``,
  ``client_id``, ``redirect_uri=http://localhost:<port>/login``, ``state`` and an S256
  ``code_challenge``. ``authorization_request`` checks them; a redirect URI that is not a
  loopback ``http`` URL on an advertised port is never redirected to.
* A signed-in user approves (``chalicelib.web.login``): ``issue_code`` stores a single-use
  code (256 random bits; only its SHA-256 is kept, with the client id, redirect URI,
  challenge, user and an expiry ``CODE_SECONDS`` ahead) and the browser goes back to the
  redirect URI with ``code`` and ``state``.
* The CLI posts the code and its ``code_verifier`` to the token endpoint: ``exchange``
  consumes the code with one conditional UpdateItem (a second use fails, and revokes the
  token the first use got, as RFC 6749 section 4.1.2 advises), checks client, redirect URI,
  expiry and ``BASE64URL(SHA256(verifier)) == challenge`` (constant time), then creates a
  new user API token through the accounts service. The token is in the response body only:
  never in a URL, a log or this table.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import logging
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import urlencode

from pynamodb.exceptions import PynamoDBException, UpdateError

from chalicelib.accounts import signin
from chalicelib.accounts.tokens import service as tokens_service
from chalicelib.core.api.errors import NotFound
from chalicelib.core.audit.events import Event
from chalicelib.core.auth import Principal, TokenModel, hash_token
from chalicelib.core.data import db
from chalicelib.core.data.ids import now
from chalicelib.web import store
from chalicelib.web.store import LoginCodeModel

log = logging.getLogger("registry.web")

CLIENT_ID = "terraform-cli"
# What a terraform login's sign-in event (and a refused one's) says of its client.
TERRAFORM_LOGIN = {"client": "terraform-login"}
AUTHZ_PATH = "/app/oauth/authorize"
TOKEN_PATH = "/oauth/token"
PORTS = (10000, 10010)
LOGIN_V1 = {
    "client": CLIENT_ID,
    "grant_types": ["authz_code"],
    "authz": AUTHZ_PATH,
    "token": TOKEN_PATH,
    "ports": list(PORTS),
}
CODE_SECONDS = 60
_CODE_BYTES = 32
MAX_STATE_LENGTH = 512

# The whole redirect URI, matched as a string (no URL parser to disagree with a browser's):
# plain http, a loopback host name, a port without leading zero, a path of unreserved
# characters (no empty segment); no user info, query or fragment.
_REDIRECT_URI = re.compile(
    r"http://(localhost|127\.0\.0\.1):([1-9][0-9]{3,4})"
    r"(/(?:[A-Za-z0-9._~-]+(?:/[A-Za-z0-9._~-]+)*/?)?)"
)
_CHALLENGE = re.compile(r"[A-Za-z0-9_-]{43}")  # BASE64URL(SHA-256), unpadded
_VERIFIER = re.compile(r"[A-Za-z0-9._~-]{43,128}")  # RFC 7636 section 4.1
_STATE = re.compile(r"[\x20-\x7e]+")


class AuthorizationRefused(Exception):
    """An authorization request the page refuses with a 400 (never a redirect)."""


class OAuthError(Exception):
    """A token endpoint error (RFC 6749 section 5.2): ``error`` code, description, status."""

    def __init__(self, error: str, description: str, status: int = 400) -> None:
        super().__init__(description)
        self.error = error
        self.description = description
        self.status = status

    def to_dict(self) -> dict[str, str]:
        return {"error": self.error, "error_description": self.description}


# ----- the authorization request ----------------------------------------------------------


@dataclass(frozen=True)
class AuthorizationRequest:
    client_id: str
    redirect_uri: str
    state: str
    code_challenge: str

    @property
    def origin(self) -> str:
        """``http://localhost:<port>``: where the answer goes (for the page's CSP)."""
        return self.redirect_uri[: self.redirect_uri.index("/", len("http://"))]

    @property
    def port(self) -> int:
        return int(self.origin.rsplit(":", 1)[1])

    def hidden_fields(self) -> dict[str, str]:
        """The request again, for the consent form's hidden fields."""
        return {
            "response_type": "code",
            "client_id": self.client_id,
            "redirect_uri": self.redirect_uri,
            "state": self.state,
            "code_challenge": self.code_challenge,
            "code_challenge_method": "S256",
        }


def check_redirect_uri(uri: str | None) -> str:
    """``uri`` when it is ``http://localhost:<port>/…`` or ``http://127.0.0.1:<port>/…`` with
    an advertised port; anything else raises ``AuthorizationRefused``."""
    match = _REDIRECT_URI.fullmatch(uri) if uri and len(uri) <= 256 else None
    if match is None:
        raise AuthorizationRefused(
            "redirect_uri must be http://localhost:<port>/… (or 127.0.0.1) with no user name, "
            "query or fragment"
        )
    if not PORTS[0] <= int(match.group(2)) <= PORTS[1]:
        raise AuthorizationRefused(
            f"redirect_uri must use a port from {PORTS[0]} to {PORTS[1]}, as the discovery "
            "document's login.v1 advertises"
        )
    return match.group(0)


def authorization_request(params: Mapping[str, str]) -> AuthorizationRequest:
    """Check an authorization request (the page's query, or the consent form's fields)."""
    if params.get("client_id") != CLIENT_ID:
        raise AuthorizationRefused(f"unknown client_id: this server knows only {CLIENT_ID!r}")
    redirect_uri = check_redirect_uri(params.get("redirect_uri"))
    if params.get("response_type") != "code":
        raise AuthorizationRefused("response_type must be 'code'")
    if params.get("code_challenge_method") != "S256":
        raise AuthorizationRefused("PKCE is required: code_challenge_method must be 'S256'")
    challenge = params.get("code_challenge") or ""
    if not _CHALLENGE.fullmatch(challenge):
        raise AuthorizationRefused("code_challenge must be BASE64URL(SHA-256(code_verifier))")
    state = params.get("state") or ""
    if not _STATE.fullmatch(state) or len(state) > MAX_STATE_LENGTH:
        raise AuthorizationRefused("state is required (printable ASCII, at most 512 characters)")
    return AuthorizationRequest(CLIENT_ID, redirect_uri, state, challenge)


def redirect_with(redirect_uri: str, **params: str) -> str:
    """The loopback URI with the answer in its query (it has none of its own)."""
    return f"{redirect_uri}?{urlencode(params)}"


# ----- codes ------------------------------------------------------------------------------


def pkce_challenge(verifier: str) -> str:
    """``BASE64URL(SHA256(verifier))`` without padding (RFC 7636 section 4.2, S256)."""
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def pkce_matches(verifier: str, challenge: str) -> bool:
    return hmac.compare_digest(pkce_challenge(verifier).encode(), challenge.encode())


def issue_code(request: AuthorizationRequest, principal: Principal) -> str:
    """A new single-use code for ``principal`` (a user) approving ``request``."""
    assert principal.is_user, "only a user can approve terraform login"
    code = secrets.token_urlsafe(_CODE_BYTES)
    moment = now()
    LoginCodeModel(
        hash_token(code),
        client_id=request.client_id,
        redirect_uri=request.redirect_uri,
        code_challenge=request.code_challenge,
        user_id=principal.id,
        approved_with=principal.token_id,
        created_at=moment,
        expires=moment + timedelta(seconds=CODE_SECONDS),
    ).save(condition=LoginCodeModel.code_hash.does_not_exist())
    return code


def _consume(code: str) -> LoginCodeModel:
    """Mark the code used, atomically: exactly one caller ever gets it."""
    item = LoginCodeModel(hash_token(code))
    try:
        item.update(
            actions=[LoginCodeModel.used_at.set(now())],
            condition=LoginCodeModel.code_hash.exists() & LoginCodeModel.used_at.does_not_exist(),
        )
    except UpdateError as failed:
        if not db.conditional_failure(failed):
            raise
        _replayed(code)
        raise OAuthError("invalid_grant", "the authorization code is unknown or was used") from None
    return item


def _replayed(code: str) -> None:
    """A used code presented again: revoke the token its first use got (RFC 6749 4.1.2)."""
    item = store.login_code(hash_token(code))
    if item is not None and item.token_id:
        owner = Principal(kind="user", id=item.user_id, token_id=item.approved_with)
        with contextlib.suppress(NotFound):  # already revoked
            tokens_service.delete_token_by_id(owner, item.token_id)


def token_description(moment: datetime | None = None) -> str:
    return f"terraform login ({(moment or now()):%Y-%m-%d %H:%M} UTC)"


def exchange(form: Mapping[str, str], basic_client_id: str | None = None) -> str:
    """The token endpoint's work: a new user API token (its secret) for a valid code, or
    ``OAuthError``. ``basic_client_id``: the user name of an ``Authorization: Basic`` header
    (a client may identify itself that way instead of ``client_id``)."""
    grant_type = form.get("grant_type")
    if not grant_type:
        raise OAuthError("invalid_request", "grant_type is required")
    if grant_type != "authorization_code":
        raise OAuthError("unsupported_grant_type", "only authorization_code is supported")
    client_id = form.get("client_id") or basic_client_id
    if client_id != CLIENT_ID:
        raise OAuthError("invalid_client", f"unknown client: only {CLIENT_ID!r}", 401)
    code = form.get("code") or ""
    redirect_uri = form.get("redirect_uri") or ""
    verifier = form.get("code_verifier") or ""
    if not code or not redirect_uri:
        raise OAuthError("invalid_request", "code and redirect_uri are required")
    if not _VERIFIER.fullmatch(verifier):
        raise OAuthError("invalid_request", "code_verifier is required (43-128 characters)")
    if len(code) > 128:
        raise OAuthError("invalid_grant", "the authorization code is unknown or was used")
    item = _consume(code)
    if item.expires <= now():
        raise OAuthError("invalid_grant", "the authorization code has expired")
    if item.client_id != client_id or item.redirect_uri != redirect_uri:
        raise OAuthError("invalid_grant", "the code was issued for another client or redirect_uri")
    if not pkce_matches(verifier, item.code_challenge):
        raise OAuthError("invalid_grant", "code_verifier does not match the code_challenge")
    owner = Principal(kind="user", id=item.user_id, token_id=item.approved_with)

    def signed_in(token: TokenModel) -> Event:
        """The token is the sign-in's outcome: one event, the sign-in, naming it."""
        who = Principal(kind="user", id=item.user_id, token_id=token.id)
        meta = {**TERRAFORM_LOGIN, "token-id": token.id}
        return signin.sign_in_event(who, signin.SIGNED_IN, signin.TOKEN, meta)

    try:
        token, secret = tokens_service.create_user_token(
            owner, item.user_id, token_description(), None, recorded_as=signed_in
        )
    except NotFound:
        raise OAuthError("invalid_grant", "the user who approved no longer exists") from None
    try:  # for a replay to revoke; losing it must not lose the token just minted
        item.update(actions=[LoginCodeModel.token_id.set(token.id)])
    except PynamoDBException:
        log.warning("terraform login: could not record token %s on its code", token.id)
    return secret
