"""terraform login's OAuth pieces without storage: PKCE, the loopback redirect URI rule and
the authorization request's checks (chalicelib/web/oauth.py)."""

from __future__ import annotations

import base64
import hashlib
import uuid

import pytest

from chalicelib.web import oauth

VERIFIER = f"{uuid.uuid4()}.123456789"  # the shape terraform's proofKey() makes


def challenge_of(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode()).digest()
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def good_request(**changes: str | None) -> dict[str, str]:
    params = {
        "response_type": "code",
        "client_id": "terraform-cli",
        "redirect_uri": "http://localhost:10003/login",
        "state": str(uuid.uuid4()),
        "code_challenge": challenge_of(VERIFIER),
        "code_challenge_method": "S256",
    }
    params.update(changes)  # type: ignore[arg-type]
    return {k: v for k, v in params.items() if v is not None}


# ----- PKCE --------------------------------------------------------------------------------


def test_pkce_s256_is_unpadded_base64url_of_the_sha256():
    # SHA-256 of the empty string, a well-known value.
    assert oauth.pkce_challenge("") == "47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU"
    assert oauth.pkce_challenge(VERIFIER) == challenge_of(VERIFIER)
    assert len(oauth.pkce_challenge(VERIFIER)) == 43 and "=" not in oauth.pkce_challenge("x")


def test_pkce_matches_only_the_verifier_behind_the_challenge():
    challenge = challenge_of(VERIFIER)
    assert oauth.pkce_matches(VERIFIER, challenge)
    assert not oauth.pkce_matches(VERIFIER + "0", challenge)
    assert not oauth.pkce_matches(challenge, challenge)  # the "plain" method is not accepted
    other_last = "B" if challenge.endswith("A") else "A"
    assert not oauth.pkce_matches(VERIFIER, challenge[:-1] + other_last)


def test_terraforms_verifier_shape_is_a_valid_rfc_7636_verifier():
    assert oauth._VERIFIER.fullmatch(VERIFIER)
    assert not oauth._VERIFIER.fullmatch("short")
    assert not oauth._VERIFIER.fullmatch("a" * 129)
    assert not oauth._VERIFIER.fullmatch("a" * 42 + "+")


# ----- the redirect URI ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "uri",
    [
        "http://localhost:10000/login",
        "http://localhost:10010/login",
        "http://127.0.0.1:10005/login",
        "http://localhost:10004/",
        "http://localhost:10004/a/b-c_d.e~f",
    ],
)
def test_loopback_redirect_uris_on_an_advertised_port_are_accepted(uri: str):
    assert oauth.check_redirect_uri(uri) == uri


@pytest.mark.parametrize(
    "uri",
    [
        None,
        "",
        "https://evil.example/login",
        "http://evil.example:10000/login",
        "http://localhost.evil.com:10000/login",
        "http://localhost:10000.evil.com/login",
        "http://localhost@evil.com:10000/login",
        "http://localhost:10000@evil.com/login",
        "http://user:pass@localhost:10000/login",
        "http://evil.com#@localhost:10000/login",
        "http://evil.com\\@localhost:10000/login",
        "http://localhost:10000\\@evil.com/login",
        "http://localhost:9999/login",
        "http://localhost:10011/login",
        "http://localhost:80/login",
        "http://localhost/login",
        "http://localhost:010000/login",
        "https://localhost:10000/login",
        "HTTP://LOCALHOST:10000/login",
        "http://localhost:10000/login#fragment",
        "http://localhost:10000/login?next=https://evil.example",
        "http://localhost:10000",
        "http://localhost:10000//evil.example",
        "http://[::1]:10000/login",
        "http://127.0.0.2:10000/login",
        "http://0.0.0.0:10000/login",
        "http://127.1:10000/login",
        "//localhost:10000/login",
        "javascript:alert(1)//localhost:10000/",
        "http://localhost:10000/login\n",
        "http://localhost:10000/log in",
        "http://localhost:10000/" + "a" * 300,
    ],
)
def test_every_other_redirect_uri_is_refused(uri: str | None):
    with pytest.raises(oauth.AuthorizationRefused):
        oauth.check_redirect_uri(uri)


# ----- the authorization request ----------------------------------------------------------


def test_a_request_as_terraform_sends_it_is_accepted():
    params = good_request()
    request = oauth.authorization_request(params)
    assert request.redirect_uri == params["redirect_uri"] and request.state == params["state"]
    assert request.origin == "http://localhost:10003" and request.port == 10003
    assert request.hidden_fields() == params


@pytest.mark.parametrize(
    ("changes", "why"),
    [
        ({"client_id": "other"}, "client_id"),
        ({"client_id": None}, "client_id"),
        ({"redirect_uri": "https://evil.example/"}, "redirect_uri"),
        ({"redirect_uri": None}, "redirect_uri"),
        ({"response_type": "token"}, "response_type"),
        ({"response_type": None}, "response_type"),
        ({"code_challenge_method": "plain"}, "S256"),
        ({"code_challenge_method": None}, "S256"),
        ({"code_challenge": None}, "code_challenge"),
        ({"code_challenge": "too-short"}, "code_challenge"),
        ({"code_challenge": "a" * 42 + "="}, "code_challenge"),
        ({"state": None}, "state"),
        ({"state": ""}, "state"),
        ({"state": "a\nb"}, "state"),
        ({"state": "s" * 513}, "state"),
    ],
)
def test_a_bad_request_is_refused_with_the_reason(changes: dict[str, str | None], why: str):
    with pytest.raises(oauth.AuthorizationRefused, match=why):
        oauth.authorization_request(good_request(**changes))


def test_the_answer_goes_in_the_redirect_uris_query():
    assert (
        oauth.redirect_with("http://localhost:10001/login", code="a b", state="s&t")
        == "http://localhost:10001/login?code=a+b&state=s%26t"
    )


def test_the_discovery_entry_is_what_terraform_reads():
    entry = oauth.LOGIN_V1
    assert entry["client"] == "terraform-cli" and entry["grant_types"] == ["authz_code"]
    low, high = entry["ports"]
    assert 1024 <= low < high <= 65535  # terraform refuses privileged ports
    assert str(entry["authz"]).startswith("/app/") and entry["token"] == "/oauth/token"
