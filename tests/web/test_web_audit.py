"""The audit trail's pages in-process: an organization's owners read its trail (filters, pages,
a link to each resource), anyone else gets the not-found page and sees none of it; site
admins read the site's and any organization's; a refused filter shows the form again with
its reason; a new organization under a deleted one's name shows none of the old one's
events; a module version's publishing page shows who deprecated and revoked it.

The browser tests (Chromium, axe-core, a 390 px phone) are in tests/e2e/test_audit_web_e2e.py
and tests/e2e/test_siteadmin_e2e.py.
"""

from __future__ import annotations

import html
import re
from datetime import timedelta
from typing import Any

import pytest

from chalicelib.accounts.users.service import create_user
from chalicelib.core.audit import events, trail
from chalicelib.core.auth import Principal, mint_token
from tests.accounts.helpers import add_member, team_id_by_name
from tests.audit.test_audit_trail import START
from tests.conftest import ADMIN_TOKEN, Api, doc, make_org, make_team, tar_gz
from tests.modules.helpers import MAIN_TF
from tests.support.web_browser import Browser
from tests.web.test_web_publishing import MODULE, published_version, upload_and_ingest, upload_link

TRAIL = "/app/acme/audit-trail"
ADMIN_TRAIL = "/app/admin/audit-trail"
ALICE = Principal("user", "user-alice", "at-a")
VERSION_KEY = "private#acme#vpc#aws"


def _record(
    resource_type: str,
    resource_id: str,
    action: str,
    n: int,
    *,
    org: str | None = "acme",
    meta: dict[str, Any] | None = None,
) -> None:
    trail.record(
        events.event(
            ALICE,
            organization=org,
            resource_type=resource_type,
            resource_id=resource_id,
            action=action,
            meta=meta,
            description="alice",
            moment=START + timedelta(seconds=n),
        )
    )


def _signed_in(api: Api, token: str) -> Browser:
    browser = Browser(api.client)
    assert browser.sign_in(token).status_code == 303
    return browser


def _user(api: Api, username: str, *, owner_of: str | None = None) -> Browser:
    """A user (no site admin), an owner of ``owner_of``, signed in with a token of theirs."""
    user = create_user(username, f"{username}@example.com")
    _, secret = mint_token("user", user.id)
    if owner_of:
        assert add_member(api, team_id_by_name(api, owner_of, "owners"), username).status < 300
    return _signed_in(api, secret)


def _text(reply: Any) -> str:
    return html.unescape(reply.text)


def _event_rows(reply: Any) -> list[str]:
    return re.findall(r'<tr id="event-([0-9a-f-]+)">', reply.text)


@pytest.fixture
def acme(api: Api) -> Api:
    make_org(api, "acme")
    _record(
        "registry-module-version",
        "modver-1",
        "deprecated",
        1,
        meta={"module": VERSION_KEY, "version": "1.0.0", "reason": "use 2.x"},
    )
    _record("team", "team-abc", "created", 2)
    _record("registry-module", "mod-1", "deleted", 3, meta={"module": VERSION_KEY})
    _record("user", "user-bob", "admin-granted", 4, org=None)
    return api


def test_an_owner_reads_the_trail_with_filters_and_a_link_to_each_resource(acme: Api) -> None:
    olga = _user(acme, "olga", owner_of="acme")
    page = olga.get(TRAIL)
    assert page.status_code == 200, page.text
    text = _text(page)
    # Every event of the organization (its creation, olga joining its owners, the three
    # recorded), none of the site's.
    _, kept = trail.read_page("acme", None, 1, 100)
    assert len(_event_rows(page)) == kept >= 5 and "user-bob" not in text
    assert "use 2.x" in text and "alice" in text
    # The version links to its module page, the team to its page; a deleted module to none.
    assert 'href="/app/acme/registry/modules/private/acme/vpc/aws/1.0.0"' in page.text
    assert 'href="/app/acme/teams/team-abc"' in page.text
    assert 'class="resource-link">mod-1<' not in page.text
    # The organization's navigation links its owners to it.
    assert 'href="/app/acme/audit-trail" aria-current="page"' in page.text
    assert 'href="/app/acme/audit-trail"' in olga.get("/app/acme/members").text

    filtered = olga.get(f"{TRAIL}?resource-type=team&actor=alice")  # not olga joining
    assert len(_event_rows(filtered)) == 1 and "team-abc" in filtered.text
    assert len(_event_rows(olga.get(f"{TRAIL}?action=deleted&actor=alice"))) == 1
    assert len(_event_rows(olga.get(f"{TRAIL}?actor=user-alice"))) == 3
    window = olga.get(f"{TRAIL}?since=2099-01-02T03:04:06&until=2099-01-02T03:04:08")
    assert len(_event_rows(window)) == 1 and "team-abc" in window.text
    none = olga.get(f"{TRAIL}?actor=nobody")
    assert none.status_code == 200 and 'id="no-events"' in none.text


def test_the_trail_pages_fifty_events_at_a_time(acme: Api) -> None:
    for n in range(60):
        _record("team", f"team-{n:03d}", "updated", 10 + n)
    first = _signed_in(acme, ADMIN_TOKEN).get(f"{TRAIL}?resource-type=team")
    assert len(_event_rows(first)) == 50 and "Page 1 of 2" in first.text
    assert 'href="/app/acme/audit-trail?resource-type=team&amp;page=2"' in first.text
    second = _signed_in(acme, ADMIN_TOKEN).get(f"{TRAIL}?resource-type=team&page=2")
    assert len(_event_rows(second)) == 11 and "team-059" in second.text
    assert _signed_in(acme, ADMIN_TOKEN).get(f"{TRAIL}?page=3").status_code == 404


def test_no_one_else_reads_an_organizations_trail(acme: Api) -> None:
    """A member who is no owner, a team's token and another organization's owner get the
    not-found page, with none of acme's events; without a session: the sign-in page."""
    make_org(acme, "evil")
    evil_owner = _user(acme, "eve", owner_of="evil")
    _, readers_token = make_team(acme, "acme", "readers")
    member = _user(acme, "rita")
    assert add_member(acme, team_id_by_name(acme, "acme", "readers"), "rita").status < 300
    for browser in (evil_owner, member, _signed_in(acme, readers_token)):
        for path in (
            TRAIL,
            f"{TRAIL}?actor=alice",
            ADMIN_TRAIL,
            f"{ADMIN_TRAIL}?organization=acme",
        ):
            refused = browser.get(path)
            assert refused.status_code == 404, (path, refused.status_code)
            assert "team-abc" not in refused.text and "use 2.x" not in refused.text
    assert evil_owner.get("/app/evil/audit-trail").status_code == 200
    assert 'href="/app/acme/audit-trail"' not in member.get("/app/acme/members").text
    anonymous = Browser(acme.client).get(TRAIL)
    assert anonymous.status_code == 303 and anonymous.headers["Location"].startswith(
        "/app/sign-in?next="
    )


@pytest.mark.parametrize(
    ("query", "reason"),
    [
        ("resource-type=Not%20A%20Type", "resource-type: lowercase words"),
        ("action=" + "x" * 65, "action: at most 64 characters"),
        ("since=yesterday", "since must be an ISO 8601 time"),
        ("until=2099-13-45", "until must be an ISO 8601 time"),
        ("actor=a%01b", "actor: an actor's id or username"),
    ],
)
def test_a_refused_filter_shows_the_form_again_with_its_reason(
    acme: Api, query: str, reason: str
) -> None:
    refused = _signed_in(acme, ADMIN_TOKEN).get(f"{TRAIL}?{query}")
    assert refused.status_code == 400, refused.text
    assert reason in _text(refused)
    assert _event_rows(refused) == []


def test_site_admins_read_the_sites_trail_and_any_organizations(acme: Api) -> None:
    admin = _signed_in(acme, ADMIN_TOKEN)
    site = admin.get(ADMIN_TRAIL)
    _, kept = trail.read_page(None, None, 1, 100)  # the admin's sign-in among them
    assert site.status_code == 200 and len(_event_rows(site)) == kept >= 1
    assert "admin-granted" in site.text and 'href="/app/admin/users"' in site.text
    assert 'href="/app/admin/audit-trail" aria-current="page"' in site.text
    of_acme = admin.get(f"{ADMIN_TRAIL}?organization=acme&resource-type=team&actor=alice")
    assert len(_event_rows(of_acme)) == 1 and "team-abc" in of_acme.text
    # The actor's link filters this organization's trail.
    assert 'href="/app/admin/audit-trail?organization=acme&amp;actor=user-alice"' in of_acme.text
    olga = _user(acme, "olga", owner_of="acme")
    assert olga.get(ADMIN_TRAIL).status_code == 404  # an owner, not a site admin


def test_a_new_organization_under_a_deleted_ones_name_shows_none_of_its_events(
    api: Api,
) -> None:
    """oldco's events (written now, as its changes are) stay oldco's: the new oldco's page
    shows none of them, the site admins' page still does."""
    make_org(api, "oldco")
    for n in range(2):
        trail.record(
            events.event(
                ALICE,
                organization="oldco",
                resource_type="team",
                resource_id=f"team-old{n}",
                action="created",
            )
        )
    assert api.delete("/api/v2/organizations/oldco").status in (200, 202, 204)
    make_org(api, "oldco")
    admin = _signed_in(api, ADMIN_TOKEN)
    page = admin.get("/app/oldco/audit-trail")
    assert page.status_code == 200
    assert "team-old" not in page.text
    assert _event_rows(admin.get("/app/oldco/audit-trail?actor=user-alice")) == []
    kept = admin.get(f"{ADMIN_TRAIL}?organization=oldco&actor=user-alice")
    assert len(_event_rows(kept)) == 2  # site admins still read the old one's


def test_a_version_page_shows_who_deprecated_and_revoked_it(acme: Api) -> None:
    owner = _signed_in(acme, ADMIN_TOKEN)
    upload_and_ingest(upload_link(published_version(owner)), tar_gz({"main.tf": MAIN_TF}))
    version = f"{MODULE}/1.0.0"
    api_version = "/api/v2/organizations/acme/registry-modules/private/acme/vpc/aws/1.0.0"
    deprecated = acme.patch(
        api_version,
        doc("module-versions", deprecation={"deprecated-status": "Deprecated"}),
    )
    assert deprecated.status == 200, deprecated.json
    revoked = acme.patch(
        api_version,
        doc("module-versions", revocation={"status": "Revoked", "message": "CVE-1"}),
    )
    assert revoked.status == 200, revoked.json
    page = owner.get(version)
    assert page.status_code == 200
    history = page.text[page.text.index('id="history"') :]
    rows = re.findall(r'<span class="audit-action">([a-z-]+)</span>', history)
    assert rows[-2:] == ["deprecated", "revoked"], rows
    assert "admin" in history and "CVE-1" in html.unescape(history)
    # The fabricated event of another version (modver-1) is not this one's.
    assert "use 2.x" not in html.unescape(history)
    assert 'href="/app/acme/audit-trail"' in history  # owners: on to the whole trail
    assert "request " in history  # owners see where each change came from
    # A manage-modules team publishes too: it sees who did what, not from which address,
    # user agent or request (those are the owners', on the organization's trail).
    _, ci_token = make_team(acme, "acme", "ci", manage_modules=True)
    publisher = _signed_in(acme, ci_token).get(version)
    assert publisher.status_code == 200
    theirs = publisher.text[publisher.text.index('id="history"') :]
    assert re.findall(r'<span class="audit-action">([a-z-]+)</span>', theirs)[-2:] == [
        "deprecated",
        "revoked",
    ]
    assert "request " not in theirs and ">From<" not in theirs
    assert 'href="/app/acme/audit-trail"' not in theirs


def test_the_page_that_makes_the_sites_signing_key_changes_nothing_anyones(api: Api) -> None:
    """The sign-in form's CSRF key is made by the first page that needs it: the site's own
    bookkeeping, no one's change (no audit event, and no unexplained change either)."""
    from chalicelib.core.audit import check
    from chalicelib.web import store as web_store

    web_store.signing_key.cache_clear()
    check.VIOLATIONS.clear()
    assert Browser(api.client).get("/app/sign-in").status_code == 200
    assert web_store.WebKeyModel.get(web_store.SIGNING_KEY_ID).sealed
    assert check.VIOLATIONS == []
