"""The module cache's settings (``/api/v2/admin/module-cache-settings`` and its page) and the
two-way reservation between organization names and allowed namespaces (fast layer).

Through the whole app and through the deployed functions' own entry apps (the admin
function serves the settings, the accounts function creates organizations). Every refusal
is checked to change nothing: the settings item, the organizations and the audit trail read
back the same.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from chalicelib.modules.cache import settings
from tests.admin.helpers import admin_id, events_of, make_user
from tests.conftest import Api, doc, make_org
from tests.support.web_browser import Browser

PATH = "/api/v2/admin/module-cache-settings"
NS, HOSTS = settings.NAMESPACES, settings.SOURCE_HOSTS


def body(**attributes: Any) -> dict[str, Any]:
    """As go-tfe sends an admin singleton: an empty type."""
    return {"data": {"type": "", "attributes": attributes}}


def state() -> tuple[Any, ...]:
    """What a refused request must leave as it was: the settings item, the organizations,
    the site's audit events."""
    from chalicelib.accounts.organizations.service import all_organizations

    try:
        item = settings.CacheSettingsModel.get(settings.KEY, consistent_read=True)
        stored: Any = (item.allowed_namespaces, item.allowed_source_hosts, item.updated_at)
    except settings.CacheSettingsModel.DoesNotExist:
        stored = None
    from tests.admin.helpers import trail_events

    return stored, [o.name for o in all_organizations()], len(trail_events())


@pytest.fixture
def entry_clients(api: Api, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Api]]:
    """The admin and accounts functions' own apps, as deployed, with the site admin's token."""
    from chalice.test import Client

    from chalicelib.entry.api.accounts import app as accounts_app
    from chalicelib.entry.api.admin import app as admin_app

    project = str(tmp_path_factory.mktemp("entry"))
    with (
        Client(admin_app, project_dir=project) as admin,
        Client(accounts_app, project_dir=project) as accounts,
    ):
        yield {"admin": Api(admin, api.token), "accounts": Api(accounts, api.token)}


# ----- the API ---------------------------------------------------------------------------------


def test_nothing_is_allowed_by_default_and_github_is_the_source_host(api: Api) -> None:
    reply = api.get(PATH)
    assert reply.status == 200
    assert reply.data == {
        "id": "module-cache-settings",
        "type": "module-cache-settings",
        "attributes": {NS: [], HOSTS: ["github.com"]},
    }
    assert settings.current().allows("terraform-aws-modules") is False


def test_a_site_admin_sets_the_lists_with_one_audit_event(entry_clients: dict[str, Api]) -> None:
    admin = entry_clients["admin"]
    reply = admin.patch(
        PATH,
        body(
            **{
                NS: ["terraform-aws-modules", "Azure", "azure", "hashicorp_x"],
                HOSTS: ["GitHub.com", "git.example.test:8443", "github.com"],
            }
        ),
    )
    assert reply.status == 200, reply.json
    wanted = {NS: ["terraform-aws-modules", "Azure", "hashicorp_x"]}
    wanted[HOSTS] = ["github.com", "git.example.test:8443"]
    assert reply.data["attributes"] == wanted
    assert admin.get(PATH).data["attributes"] == wanted
    # Every instance's copy follows (this one forgot it at once); namespaces in any case.
    found = settings.current()
    assert found.allows("AZURE") and found.allows("terraform-aws-modules")
    assert found.allowed_source_hosts == ("github.com", "git.example.test:8443")

    (event,) = events_of("updated")
    assert event["resource"]["type"] == "module-cache-settings"
    assert event["resource"]["id"] == "module-cache-settings"
    assert event["auth"]["accessor_id"] == admin_id()
    assert event["resource"]["meta"]["changed"] == [NS, HOSTS]
    assert event["resource"]["meta"][NS] == wanted[NS]
    assert event["resource"]["meta"][HOSTS] == wanted[HOSTS]

    # A list omitted (or null) is kept; an empty one empties it.
    again = admin.patch(PATH, body(**{NS: [], HOSTS: None}))
    assert again.data["attributes"] == {NS: [], HOSTS: wanted[HOSTS]}
    assert events_of("updated")[-1]["resource"]["meta"]["changed"] == [NS]
    assert settings.current().allows("azure") is False


LONG_HOST = ".".join(["a" * 63] * 4)  # 255 characters: over a DNS name's 253
REFUSED: dict[str, tuple[dict[str, Any], str]] = {
    "too many namespaces": ({NS: [f"ns{i}" for i in range(101)]}, NS),
    "a namespace too long": ({NS: ["n" * 65]}, NS),
    "a namespace with a slash": ({NS: ["hashicorp/aws"]}, NS),
    "a namespace with a space": ({NS: ["hashi corp"]}, NS),
    "a namespace with a newline": ({NS: ["hashicorp\n"]}, NS),
    "an empty namespace": ({NS: [""]}, NS),
    "a namespace that is not text": ({NS: [7]}, NS),
    "namespaces that are not a list": ({NS: "hashicorp"}, NS),
    "too many hosts": ({HOSTS: [f"h{i}.example.test" for i in range(51)]}, HOSTS),
    "a host with a scheme": ({HOSTS: ["https://github.com"]}, HOSTS),
    "a host with a path": ({HOSTS: ["github.com/hashicorp"]}, HOSTS),
    "a host with credentials": ({HOSTS: ["user:secret@github.com"]}, HOSTS),
    "a port out of range": ({HOSTS: ["github.com:65536"]}, HOSTS),
    "port zero": ({HOSTS: ["github.com:0"]}, HOSTS),
    "a host too long": ({HOSTS: [LONG_HOST]}, HOSTS),
    "a wildcard": ({HOSTS: ["*.github.com"]}, HOSTS),
    "a host with a newline": ({HOSTS: ["github.com\n"]}, HOSTS),
    "a host with spaces": ({HOSTS: [" github.com"]}, HOSTS),
    "an IPv6 literal": ({HOSTS: ["[::1]:8080"]}, HOSTS),
    "a host that is not text": ({HOSTS: [{"host": "github.com"}]}, HOSTS),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_anything_else_is_refused_before_any_write(api: Api, case: str) -> None:
    attributes, named = REFUSED[case]
    # A valid list beside the refused one is not stored either.
    other = HOSTS if named == NS else NS
    sent = {other: ["good-one"] if other == NS else ["good.example.test"], **attributes}
    before = state()
    reply = api.patch(PATH, body(**sent))
    assert reply.status == 422, reply.json
    assert named in reply.error["source"]["pointer"] or named in reply.error["detail"]
    assert state() == before


def test_the_bounds_themselves_are_accepted(api: Api) -> None:
    namespaces = [f"n{i}-{'x' * 50}"[:64] for i in range(100)]
    hosts = [f"h{i}.example.test:65535" for i in range(50)]
    reply = api.patch(PATH, body(**{NS: namespaces, HOSTS: hosts}))
    assert reply.status == 200, reply.json
    assert settings.stored() == settings.CacheSettings(tuple(namespaces), tuple(hosts))


def test_only_site_admins_see_or_change_them(api: Api) -> None:
    _, token = make_user("someone")
    assert api.as_(token).get(PATH).status == 404
    assert api.as_(token).patch(PATH, body(**{NS: ["hashicorp"]})).status == 404
    assert api.as_(None).get(PATH).status == 401
    assert api.as_("not-a-token").patch(PATH, body(**{NS: ["hashicorp"]})).status == 401
    assert settings.stored() == settings.CacheSettings()


def test_the_hosted_edition_has_no_such_settings(api: Api, hosted: None) -> None:
    assert api.get(PATH).status == 404
    assert api.patch(PATH, body(**{NS: ["hashicorp"]})).status == 404
    assert settings.stored() == settings.CacheSettings()


def test_two_changes_at_once_never_overwrite_each_other(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second writer's item changed after it was read: 409, and only the first change
    (with its one event) is stored."""
    real = settings._organizations_named

    def meanwhile(names: list[str]) -> list[str]:
        monkeypatch.setattr(settings, "_organizations_named", real)
        settings.save(None, ["first"])  # another admin's change lands in between
        return real(names)

    monkeypatch.setattr(settings, "_organizations_named", meanwhile)
    reply = api.patch(PATH, body(**{NS: ["second"]}))
    assert reply.status == 409, reply.json
    assert settings.stored().allowed_namespaces == ("first",)
    assert len(events_of("updated")) == 1


# ----- organizations and namespaces: one name, one owner -------------------------------------


def test_an_organization_name_cannot_be_allowed_in_any_case(entry_clients: dict[str, Api]) -> None:
    make_org(entry_clients["accounts"], "Acme-Cloud")
    admin = entry_clients["admin"]
    before = state()
    reply = admin.patch(PATH, body(**{NS: ["terraform-aws-modules", "acme-cloud"]}))
    assert reply.status == 422
    assert "Acme-Cloud" in reply.error["detail"]
    assert reply.error["source"]["pointer"] == f"/data/attributes/{NS}"
    assert state() == before


def test_an_allowed_namespace_cannot_become_an_organization(
    entry_clients: dict[str, Api],
) -> None:
    admin, accounts = entry_clients["admin"], entry_clients["accounts"]
    assert admin.patch(PATH, body(**{NS: ["HashiCorp"]})).status == 200
    before = state()
    for name in ("hashicorp", "HASHICORP", "HashiCorp"):
        reply = accounts.post(
            "/api/v2/organizations", doc("organizations", name=name, email="o@x.io")
        )
        assert reply.status == 422, name
        assert "reserved" in reply.error["detail"] and name in reply.error["detail"]
        assert reply.error["source"]["pointer"] == "/data/attributes/name"
    assert state() == before
    # Any other name is still free; once the namespace is no longer allowed, so is its name.
    make_org(accounts, "hashicorp-internal")
    assert admin.patch(PATH, body(**{NS: []})).status == 200
    make_org(accounts, "hashicorp")


def test_a_namespace_already_allowed_does_not_block_other_changes(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only a namespace a change adds is checked against the organizations (one read of
    the directory, only then): changing the hosts reads no organization."""
    assert api.patch(PATH, body(**{NS: ["hashicorp"]})).status == 200
    asked: list[list[str]] = []
    real = settings._organizations_named

    def counted(names: list[str]) -> list[str]:
        asked.append(names)
        return real(names)

    monkeypatch.setattr(settings, "_organizations_named", counted)
    assert api.patch(PATH, body(**{HOSTS: ["gitlab.example.test"]})).status == 200
    assert api.patch(PATH, body(**{NS: ["HashiCorp", "azure"]})).status == 200
    assert asked == [["azure"]]


def test_every_app_that_creates_organizations_checks_the_namespaces() -> None:
    """An entry app whose routes reach organization creation declares
    ``Uses(namespaces=True)``: without it an organization could take an allowed namespace."""
    from tests.test_authorization import _calls, entry_apps
    from tests.test_layout import GRAPH

    creators = {n for n in GRAPH if _calls(n, "create_organization")}
    assert "chalicelib.lifecycle.organization_routes" in creators

    def reaches(start: set[str]) -> set[str]:
        seen: set[str] = set()
        todo = list(start)
        while todo:
            name = todo.pop()
            if name not in seen:
                seen.add(name)
                todo.extend(GRAPH.get(name, ()))
        return seen

    missing = []
    for name, app in entry_apps().items():
        handlers = {e.view_function.__module__ for m in app.routes.values() for e in m.values()}
        if handlers & creators and not app.uses.namespaces:
            missing.append(name)
    assert missing == []
    assert {n for n, a in entry_apps().items() if a.uses.namespaces} == {
        "chalicelib.entry.api.accounts"
    }


# ----- the page --------------------------------------------------------------------------------

PAGE = "/app/admin/module-cache"


@pytest.fixture
def admin_browser(api: Api) -> Browser:
    from tests.conftest import ADMIN_TOKEN

    browser = Browser(api.client)
    assert browser.sign_in(ADMIN_TOKEN).status_code == 303
    return browser


def test_the_page_shows_and_saves_both_lists(api: Api, admin_browser: Browser) -> None:
    page = admin_browser.get(PAGE)
    assert page.status_code == 200
    assert ">github.com</textarea>" in page.text
    form = {
        "csrf_token": admin_browser.csrf(PAGE),
        NS: "terraform-aws-modules\r\n\r\nAzure\r\n",
        HOSTS: "github.com\r\nGit.Example.test:8443",
    }
    saved = admin_browser.post(PAGE, form)
    assert saved.status_code == 303 and saved.headers["Location"].endswith("?saved=1")
    assert api.get(PATH).data["attributes"] == {
        NS: ["terraform-aws-modules", "Azure"],
        HOSTS: ["github.com", "git.example.test:8443"],
    }
    assert events_of("updated")[-1]["resource"]["type"] == "module-cache-settings"
    assert "terraform-aws-modules\nAzure</textarea>" in admin_browser.get(PAGE).text


def test_the_page_refuses_as_the_api_does_and_changes_nothing(
    api: Api, admin_browser: Browser
) -> None:
    make_org(api, "acme")
    before = state()
    for namespaces, hosts, reason in (
        ("acme", "github.com", "acme is an organization"),
        ("ok", "https://github.com", "no scheme"),
        ("not/one", "github.com", "not a registry namespace"),
    ):
        form = {"csrf_token": admin_browser.csrf(PAGE), NS: namespaces, HOSTS: hosts}
        refused = admin_browser.post(PAGE, form)
        assert refused.status_code == 422, namespaces
        assert reason in refused.text.replace("&#39;", "'")
        assert f">{namespaces}</textarea>" in refused.text  # what was sent, to correct
        assert state() == before
    # No CSRF token: refused, nothing changed.
    assert admin_browser.post(PAGE, {NS: "ok", HOSTS: ""}).status_code == 403
    assert state() == before
