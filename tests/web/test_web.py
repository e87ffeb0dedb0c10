"""The web UI in-process: README sanitizing, sessions (sign in/out, expiry, tampering, CSRF)
and what each page shows, through Chalice's test client and moto.

The browser tests (real Chromium) are in tests/e2e/test_web_ui.py.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from datetime import timedelta
from typing import Any
from urllib.parse import quote

import pytest

from chalicelib.core.data.ids import now
from chalicelib.web import markdown, session, store
from chalicelib.web.session import COOKIE_NAME, CSRF_COOKIE
from chalicelib.web.view import safe_next
from tests.conftest import ADMIN_TOKEN, Api, doc, make_org, make_team
from tests.modules.helpers import MAIN_TF, create_module, create_version, upload_and_ingest
from tests.support.web_browser import Browser

HOSTILE_README = """# Hostile

<script>window.pwned = 1</script>

<img src="x" onerror="window.pwned = 2">

<a href="javascript:window.pwned = 3">click</a> [md link](javascript:alert(1))

<a href="JaVaScRiPt&colon;alert(1)">encoded</a>

<iframe src="https://evil.example/"></iframe>

<div style="background:url(javascript:alert(1))" onclick="alert(1)">styled</div>

<svg onload="alert(1)"><circle r="1"/></svg>

![pixel](data:image/png;base64,iVBORw0KGgo=) ![rel](diagram.png)

<form action="https://evil.example/"><input name="x"></form>

<object data="x.swf"></object><embed src="x.swf"><style>body{display:none}</style>
"""


# ----- Markdown -----------------------------------------------------------------------------


def test_readme_markdown_renders_and_the_allow_list_keeps_what_readmes_need():
    html = markdown.render(
        "# Title\n\nSome *text* and `code`.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n"
        "[docs](docs/usage.md) [site](https://example.com) [mail](mailto:a@b.c)\n\n"
        '![badge](https://img.example/b.svg)\n\n<p align="center">centred</p>\n\n'
        "<details><summary>More</summary>hidden</details>"
    )
    assert "<h3>Title</h3>" in html  # headings shifted: the page's h1 is the module's name
    assert "<em>text</em>" in html and "<code>code</code>" in html and "<table>" in html
    assert 'href="docs/usage.md"' in html and 'href="https://example.com"' in html
    assert 'href="mailto:a@b.c"' in html
    assert 'rel="noopener noreferrer nofollow"' in html
    assert 'src="https://img.example/b.svg"' in html
    assert '<p align="center">' in html and "<details>" in html


def test_every_readme_table_scrolls_in_a_box_of_its_own():
    """Markdown tables and HTML ones (nested too) each get the box; a README cannot make
    one of its own (class, tabindex and role are not kept) nor unbalance the page."""
    box = (
        '<div class="table-scroll" tabindex="0" role="region" '
        'aria-label="A table (scrolls sideways)">'
    )
    html = markdown.render(
        "| a | b |\n|---|---|\n| 1 | 2 |\n\n"
        '<table border="1"><tr><td><table><tr><td>in</td></tr></table></td></tr></table>\n\n'
        '<div class="table-scroll" tabindex="0" role="region">fake</div>\n\n'
        "`<table>` and </table> as text"
    )
    assert html.count(box + "<table>") == 3 and html.count("</table></div>") == 3
    assert html.count("<div") == html.count("</div>") == 4  # the three boxes and the fake one
    assert "<div>fake</div>" in html and "<code>&lt;table&gt;</code>" in html


def test_a_hostile_readme_keeps_no_script_handler_or_dangerous_url():
    html = markdown.render(HOSTILE_README)
    lowered = html.lower()
    for needle in (
        "<script",
        "pwned",
        "onerror",
        "onclick",
        "onload",
        'href="javascript',
        "<iframe",
        'src="data:',
        "style=",
        "<style",
        "<svg",
        "<form",
        "<input",
        "<object",
        "<embed",
        'src="x"',
        "diagram.png",
    ):
        assert needle not in lowered, needle
    assert not re.search(r'(href|src)="(?!https?:|mailto:)[a-z]+:', lowered)
    # Images that lost their source leave their alt text; none is left without alt.
    assert "pixel" in html and "rel" in html
    assert all("alt=" in tag for tag in re.findall(r"<img\b[^>]*>", html))


def test_summary_is_the_first_prose_paragraph():
    from chalicelib.modules.describe import summary

    text = "# vpc\n\n[![ci](https://x/b.svg)](https://x)\n\nA VPC with\n`subnets`.\n\nMore."
    assert summary(text) == "A VPC with subnets."
    assert summary(None) == "" and summary("# only a title") == ""
    assert summary('<p align="center">logo</p>\n\nThe prose.') == "The prose."


@pytest.fixture
def warm(monkeypatch: pytest.MonkeyPatch) -> None:
    """A warm instance whatever moto's pace: the settings and verified tokens stay cached
    for the test (5 s by default, which a slow request under moto can outlast)."""
    from chalicelib.core.settings import get_settings

    monkeypatch.setenv("REGISTRY_SETTINGS_CACHE_SECONDS", "600")
    monkeypatch.setenv("REGISTRY_TOKEN_CACHE_SECONDS", "600")
    get_settings.cache_clear()  # conftest's forget_cached_state clears it again after


# ----- sessions -----------------------------------------------------------------------------


def test_the_front_door_sends_strangers_to_the_sign_in_page(browser: Browser):
    home = browser.get("/")
    assert home.status_code == 302 and home.headers["Location"] == "/app/sign-in"
    page = browser.get("/app/acme/registry/modules?q=vpc")
    assert page.status_code == 303
    assert (
        page.headers["Location"] == "/app/sign-in?next=%2Fapp%2Facme%2Fregistry%2Fmodules%3Fq%3Dvpc"
    )
    form = browser.get("/app/sign-in")
    assert form.status_code == 200 and form.headers["Content-Type"].startswith("text/html")
    assert "script-src 'self'" in form.headers["Content-Security-Policy"]
    assert CSRF_COOKIE in browser.cookies


def test_sign_in_with_a_token_opens_a_session_the_token_never_leaves_the_server(browser: Browser):
    reply = browser.sign_in(ADMIN_TOKEN)
    assert reply.status_code == 303 and reply.headers["Location"] == "/app/organizations"
    session_cookie = next(c for c in browser.last_set_cookies if c.startswith(COOKIE_NAME))
    for attribute in ("HttpOnly", "Secure", "SameSite=Lax", "Path=/", "Max-Age=43200"):
        assert attribute in session_cookie
    assert ADMIN_TOKEN not in session_cookie
    page = browser.get("/app/organizations")
    assert page.status_code == 200 and "Signed in as admin" in page.text
    assert ADMIN_TOKEN not in page.text
    assert browser.get("/").headers["Location"] == "/app/organizations"


def test_sign_in_refuses_a_bad_token_and_a_missing_csrf_token(browser: Browser):
    refused = browser.sign_in("not-a-token")
    assert refused.status_code == 401 and "invalid or revoked token" in refused.text
    assert 'aria-invalid="true"' in refused.text and COOKIE_NAME not in browser.cookies
    no_csrf = browser.post("/app/sign-in", {"token": ADMIN_TOKEN})
    assert no_csrf.status_code == 403 and COOKIE_NAME not in browser.cookies
    wrong = browser.post("/app/sign-in", {"token": ADMIN_TOKEN, "csrf_token": "x" * 43})
    assert wrong.status_code == 403 and COOKIE_NAME not in browser.cookies


def test_sign_in_returns_to_the_page_asked_for_but_never_elsewhere(browser: Browser):
    csrf = browser.csrf()
    reply = browser.post(
        "/app/sign-in", {"token": ADMIN_TOKEN, "csrf_token": csrf, "next": "/app/organizations"}
    )
    assert reply.headers["Location"] == "/app/organizations"
    for target in ("https://evil.example/", "//evil.example/app/", "/\\evil.example"):
        other = Browser(browser.client)
        reply = other.post(
            "/app/sign-in", {"token": ADMIN_TOKEN, "csrf_token": other.csrf(), "next": target}
        )
        assert reply.headers["Location"] == "/app/organizations", target


# ----- the sign-in form's CSRF token: bound to the server ---------------------------------

REFUSED_FORM = "This form could not be verified"


def sign_in_with(browser: Browser, csrf: str, **headers: str) -> Any:
    return browser.post("/app/sign-in", {"token": ADMIN_TOKEN, "csrf_token": csrf}, headers)


def assert_refused(browser: Browser, reply: Any) -> None:
    assert reply.status_code == 403, reply.status_code
    assert REFUSED_FORM in reply.text and "Location" not in reply.headers
    assert COOKIE_NAME not in browser.cookies and session_rows() == set()


def signed_token(key: bytes, issued: int, nonce: str) -> str:
    """A token in the server's format, made with ``key``."""
    message = f"csrf_token\n{issued}\n{nonce}".encode()
    mac = base64.urlsafe_b64encode(hmac.new(key, message, hashlib.sha256).digest())
    return f"{issued}.{nonce}.{mac.rstrip(b'=').decode()}"


@pytest.mark.parametrize("value", ["x" * 43, "A" * 64, "1700000000.{n}.{n}"])
def test_a_cookie_and_field_the_client_chose_are_refused_even_when_equal(
    browser: Browser, value: str
):
    # What a page on another port of the host could plant: before, any equal pair passed.
    nonce = "n" * 43
    field = value.format(n=nonce)
    browser.cookies[CSRF_COOKIE] = nonce if field != value else value
    assert_refused(browser, sign_in_with(browser, field))


def test_a_token_the_server_minted_is_accepted(browser: Browser):
    token = browser.csrf()
    issued, nonce, _ = token.split(".")
    assert browser.cookies[CSRF_COOKIE] == nonce and nonce not in token.split(".")[2]
    assert abs(int(issued) - now().timestamp()) < 5
    csrf_cookie = next(c for c in browser.last_set_cookies if c.startswith(CSRF_COOKIE))
    assert "HttpOnly" in csrf_cookie and "SameSite=Lax" in csrf_cookie
    # The same construction with the server's key passes: the refusals below are the key's.
    assert signed_token(store.signing_key(), int(issued), nonce) == token
    reply = sign_in_with(browser, token)
    assert reply.status_code == 303 and session_rows() == {cookie_hash(browser)}


def test_an_expired_or_future_token_is_refused(browser: Browser, monkeypatch: pytest.MonkeyPatch):
    late = now() - timedelta(seconds=session.PRE_SESSION_CSRF_SECONDS + 1)
    monkeypatch.setattr(session, "now", lambda: late)
    old = browser.csrf()  # the page was opened more than two hours ago
    monkeypatch.undo()
    assert_refused(browser, sign_in_with(browser, old))
    nonce = browser.cookies[CSRF_COOKIE]
    ahead = int(now().timestamp()) + 3600
    assert_refused(browser, sign_in_with(browser, signed_token(store.signing_key(), ahead, nonce)))
    still = int((now() - timedelta(seconds=session.PRE_SESSION_CSRF_SECONDS - 60)).timestamp())
    good = signed_token(store.signing_key(), still, nonce)
    assert sign_in_with(browser, good).status_code == 303


def test_a_token_signed_with_another_key_is_refused(browser: Browser):
    _, nonce, _ = browser.csrf().split(".")
    forged = signed_token(b"k" * 32, int(now().timestamp()), nonce)
    assert_refused(browser, sign_in_with(browser, forged))


def test_a_tampered_token_is_refused(browser: Browser):
    token = browser.csrf()
    issued, nonce, mac = token.split(".")
    flipped = mac[:-1] + ("A" if mac[-1] != "A" else "B")
    other_nonce = "m" * 43
    for tampered in (
        f"{issued}.{nonce}.{flipped}",  # the MAC
        f"{int(issued) - 1}.{nonce}.{mac}",  # the time
        f"{issued}.{nonce}.{mac}.",  # an extra part
        f"{issued}.{nonce}",  # no MAC
        f"{issued}.{nonce}.{mac[:-2]}",  # a shortened MAC
        f"0x{issued}.{nonce}.{mac}",
        "\u00e9" + token,
    ):
        assert_refused(browser, sign_in_with(browser, tampered))
    # A genuine token for another cookie (another browser's page) does not pass with this one.
    browser.cookies[CSRF_COOKIE] = other_nonce
    assert_refused(browser, sign_in_with(browser, token))
    # Nor does a genuine token without its cookie.
    browser.cookies.pop(CSRF_COOKIE)
    assert_refused(browser, sign_in_with(browser, token))


def test_a_form_a_browser_says_came_from_another_origin_is_refused(browser: Browser):
    token = browser.csrf()
    for site in ("same-site", "cross-site"):
        assert_refused(browser, sign_in_with(browser, token, **{"Sec-Fetch-Site": site}))
    assert sign_in_with(browser, token, **{"Sec-Fetch-Site": "same-origin"}).status_code == 303
    csrf = browser.csrf("/app/organizations")  # signed in: the session's token, same rule
    reply = browser.post("/app/sign-out", {"csrf_token": csrf}, {"Sec-Fetch-Site": "same-site"})
    assert reply.status_code == 403 and COOKIE_NAME in browser.cookies


def test_the_signing_key_is_stored_sealed_and_is_not_a_session(browser: Browser):
    store.signing_key.cache_clear()  # read once per process: an earlier test's is cached
    browser.csrf()
    key = store.signing_key()
    raw = store.WebKeyModel.get(store.SIGNING_KEY_ID).sealed
    assert '"v": "kms-aes256gcm-1"' in raw
    assert base64.b64encode(key).decode() not in raw and len(key) == 32
    assert session_rows() == set()


def test_two_instances_creating_the_signing_key_at_once_share_the_first(browser: Browser):
    first = store._create_signing_key()
    second = store._create_signing_key()  # its conditional put fails: it reads the first's
    assert second.sealed == first.sealed


# What a client may put in ``next``: each must fall back to the default page, never a 500, a
# header that breaks, or a session row whose cookie is not sent.
HOSTILE_NEXTS = {
    "lf": "/app/\nX",  # %0a: Chalice refused the header (500)
    "cr": "/app/\rX",  # %0d: was copied into Location as it is
    "crlf-header": "/app/\r\nSet-Cookie: planted=1",
    "nul": "/app/\x00X",
    "nel": "/app/\x85X",
    "u2028": "/app/\u2028X",  # the real HTTP server answered nothing at all
    "u2029": "/app/\u2029X",
    "tab": "/app/\tX",
    "space": "/app/ X",
    "del": "/app/\x7fX",
    "non-ascii": "/app/caf\u00e9",
    "protocol-relative": "//evil.example/app/",
    "backslash": "/\\evil.example/app/",
    "backslash-inside": "/app/\\..\\..\\evil",
    "absolute": "https://evil.example/app/",
    "javascript": "javascript:alert(document.cookie)",
    "outside-the-app": "/api/v2/organizations",
    "dot-dot": "/app/../api/v2/organizations",
    "encoded-dot-dot": "/app/%2e%2E/%2E./api/v2",
    "long": "/app/" + "a" * 5000,
}
DEFAULT_PAGE = "/app/organizations"
VISIBLE_LOCAL = re.compile(r"/app/[\x21-\x5b\x5d-\x7e]*")


def session_rows() -> set[str]:
    """The stored sessions' keys (the hashes of their cookies)."""
    return {item.session_hash for item in store.sessions()}


def cookie_hash(browser: Browser) -> str:
    return hashlib.sha256(browser.cookies[COOKIE_NAME].encode()).hexdigest()


def assert_safe_redirect(reply: Any) -> None:
    assert reply.status_code == 303, reply.status_code
    assert reply.headers["Location"] == DEFAULT_PAGE


@pytest.mark.parametrize("target", HOSTILE_NEXTS.values(), ids=HOSTILE_NEXTS.keys())
def test_a_hostile_next_on_the_sign_in_page_falls_back_to_the_default(
    browser: Browser, target: str
):
    url = "/app/sign-in?next=" + quote(target, safe="")
    page = browser.get(url)  # not signed in: the form carries the default, not the value
    assert page.status_code == 200
    assert re.search(r'name="next" value="([^"]*)"', page.text).group(1) == DEFAULT_PAGE
    browser.sign_in(ADMIN_TOKEN)
    assert_safe_redirect(browser.get(url))  # signed in: straight to the default page


@pytest.mark.parametrize("target", HOSTILE_NEXTS.values(), ids=HOSTILE_NEXTS.keys())
def test_a_hostile_next_when_signing_in_leaves_exactly_the_session_it_sends(
    browser: Browser, target: str
):
    reply = browser.post(
        "/app/sign-in", {"token": ADMIN_TOKEN, "csrf_token": browser.csrf(), "next": target}
    )
    assert_safe_redirect(reply)
    assert session_rows() == {cookie_hash(browser)}
    # Signed in, the form again (the header's token): the new session replaces the old one.
    reply = browser.post(
        "/app/sign-in",
        {"token": ADMIN_TOKEN, "csrf_token": browser.csrf("/app/organizations"), "next": target},
    )
    assert_safe_redirect(reply)
    assert session_rows() == {cookie_hash(browser)}


def test_a_raw_control_character_in_the_form_body_falls_back_too(browser: Browser):
    body = f"token={ADMIN_TOKEN}&csrf_token={quote(browser.csrf())}&next=/app/\rX\x00"
    reply = browser.client.http.post(
        "/app/sign-in",
        headers={
            "Host": "registry.test",
            "Cookie": "; ".join(f"{k}={v}" for k, v in browser.cookies.items()),
            "Content-Type": "application/x-www-form-urlencoded",
        },
        body=body,
    )
    assert_safe_redirect(reply)
    assert len(session_rows()) == 1


@pytest.mark.parametrize(
    "target",
    [
        "/app/organizations",
        "/app/acme/registry/modules?q=vpc%20x&provider=aws&page=2",
        "/app/oauth/authorize?state=a%0Ab&redirect_uri=http%3A%2F%2Flocalhost%3A10000%2Flogin",
        "/app/acme/registry/modules/private/acme/vpc/aws/1.0.0#inputs",
        "/app/..foo/%2e%2ebar",  # dots inside a segment are a name, not a climb
    ],
)
def test_a_local_next_is_kept_as_it_is(browser: Browser, target: str):
    assert safe_next(target) == target
    reply = browser.post(
        "/app/sign-in", {"token": ADMIN_TOKEN, "csrf_token": browser.csrf(), "next": target}
    )
    assert reply.status_code == 303 and reply.headers["Location"] == target
    assert VISIBLE_LOCAL.fullmatch(reply.headers["Location"])


def test_sign_out_ends_the_session_server_side(browser: Browser):
    browser.sign_in(ADMIN_TOKEN)
    stolen = dict(browser.cookies)
    csrf = browser.csrf("/app/organizations")
    # Without the session's CSRF token, signing out is refused.
    assert browser.post("/app/sign-out", {"csrf_token": "forged"}).status_code == 403
    reply = browser.post("/app/sign-out", {"csrf_token": csrf})
    assert reply.status_code == 303 and COOKIE_NAME not in browser.cookies
    browser.cookies = stolen  # the old cookie replayed: the session is gone
    assert browser.get("/app/organizations").status_code == 303


def test_a_session_expires_and_a_tampered_cookie_is_nobody(browser: Browser):
    browser.sign_in(ADMIN_TOKEN)
    assert browser.get("/app/organizations").status_code == 200
    secret = browser.cookies[COOKIE_NAME]
    browser.cookies[COOKIE_NAME] = secret[:-2] + ("AA" if secret[-2:] != "AA" else "BB")
    assert browser.get("/app/organizations").status_code == 303
    browser.cookies[COOKIE_NAME] = secret
    for item in store.sessions():
        item.expires = now() - timedelta(seconds=1)
        item.save()
    assert browser.get("/app/organizations").status_code == 303


def test_a_revoked_token_ends_its_sessions(api: Api, browser: Browser):
    make_org(api, "acme")
    team_id, token = make_team(api, "acme", "readers")
    browser.sign_in(token)
    assert browser.get("/app/organizations").status_code == 200
    assert api.delete(f"/api/v2/teams/{team_id}/authentication-token").status == 204
    assert browser.get("/app/organizations").status_code == 303


# ----- pages --------------------------------------------------------------------------------

README = "# vpc\n\nA VPC with subnets.\n\n## Usage\n\nSee the examples."
VARIABLES = """
variable "name" { description = "Name prefix" }
variable "cidr" {
  type    = string
  default = "10.0.0.0/16"
}
variable "az_count" { type = number }
resource "aws_vpc" "this" { cidr_block = var.cidr }
output "vpc_id" {
  value       = aws_vpc.this.id
  description = "The VPC"
}
module "labels" {
  source  = "cloudposse/label/null"
  version = "~> 0.25"
}
"""


@pytest.fixture
def published(api: Api) -> Api:
    """acme/vpc/aws with 1.0.0, 1.1.0 (README, inputs, example) and a refused 1.2.0;
    acme/dns/google with a hostile README; other/secret/aws, which acme's team cannot read."""
    make_org(api, "acme")
    create_module(api)
    assert upload_and_ingest(create_version(api, "1.0.0"), {"main.tf": MAIN_TF}) == "ok"
    files = {
        "main.tf": VARIABLES,
        "README.md": README,
        "examples/basic/main.tf": 'module "vpc" { source = "../.." }\nvariable "x" {}',
        "examples/basic/README.md": "# Basic example",
    }
    assert upload_and_ingest(create_version(api, "1.1.0"), files) == "ok"
    upload_and_ingest(create_version(api, "1.2.0"), b"this is not a gzip archive")
    create_module(api, name="dns", provider="google")
    hostile = {"main.tf": MAIN_TF, "README.md": HOSTILE_README}
    assert upload_and_ingest(create_version(api, "0.1.0", "dns", "google"), hostile) == "ok"
    make_org(api, "other")
    reply = api.post(
        "/api/v2/organizations/other/registry-modules",
        doc("registry-modules", name="secret", provider="aws"),
    )
    assert reply.status == 201
    return api


def test_organizations_and_module_list(published: Api, browser: Browser):
    browser.sign_in(ADMIN_TOKEN)
    orgs = browser.get("/app/organizations").text
    assert (
        'href="/app/acme/registry/modules"' in orgs and 'href="/app/other/registry/modules"' in orgs
    )
    listing = browser.get("/app/acme/registry/modules")
    assert listing.status_code == 200
    text = listing.text
    assert "2 modules" in text
    assert 'href="/app/acme/registry/modules/private/acme/vpc/aws"' in text
    assert "<code>1.1.0</code>" in text  # latest ok version, not the failed 1.2.0
    assert "A VPC with subnets." in text  # the README's first paragraph
    assert "Ingest failed: 1.2.0:" in text
    assert '<option value="google">' in text
    found = browser.get("/app/acme/registry/modules?q=dn").text
    assert "1 module found" in found and "/dns/google" in found and "/vpc/aws" not in found
    by_provider = browser.get("/app/acme/registry/modules?provider=aws").text
    assert "/vpc/aws" in by_provider and "/dns/google" not in by_provider
    assert browser.get("/app/acme/registry/modules?q=nothing").text.count("No module matches")


def test_bad_query_values_are_400_and_unknown_pages_404(published: Api, browser: Browser):
    browser.sign_in(ADMIN_TOKEN)
    for query in ("page=abc", "page=0", "page=-1", "q=" + "x" * 101):
        reply = browser.get(f"/app/acme/registry/modules?{query}")
        assert reply.status_code == 400, query
        assert "<h1>Bad request</h1>" in reply.text
    assert browser.get("/app/acme/registry/modules?page=2").status_code == 404


def test_what_a_team_token_cannot_read_is_not_found(published: Api, browser: Browser):
    _, token = make_team(published, "acme", "readers")
    browser.sign_in(token)
    assert "/app/other/" not in browser.get("/app/organizations").text
    for path in (
        "/app/other/registry/modules",
        "/app/other/registry/modules/private/other/secret/aws",
        "/app/nowhere/registry/modules",
        "/app/acme/registry/modules/private/acme/nope/aws",
        "/app/acme/registry/modules/private/acme/vpc/aws/9.9.9",
        "/app/acme/registry/modules/bogus/acme/vpc/aws",
    ):
        reply = browser.get(path)
        assert reply.status_code == 404, path
        assert "<h1>Page not found</h1>" in reply.text and reply.headers["Content-Type"].startswith(
            "text/html"
        )
    assert browser.get("/app/acme/registry/modules/private/acme/vpc/aws").status_code == 200


def test_the_module_page(published: Api, browser: Browser):
    browser.sign_in(ADMIN_TOKEN)
    page = browser.get("/app/acme/registry/modules/private/acme/vpc/aws")
    assert page.status_code == 200
    text = page.text
    assert "<h1>vpc</h1>" in text
    assert '<option value="1.1.0" selected>1.1.0</option>' in text
    assert "1.2.0 (ingest failed)" in text
    assert "<h3>vpc</h3>" in text and "A VPC with subnets." in text  # the README
    # Inputs: required first (name, az_count), then optional ones.
    inputs = re.findall(r'<th scope="row"><code>(\w+)</code></th>\s*<td>', text)
    assert inputs[:3] == ["az_count", "name", "cidr"]
    assert "aws_vpc" in text and "cloudposse/label/null" in text and "vpc_id" in text
    assert "examples/basic" in text and "Basic example" in text
    assert "source  = &#34;registry.test/acme/vpc/aws&#34;" in text
    assert "version = &#34;~&gt; 1.1&#34;" in text
    assert re.search(r'<code class="hash">[0-9a-f]{64}</code>', text)
    assert "not a gzip" in text or "gzip" in text  # the failed version's reason, in Versions


def test_versions_open_by_url_and_by_the_selector(published: Api, browser: Browser):
    browser.sign_in(ADMIN_TOKEN)
    base = "/app/acme/registry/modules/private/acme/vpc/aws"
    picked = browser.get(base + "?version=1.0.0")
    assert picked.status_code == 303 and picked.headers["Location"] == base + "/1.0.0"
    old = browser.get(base + "/1.0.0").text
    assert '<option value="1.0.0" selected>' in old and "~&gt; 1.0" in old
    failed = browser.get(base + "/1.2.0")
    assert failed.status_code == 200
    assert (
        "Version 1.2.0: Ingest failed." in failed.text and 'class="failure-reason"' in failed.text
    )


def test_a_hostile_readme_is_rendered_harmless(published: Api, browser: Browser):
    browser.sign_in(ADMIN_TOKEN)
    text = browser.get("/app/acme/registry/modules/private/acme/dns/google").text
    readme = text.split('<div class="markdown">', 1)[1].split("</section>", 1)[0].lower()
    assert "<h3>hostile</h3>" in readme
    for needle in ("<script", "onerror", "onclick", 'href="javascript', "<iframe", "<svg", "pwned"):
        assert needle not in readme, needle


def test_static_assets_are_hashed_and_cached_for_good(browser: Browser):
    from chalicelib.web.view import static_url

    url = static_url("ui.css")
    assert re.fullmatch(r"/app/static/ui\.[0-9a-f]{12}\.css", url)
    reply = browser.get(url)
    assert reply.status_code == 200 and reply.headers["Content-Type"].startswith("text/css")
    assert "immutable" in reply.headers["Cache-Control"]
    assert browser.get(static_url("ui.js")).status_code == 200
    assert browser.get("/app/static/ui.css").status_code == 404
    assert browser.get("/app/static/..%2Fsession.py").status_code == 404


def test_the_favicon_is_served_at_its_usual_address_and_linked_from_every_page(
    browser: Browser,
):
    from chalicelib.web.view import static_url

    icon = browser.get("/favicon.ico")  # signed out: anyone may fetch it
    assert icon.status_code == 200 and icon.headers["Content-Type"] == "image/svg+xml"
    assert icon.text.startswith("<svg") and "public" in icon.headers["Cache-Control"]
    linked = static_url("favicon.svg")
    page = browser.get("/app/sign-in").text
    assert f'<link rel="icon" href="{linked}" type="image/svg+xml">' in page
    assert browser.get(linked).text == icon.text


# ----- the module list's cost ---------------------------------------------------------------


def test_the_module_list_reads_its_page_not_the_organization(
    api: Api, browser: Browser, warm: None
):
    """Page 1 of 20 modules and of 400 read about the same bytes (the kept count and the
    page's own items), a later page a lean entry per module before it, and the pager links a
    window of pages rather than every page."""
    from bench.reads import counting_reads
    from tests.core.helpers import LEAN, seed

    for org, count in (("small", 20), ("large", 400)):
        make_org(api, org)
        seed(org, count)
    browser.sign_in(ADMIN_TOKEN)
    browser.get("/app/small/registry/modules")  # warm: each table described once

    def page_bytes(path: str) -> tuple[str, int]:
        browser.get(path)  # the settings and the token are read (and cached) first
        with counting_reads() as reads:
            reply = browser.get(path)
        assert reply.status_code == 200, reply.text
        # At most 6 calls whatever the size: no read per row (issue 28).
        assert reads.total_calls <= 6, (path, reads.detail())
        return reply.text, reads.bytes

    small, small_bytes = page_bytes("/app/small/registry/modules")
    large, large_bytes = page_bytes("/app/large/registry/modules")
    assert "20 modules" in small and "400 modules, page 1 of 20" in large
    assert '<option value="google">' in large  # the provider menu from the kept counts
    assert large_bytes <= 1.5 * small_bytes, (small_bytes, large_bytes)
    later, later_bytes = page_bytes("/app/large/registry/modules?page=10")
    assert "mod00180" in later and "mod00179" not in later
    assert later_bytes <= small_bytes * 1.5 + 180 * LEAN, (small_bytes, later_bytes)
    links = re.findall(r'aria-label="Page (\d+)"', later)
    assert links == ["1", "8", "9", "11", "12", "20"], links
    assert 'aria-current="page">10<' in later


LIST = "/app/acme/registry/modules"
VPC = "/api/v2/organizations/acme/registry-modules/private/acme/vpc/aws"


def _list_page(browser: Browser) -> str:
    """The module list, read in at most 6 DynamoDB calls (no read per row) by a warm
    instance (``warm``: the settings and the token read before)."""
    from bench.reads import counting_reads

    browser.get(LIST)
    with counting_reads() as reads:
        reply = browser.get(LIST)
    assert reply.status_code == 200
    assert reads.total_calls <= 6, reads.detail()
    return reply.text


def _kept_summary(name: str, provider: str) -> dict[str, str] | None:
    from chalicelib.modules.store import ModuleModel, module_key

    return ModuleModel.get("acme", module_key("private", "acme", name, provider)).latest_summary


def _lifecycle(api: Api, version: str, attributes: dict[str, Any]) -> None:
    body = {"data": {"type": "registry-module-versions", "attributes": attributes}}
    assert api.patch(f"{VPC}/{version}", body).status == 200


def test_the_list_shows_the_description_kept_with_the_latest_version(
    published: Api, browser: Browser, warm: None
):
    """Each row's description is its latest servable version's, kept on the module item
    wherever that version changes: ingest, revocation and its undoing, deletion."""
    browser.sign_in(ADMIN_TOKEN)
    browser.get(LIST)  # warm: each table described once
    text = _list_page(browser)
    assert "<code>1.1.0</code>" in text and "A VPC with subnets." in text
    assert _kept_summary("vpc", "aws") == {"version": "1.1.0", "description": "A VPC with subnets."}

    _lifecycle(published, "1.1.0", {"deprecation": {"deprecated-status": "Deprecated"}})
    assert "A VPC with subnets." in _list_page(browser)  # deprecated is still served
    _lifecycle(published, "1.1.0", {"revocation": {"status": "Revoked"}})
    text = _list_page(browser)
    assert "<code>1.0.0</code>" in text and "A VPC with subnets." not in text
    assert _kept_summary("vpc", "aws") == {"version": "1.0.0", "description": ""}
    _lifecycle(published, "1.1.0", {"revocation": {"status": "Unrevoked"}})
    assert "A VPC with subnets." in _list_page(browser)

    readme = "# vpc\n\nThe second edition.\n"
    created = create_version(published, "2.0.0")
    assert upload_and_ingest(created, {"main.tf": MAIN_TF, "README.md": readme}) == "ok"
    assert "The second edition." in _list_page(browser)
    assert published.delete(f"{VPC}/2.0.0").status == 204
    text = _list_page(browser)
    assert "<code>1.1.0</code>" in text and "A VPC with subnets." in text
    assert "The second edition." not in text


def test_the_backfill_keeps_the_descriptions_of_versions_ingested_before(
    published: Api, browser: Browser, warm: None
):
    """Data of a stack from before: no description on the versions nor on the modules. The
    list shows them right meanwhile (read per row); the backfill writes them once, and then
    the list reads no version."""
    from chalicelib.modules.store import ModuleModel, ModuleVersionModel
    from infrastructure import backfill

    for module in ModuleModel.scan():
        module.update(actions=[ModuleModel.latest_summary.remove()])
    for version in ModuleVersionModel.scan():
        version.update(actions=[ModuleVersionModel.description.remove()])
    browser.sign_in(ADMIN_TOKEN)
    assert "A VPC with subnets." in browser.get(LIST).text

    first = backfill.backfill_all()["module descriptions"]
    # other/secret/aws has no version: nothing to keep.
    assert first == {"modules": 3, "descriptions written": 2, "summaries written": 2}
    assert _kept_summary("vpc", "aws") == {"version": "1.1.0", "description": "A VPC with subnets."}
    hostile = _kept_summary("dns", "google") or {}
    assert hostile["version"] == "0.1.0" and "<" not in hostile["description"]  # plain text
    text = _list_page(browser)
    assert "A VPC with subnets." in text and "<code>0.1.0</code>" in text
    again = backfill.backfill_all()["module descriptions"]
    assert again == {"modules": 3, "descriptions written": 0, "summaries written": 0}


def test_the_pager_window():
    from chalicelib.web.pages import page_window

    assert page_window(1, 1) == [1]
    assert page_window(1, 4) == [1, 2, 3, 4]
    assert page_window(10, 20) == [1, None, 8, 9, 10, 11, 12, None, 20]
    assert page_window(4, 20) == [1, 2, 3, 4, 5, 6, None, 20]
    assert page_window(20, 20) == [1, None, 18, 19, 20]


# ----- the site's customization texts ----------------------------------------------------------


def test_the_customization_texts_show_where_people_look_and_run_nothing(
    api: Api, browser: Browser
) -> None:
    """login-help on the sign-in page, footer and support address on every page, error on
    error pages, new-user for someone in no organization: Markdown, sanitized like READMEs;
    TFE's default support address is not shown."""
    assert "mailto:" not in browser.get("/app/sign-in").text  # the default address is not ours
    texts = {
        "login-help": "Ask **#platform** for an invitation.",
        "footer": "Run by the platform team <script>window.pwned = 1</script>",
        "error": "Still stuck? See [the runbook](https://wiki.example.test/registry).",
        "new-user": "Welcome! Ask your team lead to invite you.",
        "support-email-address": "platform@example.test",
    }
    attributes = {"data": {"type": "customization-settings", "attributes": texts}}
    assert api.patch("/api/v2/admin/customization-settings", attributes).status == 200

    sign_in_page = browser.get("/app/sign-in").text
    assert "Ask <strong>#platform</strong> for an invitation." in sign_in_page
    assert "Run by the platform team" in sign_in_page and "pwned" not in sign_in_page
    assert 'href="mailto:platform@example.test"' in sign_in_page
    browser.sign_in(ADMIN_TOKEN)
    error_page = browser.get("/app/nowhere/registry/modules/private/nowhere/x/aws")
    assert error_page.status_code == 404
    assert '<a href="https://wiki.example.test/registry"' in error_page.text
    organizations = browser.get("/app/organizations").text
    assert "Ask your team lead to invite you." in organizations  # the admin has none yet
    make_org(api)
    assert "Ask your team lead" not in browser.get("/app/organizations").text
