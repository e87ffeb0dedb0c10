"""Upgrade campaigns: a module's consumers with the version each downloaded last and where
it stands (revoked, deprecated, behind, current), the organization's modules with consumers
on deprecated versions (most urgent first), their cost, their refusals and their pages."""

from __future__ import annotations

import base64
import json
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlparse

import pytest

from chalicelib.modules.downloads import campaign, counter
from chalicelib.modules.downloads import store as downloads_store
from chalicelib.modules.store import ModuleVersionModel
from tests.conftest import ADMIN_TOKEN, Api, doc, make_org, make_team
from tests.modules.helpers import V1, create_module, publish
from tests.modules.test_downloads import user_in_team
from tests.support.web_browser import Browser

MODULES = "/api/v2/organizations/acme/registry-modules/private/acme"
CONSUMERS = f"{MODULES}/vpc/aws/consumers"
CAMPAIGNS = "/api/v2/organizations/acme/registry-module-campaigns"
DAY_ONE = datetime(2026, 11, 23, 9, 30, tzinfo=UTC)


class Clock:
    """The counter's ``now()``, moved by the test (each download a minute after the last),
    and the reports' ``now()``."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from chalicelib.modules.downloads import service

        self.moment = DAY_ONE
        monkeypatch.setattr(counter, "now", self.tick)
        # The reports' today: two days on (never the machine's clock).
        for reader in (campaign, service):
            monkeypatch.setattr(reader, "now", lambda: DAY_ONE + timedelta(days=2))

    def tick(self) -> datetime:
        self.moment += timedelta(minutes=1)
        return self.moment


def download(api: Api, token: str, version: str, name: str = "vpc") -> None:
    reply = api.as_(token).get(f"{V1}/acme/{name}/aws/{version}/download")
    assert reply.status == 204, reply.json


def change(api: Api, version: str, name: str = "vpc", **attributes: Any) -> None:
    reply = api.patch(f"{MODULES}/{name}/aws/{version}", doc("module-versions", **attributes))
    assert reply.status == 200, reply.json


def deprecate(api: Api, version: str, name: str = "vpc", reason: str = "move to 1.3") -> None:
    deprecation = {"deprecated-status": "Deprecated", "reason": reason, "link": "https://x.io/m"}
    change(api, version, name, deprecation=deprecation)


def revoke(api: Api, version: str, name: str = "vpc") -> None:
    change(api, version, name, revocation={"status": "Revoked", "message": "CVE-2026-7"})


def ahead(days: int) -> str:
    """A deadline ``days`` from now, as the PATCH stores it (the deadline's checks read the
    machine's clock: the tests' deadlines stay ahead of it, whatever the date)."""
    moment = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return f"{moment + timedelta(days=days):%Y-%m-%dT%H:%M:%SZ}"


SOON, MIDDLE, LATER = ahead(30), ahead(60), ahead(120)


def set_deadline(api: Api, version: str, revoke_at: str, name: str = "vpc") -> None:
    """Deprecate the version again with a ``revoke-at`` deadline (the PATCH)."""
    deprecation = {
        "deprecated-status": "Deprecated",
        "reason": "move to 1.3",
        "link": "https://x.io/m",
        "revoke-at": revoke_at,
    }
    change(api, version, name, deprecation=deprecation)


@pytest.fixture
def acme(api: Api) -> Api:
    make_org(api, "acme")
    create_module(api, "vpc", "aws")
    for version in ("1.0.0", "1.1.0", "1.2.0", "1.3.0"):
        publish(api, version)
    return api


@pytest.fixture
def campaign_world(acme: Api, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Five consumers of vpc: one on a revoked version, one on a deprecated one with a
    deadline, a user behind, a team that moved to the latest and an organization token."""
    Clock(monkeypatch)
    ids = {}
    for name in ("legacy", "slow", "fresh"):
        ids[name], ids[f"{name}-token"] = make_team(acme, "acme", name)
    ids["alice"], ids["alice-token"] = user_in_team(acme, "fresh", "alice")
    organization = acme.post("/api/v2/organizations/acme/authentication-token", None)
    ids["org-token"] = organization.data["attributes"]["token"]
    download(acme, ids["fresh-token"], "1.0.0")
    download(acme, ids["legacy-token"], "1.0.0")
    download(acme, ids["slow-token"], "1.1.0")
    download(acme, ids["alice-token"], "1.2.0")
    download(acme, ids["fresh-token"], "1.3.0")  # moved on: its last download is 1.3.0
    download(acme, ids["org-token"], "1.3.0")
    deprecate(acme, "1.0.0")
    revoke(acme, "1.0.0")
    deprecate(acme, "1.1.0")
    set_deadline(acme, "1.1.0", SOON)
    return ids


def entries(reply: Any) -> list[tuple[str, str, str]]:
    assert reply.status == 200, reply.json
    return [
        (e["attributes"]["name"], e["attributes"]["version"], e["attributes"]["status"])
        for e in reply.data
    ]


def test_the_consumers_api_says_who_is_on_what(acme: Api, campaign_world: dict[str, str]):
    reply = acme.get(CONSUMERS)
    assert entries(reply) == [
        ("acme/legacy", "1.0.0", "revoked"),
        ("acme/slow", "1.1.0", "deprecated"),
        ("alice", "1.2.0", "behind"),
        ("organization token", "1.3.0", "current"),  # then by kind and id
        ("acme/fresh", "1.3.0", "current"),
    ]
    legacy, slow, alice, _, fresh = (e["attributes"] for e in reply.data)
    assert legacy["kind"] == "team" and legacy["consumer-id"] == campaign_world["legacy"]
    assert (legacy["revoked"], legacy["deprecated"], legacy["behind"]) == (True, True, True)
    assert legacy["revoke-at"] is None and legacy["latest-version"] == "1.3.0"
    assert slow["revoke-at"] == SOON
    assert (slow["revoked"], slow["deprecated"], slow["behind"]) == (False, True, True)
    assert alice["kind"] == "user" and alice["consumer-id"] == campaign_world["alice"]
    assert (alice["revoked"], alice["deprecated"], alice["behind"]) == (False, False, True)
    assert (fresh["revoked"], fresh["deprecated"], fresh["behind"]) == (False, False, False)
    assert fresh["last-download-at"] == "2026-11-23T09:35:00.000Z"
    relationship = reply.data[2]["relationships"]["consumer"]["data"]
    assert relationship == {"type": "users", "id": campaign_world["alice"]}
    assert reply.json["meta"]["status-counts"] == {
        "revoked": 1,
        "deprecated": 2,
        "behind": 3,
        "current": 2,
        "total": 5,
    }
    assert reply.json["meta"]["latest-version"] == "1.3.0"


def test_the_consumers_filter_by_status_and_page(acme: Api, campaign_world: dict[str, str]):
    def names(query: str) -> list[str]:
        return [name for name, _, _ in entries(acme.get(f"{CONSUMERS}?{query}"))]

    assert names("filter[status]=revoked") == ["acme/legacy"]
    assert names("filter[status]=deprecated") == ["acme/legacy", "acme/slow"]
    assert names("filter[status]=behind") == ["acme/legacy", "acme/slow", "alice"]
    assert names("filter[status]=current") == ["organization token", "acme/fresh"]
    assert names("filter[status]=revoked,current") == [
        "acme/legacy",
        "organization token",
        "acme/fresh",
    ]
    first = acme.get(f"{CONSUMERS}?filter[status]=behind&page[size]=2")
    assert [n for n, _, _ in entries(first)] == ["acme/legacy", "acme/slow"]
    assert first.json["meta"]["pagination"]["total-count"] == 3
    second = acme.get(urlparse(first.json["links"]["next"]).path + "?" + _query(first))
    assert [n for n, _, _ in entries(second)] == ["alice"]
    for bad in ("stale", "revoked,nope", "x" * 65):
        refused = acme.get(f"{CONSUMERS}?filter[status]={bad}")
        assert refused.status == 422, bad
        assert refused.json["errors"][0]["source"] == {"parameter": "filter[status]"}


def _query(reply: Any) -> str:
    return urlparse(reply.json["links"]["next"]).query


def test_a_consumer_moving_on_leaves_the_old_version(acme: Api, campaign_world: dict[str, str]):
    download(acme, campaign_world["slow-token"], "1.3.0")
    by_name = {name: (version, status) for name, version, status in entries(acme.get(CONSUMERS))}
    assert by_name["acme/slow"] == ("1.3.0", "current")
    # Undeprecated and un-revoked, 1.0.0 is only behind.
    change(acme, "1.0.0", revocation={"status": "Unrevoked"})
    change(acme, "1.0.0", deprecation={"deprecated-status": "Undeprecated"})
    by_name = {name: (version, status) for name, version, status in entries(acme.get(CONSUMERS))}
    assert by_name["acme/legacy"] == ("1.0.0", "behind")


def test_only_owners_and_module_managers_read_the_campaigns(
    acme: Api, campaign_world: dict[str, str]
):
    _, owner = user_in_team(acme, "owners", "olivia")
    _, manager = make_team(acme, "acme", "publishers", manage_modules=True)
    _, member = user_in_team(acme, "legacy", "rita")
    make_org(acme, "other")
    _, outsider = make_team(acme, "other", "managers-elsewhere", manage_modules=True)
    for path in (CONSUMERS, CAMPAIGNS):
        for token in (owner, manager):
            assert acme.as_(token).get(path).status == 200, path
        refused = (campaign_world["legacy-token"], member, campaign_world["org-token"], outsider)
        for token in refused:
            reply = acme.as_(token).get(path)
            assert reply.status == 404, (path, reply.json)
            assert "acme/legacy" not in reply.body.decode()
        assert acme.as_(None).get(path).status == 401
    assert acme.get(CONSUMERS.replace("/vpc/", "/nope/")).status == 404
    assert acme.get(CAMPAIGNS.replace("/acme/", "/nowhere/")).status == 404


# ----- cost ------------------------------------------------------------------------------


@contextmanager
def dynamodb_calls() -> Iterator[Counter[tuple[str, str]]]:
    """Every DynamoDB call PynamoDB sends, as (operation, table[/index])."""
    from pynamodb.connection.base import Connection

    calls: Counter[tuple[str, str]] = Counter()
    original = Connection._make_api_call

    def counted(self: Any, operation: str, kwargs: dict[str, Any]) -> Any:
        tables = (
            [kwargs["TableName"]] if "TableName" in kwargs else list(kwargs.get("RequestItems", {}))
        )
        for table in tables:
            index = kwargs.get("IndexName")
            calls[(operation, f"{table}/{index}" if index else table)] += 1
        return original(self, operation, kwargs)

    Connection._make_api_call = counted  # type: ignore[method-assign]
    try:
        yield calls
    finally:
        Connection._make_api_call = original  # type: ignore[method-assign]


def _on(calls: Counter[tuple[str, str]], table: str) -> dict[str, int]:
    return {op: n for (op, name), n in calls.items() if name.split("/")[0].endswith(table)}


def test_a_module_with_a_thousand_consumers_reads_that_modules_items_only(acme: Api):
    """1,000 consumers over four versions, and another module with consumers beside it: the
    consumers API reads the module item (one GetItem) and its downloads (one Query), no
    version item and nothing of the other module; names for the page only."""
    create_module(acme, "dns", "aws")
    publish(acme, "1.0.0", name="dns")
    module_id = acme.get(f"{MODULES}/vpc/aws").data["id"]
    other_id = acme.get(f"{MODULES}/dns/aws").data["id"]
    moment = DAY_ONE
    for index in range(1000):
        version = ("1.0.0", "1.1.0", "1.2.0", "1.3.0")[index % 4]
        downloads_store.record(module_id, version, "team", f"team-{index:04d}", moment)
    for index in range(50):
        downloads_store.record(other_id, "1.0.0", "team", f"team-x{index:03d}", moment)
    deprecate(acme, "1.0.0")
    assert acme.get(CONSUMERS).status == 200  # warms the instance (its token, its settings)
    with dynamodb_calls() as calls:
        reply = acme.get(f"{CONSUMERS}?filter[status]=deprecated&page[size]=100")
    assert reply.status == 200 and len(reply.data) == 100
    assert reply.json["meta"]["status-counts"]["total"] == 1000
    assert reply.json["meta"]["status-counts"]["deprecated"] == 250
    assert _on(calls, "module-downloads") == {"Query": 1}, calls
    assert _on(calls, "registry-modules") == {"GetItem": 1}, calls
    assert _on(calls, "registry-module-versions") == {}, calls
    assert _on(calls, "teams") == {"BatchGetItem": 1}, calls  # the page's 100 names
    assert not [key for key in calls if key[0] == "Scan"], calls


def test_the_organizations_campaigns_read_the_index_and_the_modules_met_there(acme: Api):
    """One Query of the deprecation index, and each listed module's item and downloads."""
    module_id = acme.get(f"{MODULES}/vpc/aws").data["id"]
    downloads_store.record(module_id, "1.0.0", "team", "team-a", DAY_ONE)
    deprecate(acme, "1.0.0")
    assert acme.get(CAMPAIGNS).status == 200
    with dynamodb_calls() as calls:
        reply = acme.get(CAMPAIGNS)
    assert [e["attributes"]["name"] for e in reply.data] == ["vpc"]
    assert _on(calls, "registry-module-versions") == {"Query": 1}, calls
    assert ("Query", f"{ModuleVersionModel.Meta.table_name}/by-deprecation") in calls
    assert _on(calls, "module-downloads") == {"Query": 1}, calls
    assert _on(calls, "registry-modules") == {"GetItem": 1}, calls


# ----- the organization's campaigns --------------------------------------------------------


@pytest.fixture
def many(api: Api, monkeypatch: pytest.MonkeyPatch) -> Api:
    """Six modules, each with 1.0.0 and 2.0.0, one team on 1.0.0 of each but ``quiet``:

    * ``cut``: 1.0.0 revoked;
    * ``soon``: 1.0.0 deprecated, revoked on SOON;
    * ``later``: 1.0.0 deprecated, revoked on LATER;
    * ``plain``: 1.0.0 deprecated, no deadline;
    * ``quiet``: 1.0.0 revoked, nobody on it (not listed);
    * ``mixed``: 2.0.0 revoked with nobody on it, 1.0.0 deprecated for MIDDLE with the
      team on it (listed at its deadline, not among the revoked)."""
    Clock(monkeypatch)
    make_org(api, "acme")
    _, token = make_team(api, "acme", "app")
    names = ("cut", "soon", "later", "plain", "quiet", "mixed")
    for name in names:
        create_module(api, name, "aws")
        publish(api, "1.0.0", name=name)
        publish(api, "2.0.0", name=name)
        if name != "quiet":
            download(api, token, "1.0.0", name)
    for name in names:
        deprecate(api, "1.0.0", name)
    for name in ("cut", "quiet"):
        revoke(api, "1.0.0", name)
    set_deadline(api, "1.0.0", SOON, "soon")
    set_deadline(api, "1.0.0", LATER, "later")
    set_deadline(api, "1.0.0", MIDDLE, "mixed")
    deprecate(api, "2.0.0", "mixed")
    revoke(api, "2.0.0", "mixed")
    return api


def test_the_organizations_campaigns_come_most_urgent_first(many: Api):
    reply = many.get(CAMPAIGNS)
    assert reply.status == 200, reply.json
    assert [e["attributes"]["name"] for e in reply.data] == [
        "cut",
        "soon",
        "mixed",
        "later",
        "plain",
    ]
    assert reply.json["links"]["next"] is None
    mixed = reply.data[2]["attributes"]
    assert mixed["soonest-revoke-at"] == MIDDLE
    assert mixed["latest-version"] == "1.0.0"  # 2.0.0 is revoked
    assert mixed["deprecated-versions"] == [
        {
            "version": "2.0.0",
            "revoked": True,
            "revoke-at": None,
            "reason": "move to 1.3",
            "link": "https://x.io/m",
            "consumers": 0,
        },
        {
            "version": "1.0.0",
            "revoked": False,
            "revoke-at": MIDDLE,
            "reason": "move to 1.3",
            "link": "https://x.io/m",
            "consumers": 1,
        },
    ]
    cut = reply.data[0]["attributes"]
    assert cut["consumers"] == {
        "revoked": 1,
        "deprecated": 1,
        "behind": 1,
        "current": 0,
        "total": 1,
    }
    assert reply.data[0]["links"]["consumers"].endswith(
        "/api/v2/organizations/acme/registry-modules/private/acme/cut/aws/consumers"
    )


def test_the_organizations_campaigns_page_with_a_cursor(many: Api):
    first = many.get(f"{CAMPAIGNS}?page[size]=2")
    assert [e["attributes"]["name"] for e in first.data] == ["cut", "soon"]
    assert _all_pages(many, first) == ["cut", "soon", "mixed", "later", "plain"]
    made_up = [
        base64.urlsafe_b64encode(json.dumps(parts).encode()).decode()
        for parts in (["", "", ""], ["1#", "mod-x", "0"], [1, 2, 3], {"a": 1})
    ]
    # A well-formed cursor of no entry reads on from where it would sort: no error.
    after_the_revoked = many.get(f"{CAMPAIGNS}?page[after]={made_up[1]}")
    assert [e["attributes"]["name"] for e in after_the_revoked.data] == [
        "soon",
        "mixed",
        "later",
        "plain",
    ]
    for bad in ("not-a-cursor", "W10=", "x" * 1025, "é", *made_up[:1], *made_up[2:]):
        refused = many.get(f"{CAMPAIGNS}?page[after]={bad}")
        assert refused.status == 422, bad
        assert refused.json["errors"][0]["source"] == {"parameter": "page[after]"}


def test_a_request_looks_at_a_bounded_part_of_the_index(many: Api, monkeypatch: pytest.MonkeyPatch):
    """Past MAX_EXAMINED index entries a page ends early, and its next link goes on: the
    first three entries are the revoked versions (cut's, quiet's and mixed's 2.0.0), of
    which only cut's has a consumer."""
    monkeypatch.setattr(campaign, "MAX_EXAMINED", 3)
    first = many.get(f"{CAMPAIGNS}?page[size]=20")
    assert [e["attributes"]["name"] for e in first.data] == ["cut"]
    assert _all_pages(many, first) == ["cut", "soon", "mixed", "later", "plain"]


def _all_pages(api: Api, reply: Any) -> list[str]:
    seen: list[str] = []
    for _ in range(10):
        assert reply.status == 200, reply.json
        seen += [e["attributes"]["name"] for e in reply.data]
        following = reply.json["links"]["next"]
        if not following:
            return seen
        reply = api.get(f"{urlparse(following).path}?{urlparse(following).query}")
    raise AssertionError(f"more than 10 pages: {seen}")


# ----- the web UI --------------------------------------------------------------------------


def test_the_module_pages_downloads_tab_is_its_campaign(acme: Api, campaign_world: dict[str, str]):
    page = "/app/acme/registry/modules/private/acme/vpc/aws"
    owner = Browser(acme.client)
    owner.sign_in(ADMIN_TOKEN)
    text = owner.get(page).text
    tab = text.split('id="downloads"')[1]
    assert "Who is on what" in tab
    assert (
        "5 consumers: 1 on a revoked version, 2 on a deprecated one, 3 behind the latest "
        "(1.3.0), 2 current." in tab
    )
    rows = tab.split('<table class="consumers stack"')[1].split("</table>")[0].split("<tr>")[2:]
    assert [row.split("</th>")[0].rsplit(">", 1)[1] for row in rows] == [
        "acme/legacy",
        "acme/slow",
        "alice",
        "organization token",
        "acme/fresh",
    ]
    assert '<span class="badge bad">revoked</span>' in rows[0]
    assert "revoked at" in rows[1] and SOON[:10] + " 00:00 UTC" in rows[1]
    # Downloads per version per week: the week of Monday 2026-11-23, one download each.
    weekly = tab.split('<table class="weekly"')[1].split("</table>")[0]
    assert ">1.3.0</th>" in weekly and ">1.0.0</th>" in weekly
    assert '<time datetime="2026-11-23">' in weekly
    assert "1.3.0: 2 downloads, 2 consumers on it" in tab
    reader = Browser(acme.client)
    reader.sign_in(campaign_world["legacy-token"])
    other = reader.get(page)
    assert other.status_code == 200 and "Who is on what" not in other.text


def test_the_organizations_campaign_page(many: Api, monkeypatch: pytest.MonkeyPatch):
    from chalicelib.web import pages

    owner = Browser(many.client)
    owner.sign_in(ADMIN_TOKEN)
    modules = owner.get("/app/acme/registry/modules").text
    assert 'href="/app/acme/registry/campaigns" id="campaigns-link"' in modules
    monkeypatch.setattr(pages, "PAGE_SIZE", 2)
    seen: list[str] = []
    path = "/app/acme/registry/campaigns"
    for _ in range(5):
        answer = owner.get(path)
        assert answer.status_code == 200, answer.text
        body = (
            answer.text.split("<tbody>")[1].split("</tbody>")[0] if "<tbody>" in answer.text else ""
        )
        seen += [
            cell.split("</a>")[0].rsplit(">", 1)[1].split("/")[0]
            for cell in body.split('<th scope="row">')[1:]
        ]
        if 'id="next-page"' not in answer.text:
            break
        path = answer.text.split('id="next-page"')[0].rsplit('href="', 1)[1].split('"')[0]
        path = path.replace("&amp;", "&")
    assert seen == ["cut", "soon", "mixed", "later", "plain"]
    _, reader_token = make_team(many, "acme", "readers")
    reader = Browser(many.client)
    reader.sign_in(reader_token)
    assert reader.get("/app/acme/registry/campaigns").status_code == 404
    assert 'id="campaigns-link"' not in reader.get("/app/acme/registry/modules").text


def test_downloads_per_version_per_week():
    """Weeks from Monday (UTC), the newest first, from the oldest week with a download kept;
    days older than the kept ones are left out."""
    items = [
        downloads_store.VersionDownloads(
            "1.0.0", 9, {"2026-11-02": 2, "2026-11-08": 1, "2026-11-24": 1, "2025-01-01": 5}, {}
        ),
        downloads_store.VersionDownloads("1.1.0", 3, {"2026-11-23": 3}, {}),
        downloads_store.VersionDownloads("0.9.0", 0, {}, {}),
    ]
    found = campaign.weekly(items, datetime(2026, 11, 28).date())
    assert found.versions == ["1.1.0", "1.0.0"]
    assert found.weeks == [
        ("2026-11-23", [3, 1]),
        ("2026-11-16", [0, 0]),
        ("2026-11-09", [0, 0]),
        ("2026-11-02", [0, 3]),
    ]
    assert campaign.weekly([], datetime(2026, 11, 28).date()) == campaign.Weekly([], [])


def test_the_functions_that_serve_campaigns_may_read_what_they_read():
    """The deployed roles: the registry API (the consumers and campaigns routes) and the web
    UI (the tab, the page) Query the download items and the versions' indexes, and read
    modules; neither is granted more on them by this (the registry writes them anyway)."""
    import json as json_

    from infrastructure import template
    from infrastructure.groups import ROUTE_GROUPS

    def allowed(logical_id: str, table: str, index: bool = False) -> set[str]:
        function = next(f for f in ROUTE_GROUPS if f.logical_id == logical_id)
        actions: set[str] = set()
        statements = template.role(function)["Properties"]["Policies"][0]["PolicyDocument"]
        for statement in statements["Statement"]:
            resources = json_.dumps(statement.get("Resource"))
            if table in resources and (not index or "/index/*" in resources):
                actions |= set(statement["Action"])
        return actions

    for function in ("RegistryFunction", "WebFunction"):
        assert "dynamodb:Query" in allowed(function, "registry-module-versions", index=True)
        assert "dynamodb:Query" in allowed(function, "module-downloads")
        assert "dynamodb:GetItem" in allowed(function, "registry-modules")
    assert "dynamodb:UpdateItem" not in allowed("WebFunction", "module-downloads")
