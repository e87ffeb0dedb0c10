"""The publishing pages in-process (tests/support/web_browser.py over Chalice's test client, moto):
create a module and a version, upload its archive to the presigned link the page gives,
deprecate, undeprecate, revoke, un-revoke, delete a version and the module, retry. Each
action changes what the API then shows; its refusals change nothing: a form without its
CSRF token is 403; a reader (and, for deletes, a manage-modules team that does not own the
organization) gets no form and a 404; bad input shows the form again with the service's
message (422).

The browser test (Chromium: the upload through the bucket's CORS, axe-core, a 390 px phone)
is in tests/e2e/test_publish_web_e2e.py.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from urllib.parse import unquote, urlparse

import pytest

from chalicelib.core.data.aws import client
from chalicelib.core.settings import get_settings
from tests.conftest import ADMIN_TOKEN, Api, make_org, make_team, tar_gz
from tests.modules.helpers import MAIN_TF
from tests.modules.publishing import connect, drain
from tests.support.vcs_git_server import GitServer, serve
from tests.support.web_browser import Browser

ORG = "acme"
PUBLISH = f"/app/{ORG}/registry/publish"
MODULE = PUBLISH + f"/private/{ORG}/vpc/aws"
API_MODULE = f"/api/v2/organizations/{ORG}/registry-modules/private/{ORG}/vpc/aws"


def signed_in(api: Api, token: str) -> Browser:
    browser = Browser(api.client)
    assert browser.sign_in(token).status_code == 303
    return browser


def submit(browser: Browser, page: str, action: str, **fields: str):
    """POST ``fields`` to ``action`` with the CSRF token of the form on ``page``."""
    return browser.post(action, {**fields, "csrf_token": browser.csrf(page)})


def upload_link(page_text: str) -> str:
    found = re.search(r'data-upload="([^"]+)"', page_text)
    assert found, page_text
    return html.unescape(found.group(1))


def upload_and_ingest(link: str, body: bytes) -> str:
    """PUT ``body`` where the page's link points (as the browser does), then ingest it."""
    from chalicelib.modules.ingest.handler import handle_s3_record

    path = unquote(urlparse(link).path).lstrip("/")
    key = path.removeprefix(f"{get_settings().bucket}/")
    client("s3").put_object(Bucket=get_settings().bucket, Key=key, Body=body)
    return handle_s3_record({"s3": {"object": {"key": key}}})


def api_version(api: Api, version: str) -> dict:
    reply = api.get(f"{API_MODULE}/version?module_version={version}")
    assert reply.status == 200, reply.json
    return reply.data["attributes"]


@pytest.fixture
def org(api: Api) -> Api:
    make_org(api, ORG)
    return api


@pytest.fixture
def owner(org: Api) -> Browser:
    return signed_in(org, ADMIN_TOKEN)


@pytest.fixture
def publisher(org: Api) -> Browser:
    """A team with manage-modules: publishes, may not delete."""
    _, token = make_team(org, ORG, "ci", manage_modules=True)
    return signed_in(org, token)


@pytest.fixture
def reader(org: Api) -> Browser:
    _, token = make_team(org, ORG, "readers")
    return signed_in(org, token)


def published_version(browser: Browser, version: str = "1.0.0") -> str:
    """Create acme/vpc/aws (if needed) and ``version`` through the pages; its page's text."""
    if browser.get(MODULE).status_code == 404:
        created = submit(browser, PUBLISH, PUBLISH, name="vpc", provider="aws")
        assert created.status_code == 303, created.text
    made = submit(browser, MODULE, MODULE + "/versions", version=version)
    assert made.status_code == 303 and made.headers["Location"] == f"{MODULE}/{version}"
    return browser.get(f"{MODULE}/{version}").text


def test_a_publisher_creates_a_module_and_version_and_uploads_its_archive(
    org: Api, publisher: Browser
) -> None:
    listing = publisher.get(f"/app/{ORG}/registry/modules")
    assert f'href="{PUBLISH}"' in listing.text
    form = publisher.get(PUBLISH)
    assert form.status_code == 200 and 'name="no_code"' in form.text
    created = submit(publisher, PUBLISH, PUBLISH, name="vpc", provider="aws", no_code="on")
    assert created.status_code == 303 and created.headers["Location"] == MODULE + "?created=1"
    module = org.get(API_MODULE).data["attributes"]
    assert module["status"] == "pending" and module["no-code"] is True

    made = submit(publisher, MODULE, MODULE + "/versions", version="1.0.0")
    assert made.status_code == 303
    page = publisher.get(f"{MODULE}/1.0.0")
    assert page.status_code == 200 and "Waiting for its archive" in page.text
    assert '<p id="published-links" hidden>' in page.text  # until it is ok
    link = upload_link(page.text)
    # The page's CSP lets its script reach the link's origin, and only that one more.
    origin = "{0.scheme}://{0.netloc}".format(urlparse(link))
    policy = page.headers["Content-Security-Policy"]
    assert f"connect-src 'self' {origin};" in policy
    assert "script-src 'self';" in policy and "default-src 'none'" in policy
    assert "publish." in page.text and "curl -X PUT" in page.text
    other = publisher.get(f"/app/{ORG}/registry/modules")
    assert "connect-src 'self';" in other.headers["Content-Security-Policy"]

    assert upload_and_ingest(link, tar_gz({"main.tf": MAIN_TF})) == "ok"
    status = publisher.get(f"{MODULE}/1.0.0/status")
    assert status.headers["Content-Type"] == "application/json"
    assert json.loads(status.text) == {
        "version": "1.0.0",
        "status": "ok",
        "label": "OK",
        "error": None,
        "settled": True,
    }
    assert api_version(org, "1.0.0")["status"] == "ok"
    done = publisher.get(f"{MODULE}/1.0.0")
    assert "data-upload" not in done.text and "curl" not in done.text  # ok: no link any more
    # Published: the page links to the module's page and to this version's.
    shown = f"/app/{ORG}/registry/modules/private/{ORG}/vpc/aws"
    assert '<p id="published-links">' in done.text
    assert f'<a href="{shown}/1.0.0" id="published-version-link">' in done.text
    assert f'<a href="{shown}">' in done.text
    assert publisher.get(f"{shown}/1.0.0").status_code == 200
    assert f'href="{MODULE}/1.0.0/deprecate"' in done.text
    assert f'href="{MODULE}/1.0.0/delete"' not in done.text  # deleting is the owners'


def test_a_refused_archive_shows_its_reason_and_retry_runs_the_api_action(
    org: Api, publisher: Browser
) -> None:
    link = upload_link(published_version(publisher))
    assert upload_and_ingest(link, b"not a gzip archive") == "failed"
    status = json.loads(publisher.get(f"{MODULE}/1.0.0/status").text)
    assert status["status"] == "reg_ingress_failed" and status["settled"]
    assert status["error"] and status["error"] in publisher.get(f"{MODULE}/1.0.0").text
    # The refused archive was deleted: retry (the API action) finds nothing to ingest again.
    retried = submit(publisher, MODULE, MODULE + "/retry")
    assert retried.status_code == 303 and retried.headers["Location"] == MODULE + "?retried=1"
    # A new upload through the same link is ingested.
    assert upload_and_ingest(link, tar_gz({"main.tf": MAIN_TF})) == "ok"


def test_deprecate_revoke_and_back_through_the_api_service(org: Api, publisher: Browser) -> None:
    upload_and_ingest(upload_link(published_version(publisher)), tar_gz({"main.tf": MAIN_TF}))
    version = f"{MODULE}/1.0.0"
    ask = publisher.get(version + "/deprecate")
    assert ask.status_code == 200 and 'name="reason"' in ask.text and 'name="link"' in ask.text
    done = submit(
        publisher, version + "/deprecate", version + "/deprecate", reason="use 2.x", link=""
    )
    assert done.status_code == 303
    attrs = api_version(org, "1.0.0")
    assert attrs["deprecation"]["deprecated-status"] == "Deprecated"
    assert attrs["deprecation"]["reason"] == "use 2.x"

    revoked = submit(
        publisher,
        version + "/revoke",
        version + "/revoke",
        message="CVE-2026-1",
        link="https://example.com/cve",
    )
    assert revoked.status_code == 303
    attrs = api_version(org, "1.0.0")
    assert attrs["revocation"]["status"] == "Revoked"
    assert attrs["revocation"]["message"] == "CVE-2026-1"
    page = publisher.get(version).text
    assert f'href="{version}/unrevoke"' in page and f'href="{version}/deprecate"' not in page

    assert submit(publisher, version + "/unrevoke", version + "/unrevoke").status_code == 303
    assert api_version(org, "1.0.0")["revocation"]["status"] == "Unrevoked"
    assert submit(publisher, version + "/undeprecate", version + "/undeprecate").status_code == 303
    attrs = api_version(org, "1.0.0")
    assert not attrs.get("deprecation") or attrs["deprecation"].get("deprecated-status") != (
        "Deprecated"
    )


def test_bad_input_shows_the_form_again_with_the_message_and_changes_nothing(
    org: Api, publisher: Browser
) -> None:
    bad = submit(publisher, PUBLISH, PUBLISH, name="-vpc-", provider="AWS")
    assert bad.status_code == 422 and 'role="alert"' in bad.text
    assert "name may contain letters" in bad.text and 'value="-vpc-"' in bad.text
    listed = org.get(f"/api/v2/organizations/{ORG}/registry-modules")
    assert listed.data == []

    published_version(publisher)
    again = submit(publisher, MODULE, MODULE + "/versions", version="1.0.0")
    assert again.status_code == 422 and "version 1.0.0 already exists" in again.text
    nonsense = submit(publisher, MODULE, MODULE + "/versions", version="one")
    assert nonsense.status_code == 422 and 'value="one"' in nonsense.text
    versions = org.get(API_MODULE).data["attributes"]["version-statuses"]
    assert [v["version"] for v in versions] == ["1.0.0"]

    # Deprecating a version that is not ok yet: the service's refusal, on the form.
    version = f"{MODULE}/1.0.0"
    refused = submit(publisher, version + "/deprecate", version + "/deprecate", reason="x")
    assert refused.status_code == 422 and "only published versions" in refused.text
    upload_and_ingest(upload_link(publisher.get(version).text), tar_gz({"main.tf": MAIN_TF}))
    link = submit(publisher, version + "/deprecate", version + "/deprecate", link="ftp://x")
    assert link.status_code == 422 and "link must be an http" in link.text
    assert 'value="ftp://x"' in link.text
    assert not api_version(org, "1.0.0").get("deprecation")
    early = submit(publisher, version + "/revoke", version + "/revoke", message="m")
    assert early.status_code == 422 and "must be deprecated before" in early.text
    assert not api_version(org, "1.0.0").get("revocation")


def test_an_owner_deletes_a_version_then_the_module(org: Api, owner: Browser) -> None:
    published_version(owner, "1.0.0")
    published_version(owner, "1.1.0")
    page = owner.get(MODULE).text
    assert f'href="{MODULE}/1.1.0/delete"' in page and f'href="{MODULE}/delete"' in page
    ask = owner.get(f"{MODULE}/1.1.0/delete")
    assert ask.status_code == 200 and "Delete the version" in ask.text
    gone = submit(owner, f"{MODULE}/1.1.0/delete", f"{MODULE}/1.1.0/delete")
    assert gone.status_code == 303 and gone.headers["Location"] == MODULE + "?deleted=1"
    versions = org.get(API_MODULE).data["attributes"]["version-statuses"]
    assert [v["version"] for v in versions] == ["1.0.0"]
    assert owner.get(f"{MODULE}/delete").status_code == 200
    deleted = submit(owner, f"{MODULE}/delete", f"{MODULE}/delete")
    assert deleted.status_code == 303
    assert deleted.headers["Location"] == f"/app/{ORG}/registry/modules"
    assert org.get(API_MODULE).status == 404


def test_who_may_not_publish_gets_no_form_and_a_404(
    org: Api, publisher: Browser, reader: Browser
) -> None:
    published_version(publisher)
    assert f'href="{PUBLISH}"' not in reader.get(f"/app/{ORG}/registry/modules").text
    module_page = reader.get(f"/app/{ORG}/registry/modules/private/{ORG}/vpc/aws")
    assert module_page.status_code == 200 and 'id="publish-link"' not in module_page.text
    for path in (PUBLISH, MODULE, f"{MODULE}/1.0.0", f"{MODULE}/1.0.0/status"):
        assert reader.get(path).status_code == 404, path
    assert reader.get(f"{MODULE}/1.0.0/deprecate").status_code == 404
    token = reader.csrf(f"/app/{ORG}/registry/modules")
    posts = {
        PUBLISH: {"name": "dns", "provider": "aws"},
        MODULE + "/versions": {"version": "2.0.0"},
        MODULE + "/retry": {},
        MODULE + "/delete": {},
        f"{MODULE}/1.0.0/deprecate": {"reason": "x"},
        f"{MODULE}/1.0.0/delete": {},
    }
    for path, form in posts.items():
        assert reader.post(path, {**form, "csrf_token": token}).status_code == 404, path
    # A manage-modules team publishes but does not delete (the owners' right, as the API's).
    token = publisher.csrf(MODULE)
    assert publisher.get(f"{MODULE}/delete").status_code == 404
    assert publisher.get(f"{MODULE}/1.0.0/delete").status_code == 404
    assert publisher.post(f"{MODULE}/delete", {"csrf_token": token}).status_code == 404
    assert publisher.post(f"{MODULE}/1.0.0/delete", {"csrf_token": token}).status_code == 404
    listed = org.get(f"/api/v2/organizations/{ORG}/registry-modules").data
    assert [m["attributes"]["name"] for m in listed] == ["vpc"]
    versions = org.get(API_MODULE).data["attributes"]["version-statuses"]
    assert [v["version"] for v in versions] == ["1.0.0"]


def test_every_publishing_post_without_its_csrf_token_is_403_and_changes_nothing(
    org: Api, owner: Browser
) -> None:
    upload_and_ingest(upload_link(published_version(owner)), tar_gz({"main.tf": MAIN_TF}))
    before = org.get(API_MODULE).data["attributes"]
    posts = {
        PUBLISH: {"name": "dns", "provider": "aws"},
        MODULE + "/versions": {"version": "2.0.0"},
        MODULE + "/retry": {},
        MODULE + "/delete": {},
        **{
            f"{MODULE}/1.0.0/{action}": {"reason": "x", "message": "y"}
            for action in ("deprecate", "undeprecate", "revoke", "unrevoke", "delete")
        },
    }
    for path, form in posts.items():
        for token in (None, "forged"):
            sent = form if token is None else {**form, "csrf_token": token}
            assert owner.post(path, sent).status_code == 403, (path, token)
    assert org.get(API_MODULE).data["attributes"] == before
    assert len(org.get(f"/api/v2/organizations/{ORG}/registry-modules").data) == 1


def test_the_module_page_links_publishers_to_the_publishing_page(
    org: Api, publisher: Browser
) -> None:
    published_version(publisher)
    page = publisher.get(f"/app/{ORG}/registry/modules/private/{ORG}/vpc/aws")
    assert f'href="{MODULE}"' in page.text


def _evaluate(node: object, address: str) -> object:
    """The few intrinsic functions the bucket's CORS rule uses, as CloudFormation applies them."""
    if isinstance(node, dict) and len(node) == 1:
        (name, value), *_ = node.items()
        if name == "Ref":
            assert value == "InstanceAddress"
            return address
        if name == "Fn::Split":
            return str(_evaluate(value[1], address)).split(value[0])
        if name == "Fn::Select":
            return _evaluate(value[1], address)[value[0]]  # type: ignore[index]
        if name == "Fn::Join":
            return value[0].join(str(_evaluate(part, address)) for part in value[1])
    if isinstance(node, list):
        return [_evaluate(item, address) for item in node]
    return node


@pytest.mark.parametrize(
    ("address", "origin"),
    [
        ("https://registry.example.com", "https://registry.example.com"),
        ("https://registry.example.com/", "https://registry.example.com"),
        ("https://registry.example.com:8443/tfe", "https://registry.example.com:8443"),
    ],
)
def test_the_template_lets_the_archive_bucket_take_puts_from_the_ui_origin_only(
    address: str, origin: str
) -> None:
    from infrastructure import template

    merged = template.merge_template()
    bucket = merged["Resources"]["ArchiveBucket"]["Properties"]
    condition, rule, otherwise = bucket["CorsConfiguration"]["Fn::If"]
    assert otherwise == {"Ref": "AWS::NoValue"}  # no InstanceAddress: no CORS at all
    assert merged["Conditions"][condition] == {
        "Fn::Not": [{"Fn::Equals": [{"Ref": "InstanceAddress"}, ""]}]
    }
    (only,) = rule["CorsRules"]
    assert only["AllowedMethods"] == ["PUT"] and only["AllowedHeaders"] == ["Content-Type"]
    assert _evaluate(only["AllowedOrigins"], address) == [origin]


def test_the_local_stack_lets_the_bucket_take_puts_from_its_ui_origins(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from infrastructure.local import ui_origins

    monkeypatch.setenv("REGISTRY_PUBLIC_URL", "https://tfe.example.com/")
    assert ui_origins("127.0.0.1", 8000) == [
        "http://127.0.0.1:8000",
        "http://localhost:8000",
        "https://tfe.example.com",
    ]


# ----- from a connected repository -------------------------------------------------------


@pytest.fixture
def repositories() -> Iterator[tuple[GitServer, dict[str, str]]]:
    """The loopback git server of tests/modules/test_publishing.py (acme/terraform-aws-net)."""
    yield from serve()


def test_a_publisher_publishes_from_a_connected_repository(
    org: Api, publisher: Browser, reader: Browser, repositories: tuple[GitServer, dict[str, str]]
) -> None:
    server, _ = repositories
    token_id = connect(org, server, org=ORG)
    form = publisher.get(PUBLISH)
    assert f'<option value="{token_id}"' in form.text and 'id="vcs-form"' in form.text
    action = PUBLISH + "/vcs"
    wrong = submit(publisher, PUBLISH, action, oauth_token_id=token_id, identifier="acme/nope")
    assert wrong.status_code == 422 and 'id="vcs-error"' in wrong.text
    assert 'value="acme/nope"' in wrong.text
    token = reader.csrf(f"/app/{ORG}/registry/modules")
    fields = {"oauth_token_id": token_id, "identifier": "acme/terraform-aws-net"}
    assert reader.post(action, {**fields, "csrf_token": token}).status_code == 404
    assert publisher.post(action, fields).status_code == 403
    assert org.get(f"/api/v2/organizations/{ORG}/registry-modules").data == []

    made = submit(publisher, PUBLISH, action, **fields)
    net = f"{PUBLISH}/private/{ORG}/net/aws"
    assert made.status_code == 303 and made.headers["Location"] == net + "?connected=1"
    drain()
    module = org.get(f"/api/v2/organizations/{ORG}/registry-modules/private/{ORG}/net/aws")
    attrs = module.data["attributes"]
    assert attrs["publishing-mechanism"] == "git_tag"
    assert attrs["vcs-repo"]["identifier"] == "acme/terraform-aws-net"
    ok = {s["version"] for s in attrs["version-statuses"] if s["status"] == "ok"}
    assert "1.0.0" in ok
    page = publisher.get(net)
    assert "version for every version tag" in page.text and 'id="version-form"' not in page.text


def test_a_deprecation_deadline_through_the_form_is_shown_moved_and_refused(
    org: Api, publisher: Browser
) -> None:
    """The deprecate form's "Revoke on (UTC)" field (a ``datetime-local`` value, read as UTC)
    sets ``revoke-at``; the version page and the module page say when; the form comes back
    filled with it (deprecating again keeps it unless it is cleared); a bad or past one is
    refused on the form and changes nothing."""
    from datetime import UTC, datetime, timedelta

    upload_and_ingest(upload_link(published_version(publisher)), tar_gz({"main.tf": MAIN_TF}))
    version = f"{MODULE}/1.0.0"
    ask = publisher.get(version + "/deprecate")
    assert 'name="revoke-at" type="datetime-local"' in ask.text
    when = (datetime.now(UTC) + timedelta(days=40)).replace(second=0, microsecond=0)
    local = when.strftime("%Y-%m-%dT%H:%M")
    done = submit(publisher, version + "/deprecate", version + "/deprecate", **{"revoke-at": local})
    assert done.status_code == 303
    kept = when.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert api_version(org, "1.0.0")["deprecation"]["revoke-at"] == kept
    page = publisher.get(version).text
    assert 'id="deadline"' in page and f'datetime="{kept}"' in page
    module_page = publisher.get(f"/app/{ORG}/registry/modules/private/{ORG}/vpc/aws/1.0.0").text
    assert 'id="deprecation-deadline"' in module_page and f'datetime="{kept}"' in module_page
    again = publisher.get(version + "/deprecate").text
    assert f'value="{kept.removesuffix("Z")}"' in again

    past = (datetime.now(UTC) - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M")
    for bad, message in ((past, "must not be in the past"), ("soon", "must be a date and time")):
        refused = submit(
            publisher, version + "/deprecate", version + "/deprecate", **{"revoke-at": bad}
        )
        assert refused.status_code == 422 and message in refused.text, refused.text
        assert api_version(org, "1.0.0")["deprecation"]["revoke-at"] == kept

    cleared = submit(publisher, version + "/deprecate", version + "/deprecate", **{"revoke-at": ""})
    assert cleared.status_code == 303
    assert "revoke-at" not in api_version(org, "1.0.0")["deprecation"]
    assert 'id="no-deadline"' in publisher.get(version).text
