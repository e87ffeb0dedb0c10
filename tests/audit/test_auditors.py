"""The read-only auditors (issue #37): an organization's audit trail token (HCP Terraform's
``?token=audit-trails``, as go-tfe v1.109.0's OrganizationTokens ...WithOptions and their
integration tests use it) reads its organization's trail and is refused by every other route
of every function; a site auditor (a user flag site admins grant and revoke) reads the site's
trail and nothing else of the admin API."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from chalicelib.core.auth import Principal
from tests.conftest import Api
from tests.test_authorization import ROUTES, _body, _items, _path, entry_apps

TOKEN = "/api/v2/organizations/acme/authentication-token"
AUDIT = TOKEN + "?token=audit-trails"
ORG_TRAIL = "/api/v2/organization/audit-trail"
ADMIN_TRAIL = "/api/v2/admin/audit-trail"
USERS = "/api/v2/admin/users"


def _admin(api: Api) -> Principal:
    from chalicelib.accounts.users.service import find_user_by_name

    admin = find_user_by_name("admin")
    assert admin is not None
    return Principal("user", admin.id, "at-admin")


@pytest.fixture
def acme(api: Api) -> Api:
    """The organization (made through its service: its own route's event is another part's)
    and its plain organization token."""
    from chalicelib.accounts.organizations import service as organizations_service

    for name in ("acme", "other"):
        organizations_service.create_organization(_admin(api), name, "o@x.io", limited=False)
    return api


def _created(reply: Any) -> tuple[str, str]:
    assert reply.status == 201, reply.json
    return reply.data["id"], reply.data["attributes"]["token"]


def test_the_audit_trail_token_as_go_tfe_creates_reads_and_deletes_it(acme: Api) -> None:
    """Beside the organization token, not in place of it: each is read by its type; a new
    audit trail token replaces the old one (which stops working); deleting it twice is a
    404 the second time; an unknown type is a 422; each change is in the trail."""
    from chalicelib.accounts.tokens import service as tokens_service

    plain, _ = tokens_service.create_organization_token(_admin(acme), "acme", None)
    first_id, first = _created(acme.post(AUDIT, raw="null"))
    assert acme.get(TOKEN).data["id"] == plain.id  # ReadWithOptions{}: the plain token
    assert acme.get(AUDIT).data["id"] == first_id  # ReadWithOptions{TokenType}
    assert acme.as_(first).get(ORG_TRAIL).status == 200
    second_id, second = _created(acme.post(AUDIT, raw="null"))
    assert second_id != first_id and acme.get(AUDIT).data["id"] == second_id
    assert acme.as_(first).get(ORG_TRAIL).status == 401  # replaced: revoked at once
    trail = acme.as_(second).get(ORG_TRAIL).json["data"]
    audit_tokens = [e for e in trail if e["resource"]["id"] in (first_id, second_id)]
    assert [(e["resource"]["action"], e["resource"]["id"]) for e in audit_tokens] == [
        ("created", first_id),
        ("created", second_id),
    ]
    assert audit_tokens[1]["resource"]["type"] == "authentication-token"
    assert audit_tokens[1]["resource"]["meta"] == {
        "token-type": "audit-trails",
        "replaced": first_id,
        "outcome": "succeeded",
    }
    assert all(second not in str(e) and first not in str(e) for e in trail)  # no secret
    assert acme.delete(AUDIT).status == 204
    assert acme.get(AUDIT).status == 404
    assert acme.delete(AUDIT).status == 404
    assert acme.as_(second).get(ORG_TRAIL).status == 401
    assert acme.get(TOKEN).data["id"] == plain.id  # the organization token stays
    assert acme.get(TOKEN + "?token=organization").status == 422
    assert acme.post(TOKEN + "?token=" + "x" * 5000, raw="null").status == 422
    audit_token_events = [
        e["resource"]["action"]
        for e in _org_trail(acme, "acme")
        if e["resource"]["id"] in (first_id, second_id)
    ]
    assert audit_token_events == ["created", "created", "deleted"]


def _org_trail(api: Api, org: str) -> list[dict[str, Any]]:
    reply = api.get(f"{ADMIN_TRAIL}?filter[organization]={org}")
    assert reply.status == 200, reply.json
    data: list[dict[str, Any]] = reply.json["data"]
    return data


def test_only_the_owners_manage_the_audit_trail_token(acme: Api) -> None:
    from tests.accounts.helpers import new_user

    _, stranger = new_user(acme, "stranger")
    assert stranger.post(AUDIT, raw="null").status == 404
    assert stranger.get(AUDIT).status == 404
    _created(acme.post(AUDIT, raw="null"))
    assert stranger.delete(AUDIT).status == 404
    assert acme.get(AUDIT).status == 200


def test_the_audit_trail_token_reads_its_organizations_trail_only(acme: Api) -> None:
    from chalicelib.core.audit import events, trail

    for org in ("acme", "other"):
        trail.record(
            events.event(
                _admin(acme),
                organization=org,
                resource_type="thing",
                resource_id=f"{org}-thing",
                action="updated",
            )
        )
    _, secret = _created(acme.post(AUDIT, raw="null"))
    shown = acme.as_(secret).get(ORG_TRAIL).json["data"]
    assert [e["resource"]["id"] for e in shown if e["resource"]["type"] == "thing"] == [
        "acme-thing"
    ]
    assert acme.as_(secret).get(ADMIN_TRAIL + "?filter[organization]=other").status == 401


def _walk(routes: list[Any], token: str, wanted: Any, project: str) -> list[tuple[Any, ...]]:
    """Each route called with ``token`` through its own function's entry app: those whose
    status ``wanted(route, status)`` refuses, and any that wrote."""
    import json

    from chalice.test import Client

    from infrastructure.openapi import TARGET

    document = json.loads(TARGET.read_text(encoding="utf-8"))
    values = {"organization_name": "acme", "organization": "acme", "namespace": "acme"}
    wrong = []
    with contextlib.ExitStack() as stack:
        clients = {
            name: stack.enter_context(Client(app, project_dir=project))
            for name, app in entry_apps().items()
        }
        state = _items()
        for route in routes:
            reply = Api(clients[route.app], token).call(
                route.method,
                _path(route, values),
                raw=_body(route, document),
                content_type=route.content_type,
            )
            after = _items()
            if not wanted(route, reply.status) or after != state:
                wrong.append((route.method, route.path, reply.status, after != state))
            state = after
    return wrong


def test_every_other_route_of_every_function_refuses_the_audit_trail_token(
    acme: Api, tmp_path: Any
) -> None:
    """The wrong-callers walk with an audit trail token: a 401 everywhere (writing nothing)
    but the organization's trail; and no browser session opens with it."""
    _, secret = _created(acme.post(AUDIT, raw="null"))

    def refused_but_the_trail(route: Any, status: int) -> bool:
        if route.path == ORG_TRAIL:
            return status == 200
        return status == 401

    # Every route a token is sent to (public and signed routes read none).
    walked = [r for r in ROUTES if not r.page and r.access not in ("public", "signed")]
    assert len(walked) > 200
    assert acme.as_(secret).get(ORG_TRAIL).status == 200  # its first use is noted before
    wrong = _walk(walked, secret, refused_but_the_trail, str(tmp_path))
    assert wrong == [], "\n".join(map(repr, wrong))
    # The web's token sign-in opens sessions through ``session.start``: refused; and a
    # session's token is read through ``principal_for_hash``: none.
    from chalicelib.core.api.errors import Unauthorized
    from chalicelib.core.auth import hash_token, principal_for_hash
    from chalicelib.web import session

    with pytest.raises(Unauthorized, match="audit trail only"):
        session.start(secret)
    assert principal_for_hash(hash_token(secret)) is None


@pytest.fixture
def auditor(api: Api) -> Iterator[tuple[str, Api]]:
    """A user (no organization) and their token; not an auditor yet."""
    from tests.accounts.helpers import new_user

    yield new_user(api, "auditor")


def test_site_admins_grant_and_revoke_the_site_auditor(api: Api, auditor: Any) -> None:
    """The admin users API's grant_auditor/revoke_auditor actions (as grant_admin and
    revoke_admin): the user's ``is-auditor``; each a site-wide event; the auditor reads the
    site's trail while granted; a missing user is a 404, a non-admin is refused."""
    user_id, client = auditor
    assert client.get(ADMIN_TRAIL).status == 404
    granted = api.post(f"{USERS}/{user_id}/actions/grant_auditor")
    assert granted.status == 200, granted.json
    assert granted.data["attributes"]["is-auditor"] is True
    assert granted.data["attributes"]["is-admin"] is False
    [listed] = api.get(f"{USERS}?q=auditor").data
    assert listed["attributes"]["is-auditor"] is True
    site = client.get(ADMIN_TRAIL)
    assert site.status == 200, site.json
    [event] = [e for e in site.json["data"] if e["resource"]["type"] == "user"]
    assert event["resource"]["id"] == user_id
    assert event["resource"]["action"] == "auditor-granted"
    assert event["auth"]["description"] == "admin"
    assert client.post(f"{USERS}/{user_id}/actions/revoke_auditor").status == 404
    revoked = api.post(f"{USERS}/{user_id}/actions/revoke_auditor")
    assert revoked.status == 200 and revoked.data["attributes"]["is-auditor"] is False
    assert client.get(ADMIN_TRAIL).status == 404
    actions = [e["resource"]["action"] for e in api.get(ADMIN_TRAIL).json["data"]]
    assert actions[-2:] == ["auditor-granted", "auditor-revoked"]
    assert api.post(f"{USERS}/user-nobody/actions/grant_auditor").status == 404


def test_a_site_auditor_reads_the_site_trail_and_nothing_else_of_the_admin_api(
    api: Api, auditor: Any, tmp_path: Any
) -> None:
    """The walk of every site-administration route with a site auditor's token: 404 (and
    nothing written) everywhere but the site's audit trail, which reads any organization's."""
    user_id, client = auditor
    assert api.post(f"{USERS}/{user_id}/actions/grant_auditor").status == 200
    assert client.get(ADMIN_TRAIL + "?filter[organization]=acme").status == 200

    def refused_but_the_trail(route: Any, status: int) -> bool:
        return status == (200 if route.path == ADMIN_TRAIL else 404)

    # Site administration's API (elsewhere the auditor is any other user: the wrong-callers
    # walk of tests/test_authorization.py covers that).
    walked = [r for r in ROUTES if r.access in ("site-admin", "site-auditor") and not r.page]
    assert len(walked) > 50 and ADMIN_TRAIL in {r.path for r in walked}
    assert _walk(walked, client.token or "", refused_but_the_trail, str(tmp_path)) == []
