"""Downloads through the registry protocol: counted per version, per day and per consumer
(one UpdateItem on the download path), reported by the protocol's module detail, and shown
to the module's owners and manage-modules teams in the API and on the module page."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from chalicelib.accounts.teams import service as teams_service
from chalicelib.accounts.tokens import service as tokens_service
from chalicelib.accounts.users import service as users_service
from chalicelib.artifacts import semver
from chalicelib.core.api import bounds
from chalicelib.core.auth import Principal
from chalicelib.modules.downloads import counter, store
from chalicelib.modules.store import ModuleModel
from infrastructure.streams import StreamReader, download_totals_reader
from tests.conftest import ADMIN_TOKEN, Api, make_org, make_team
from tests.modules.helpers import V1, create_module, publish
from tests.support.web_browser import Browser

REPORT = "/api/v2/organizations/acme/registry-modules/private/acme/vpc/aws/downloads"
DAY_ONE = datetime(2026, 11, 23, 9, 30, tzinfo=UTC)


class Clock:
    """``now()`` of the counter and of the report, moved by the test."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, moment: datetime) -> None:
        from chalicelib.modules.downloads import service

        self.moment = moment
        monkeypatch.setattr(counter, "now", lambda: self.moment)
        monkeypatch.setattr(service, "now", lambda: self.moment)


def user_in_team(api: Api, team_name: str, username: str) -> tuple[str, str]:
    """A user in acme's ``team_name`` and a user token of theirs: (user id, token)."""
    admin = Principal("user", users_service.bootstrap_admin(None)[0].id, "t")
    user = users_service.create_user(username, f"{username}@example.com")
    team = next(t for t in teams_service.list_teams(admin, "acme", None) if t.name == team_name)
    teams_service.change_membership(admin, team.id, [user.username], add=True)
    _, token = tokens_service.create_user_token(
        Principal("user", user.id, "t"), user.id, None, None
    )
    return user.id, token


@pytest.fixture
def module(api: Api) -> Api:
    make_org(api, "acme")
    create_module(api, "vpc", "aws")
    publish(api, "1.0.0")
    publish(api, "1.1.0")
    return api


def download(api: Api, token: str, version: str = "1.0.0") -> None:
    reply = api.as_(token).get(f"{V1}/acme/vpc/aws/{version}/download")
    assert reply.status == 204, reply.json
    assert reply.headers["X-Terraform-Get"]


def test_downloads_are_counted_per_version_day_and_consumer(
    module: Api, monkeypatch: pytest.MonkeyPatch
):
    clock = Clock(monkeypatch, DAY_ONE)
    team_id, team_token = make_team(module, "acme", "ci")
    user_id, user_token = user_in_team(module, "ci", "alice")
    download(module, team_token)
    download(module, team_token)
    download(module, user_token)
    clock.moment = DAY_ONE + timedelta(days=1, hours=2)
    download(module, user_token)
    download(module, team_token, "1.1.0")
    # The latest's /download redirects (302) and is not counted; the redirect's target is.
    latest = module.as_(team_token).get(f"{V1}/acme/vpc/aws/download")
    assert latest.status == 302 and "X-Terraform-Get" not in latest.headers
    download(module, team_token, "1.1.0")

    reply = module.get(REPORT + "?days=3")
    assert reply.status == 200, reply.json
    assert reply.json["meta"] == {"total": 6, "days": 3}
    by_version = {r["attributes"]["version"]: r["attributes"] for r in reply.data}
    assert [r["attributes"]["version"] for r in reply.data] == ["1.1.0", "1.0.0"]
    old, new = by_version["1.0.0"], by_version["1.1.0"]
    assert old["total"] == 4 and new["total"] == 2
    assert old["daily"] == [
        {"date": "2026-11-22", "downloads": 0},
        {"date": "2026-11-23", "downloads": 3},
        {"date": "2026-11-24", "downloads": 1},
    ]
    assert [d["downloads"] for d in new["daily"]] == [0, 0, 2]
    # Consumers, the most recent first, with their names and last download.
    assert old["consumers"] == [
        {
            "kind": "user",
            "id": user_id,
            "name": "alice",
            "last-download-at": "2026-11-24T11:30:00.000Z",
        },
        {
            "kind": "team",
            "id": team_id,
            "name": "acme/ci",
            "last-download-at": "2026-11-23T09:30:00.000Z",
        },
    ]
    assert [c["id"] for c in new["consumers"]] == [team_id]


def test_an_organization_token_is_a_consumer_too(module: Api, monkeypatch: pytest.MonkeyPatch):
    Clock(monkeypatch, DAY_ONE)
    token = module.post("/api/v2/organizations/acme/authentication-token", None)
    assert token.status == 201, token.json
    download(module, token.data["attributes"]["token"])
    (consumer,) = module.get(REPORT).data[1]["attributes"]["consumers"]
    assert consumer["kind"] == "organization" and consumer["id"] == "acme"
    assert consumer["name"] == "organization token"


def test_the_protocol_reports_the_modules_and_the_versions_downloads(module: Api):
    _, token = make_team(module, "acme", "ci")
    detail = module.get(f"{V1}/acme/vpc/aws").json
    assert detail["downloads"] == 0 and detail["version_downloads"] == 0
    for version in ("1.0.0", "1.0.0", "1.1.0"):
        download(module, token, version)
    latest = module.get(f"{V1}/acme/vpc/aws").json
    assert latest["version"] == "1.1.0"
    assert latest["downloads"] == 3 and latest["version_downloads"] == 1
    one = module.get(f"{V1}/acme/vpc/aws/1.0.0").json
    assert one["downloads"] == 3 and one["version_downloads"] == 2
    # Lists keep their lean entries: no count there.
    assert module.get(f"{V1}/acme").json["modules"][0]["downloads"] == 0


def test_only_owners_and_module_managers_read_the_report(module: Api):
    _, owner = user_in_team(module, "owners", "olivia")
    _, manager = make_team(module, "acme", "publishers", manage_modules=True)
    _, reader = make_team(module, "acme", "readers")
    _, member = user_in_team(module, "readers", "rita")
    organization = module.post("/api/v2/organizations/acme/authentication-token", None)
    make_org(module, "other")
    _, outsider = make_team(module, "other", "owners-elsewhere", manage_modules=True)
    for token in (owner, manager):
        assert module.as_(token).get(REPORT).status == 200
    for token in (reader, member, organization.data["attributes"]["token"], outsider):
        reply = module.as_(token).get(REPORT)
        assert reply.status == 404, reply.json
        assert reply.json["errors"][0]["status"] == "404"
    assert module.as_(None).get(REPORT).status == 401
    for bad in ("0", "401", "x"):
        assert module.get(f"{REPORT}?days={bad}").status == 422, bad
    gone = REPORT.replace("/vpc/", "/nope/")
    assert module.get(gone).status == 404


def test_a_failing_counter_never_fails_the_download(
    module: Api, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
):
    """The table missing (a real ResourceNotFoundException from DynamoDB): the download still
    answers 204, the failure is logged with the DownloadsNotCounted metric."""
    _, token = make_team(module, "acme", "ci")
    monkeypatch.setattr(store.DownloadsModel.Meta, "table_name", "no-such-table")
    with caplog.at_level(logging.WARNING, logger="registry.downloads"):
        download(module, token)
    (record,) = [r for r in caplog.records if r.name == "registry.downloads"]
    assert "not counted" in record.getMessage()
    assert [m.name for m in record.metrics] == ["DownloadsNotCounted"]  # type: ignore[attr-defined]


def test_the_warm_download_path_costs_one_update_more(module: Api, rate_limited: None):
    """Warm (the token verified in the last seconds), a download is the module's GetItem
    and the count's UpdateItem: 2 calls, for a team token and a user token alike (the rate
    limiter writes nothing for a client under its share of the limit)."""
    from bench.reads import counting_reads

    _, team_token = make_team(module, "acme", "ci")
    _, user_token = user_in_team(module, "ci", "alice")
    for token in (team_token, user_token):
        download(module, token)  # warms the instance
        with counting_reads() as reads:
            download(module, token)
        assert reads.total_calls <= 2, reads.detail()
        assert reads.calls["UpdateItem"] == 1 and reads.calls["GetItem"] == 1, reads.detail()
    with counting_reads() as reads:
        assert module.as_(team_token).get(f"{V1}/acme/vpc/aws/versions").status == 200
    assert reads.total_calls <= 1, reads.detail()  # versions counts nothing


@contextmanager
def sent() -> Iterator[list[tuple[str, dict[str, Any]]]]:
    """Every DynamoDB call PynamoDB sends, (operation, request), in order."""
    from pynamodb.connection.base import Connection

    calls: list[tuple[str, dict[str, Any]]] = []
    original = Connection._make_api_call

    def spied(self: Any, operation: str, kwargs: dict[str, Any]) -> Any:
        calls.append((operation, kwargs))
        return original(self, operation, kwargs)

    Connection._make_api_call = spied  # type: ignore[method-assign]
    try:
        yield calls
    finally:
        Connection._make_api_call = original  # type: ignore[method-assign]


def _written_size(request: dict[str, Any]) -> int:
    """The size DynamoDB bills an UpdateItem on: the item it leaves (read back)."""
    from bench.reads import item_size
    from chalicelib.core.data import db

    answer = db.connection().dispatch(
        "GetItem", {"TableName": request["TableName"], "Key": request["Key"]}
    )
    return item_size(answer["Item"])


# The longest names a download can carry: a version of the bound's length, an organization
# token's consumer of the longest organization name, a module id.
LONG_VERSION = "1.0.0-" + "a" * (bounds.VERSION - 6)
LONG_ORG = "o" * bounds.NAME


def test_a_download_writes_one_small_item_however_many_consumers_and_days(aws: None):
    """The budget of the download path: a download is ONE UpdateItem of an item under 1 KB
    (1 WRU), however many consumers and days the version has; a consumer's first download
    of the day on this instance writes its own small item too, its later ones do not."""
    assert semver.is_valid(LONG_VERSION)
    start = DAY_ONE - timedelta(days=9)
    for day in range(10):
        for index in range(30):
            moment = start + timedelta(days=day, minutes=index)
            store.record("mod-0123456789abcdef", LONG_VERSION, "team", f"team-{index:04d}", moment)
    store.record("mod-0123456789abcdef", LONG_VERSION, "organization", LONG_ORG, DAY_ONE)

    with sent() as calls:  # the same consumer again that day
        store.record("mod-0123456789abcdef", LONG_VERSION, "organization", LONG_ORG, DAY_ONE)
    assert [op for op, _ in calls] == ["UpdateItem"]
    ((_, request),) = calls
    assert request.get("ReturnValues", "NONE") == "NONE"  # nothing read back either
    assert _written_size(request) <= store.MAX_ITEM_BYTES

    later = DAY_ONE + timedelta(days=1)
    with sent() as calls:  # its first download of the next day: its own item as well
        store.record("mod-0123456789abcdef", LONG_VERSION, "organization", LONG_ORG, later)
    assert [op for op, _ in calls] == ["UpdateItem", "UpdateItem"]
    sizes = [_written_size(request) for _, request in calls]
    assert max(sizes) <= store.MAX_ITEM_BYTES, sizes

    (found,) = store.module_downloads("mod-0123456789abcdef")
    assert found.total == 10 * 30 + 3 and len(found.consumers) == 31
    assert found.days[f"{DAY_ONE:%Y-%m-%d}"] == 32 and len(found.days) == 11


def test_the_warm_download_route_writes_one_item(module: Api, monkeypatch: pytest.MonkeyPatch):
    """Through the protocol's route: the module-downloads table gets one UpdateItem per
    download, two on a consumer's first download of the day on this instance."""
    clock = Clock(monkeypatch, DAY_ONE)
    _, token = make_team(module, "acme", "ci")
    download(module, token)  # warms the instance, writes the consumer's item

    def on_downloads(calls: list[tuple[str, dict[str, Any]]]) -> list[str]:
        table = store.DownloadsModel.Meta.table_name
        return [op for op, request in calls if request.get("TableName") == table]

    with sent() as calls:
        download(module, token)
        download(module, token, "1.1.0")
        download(module, token, "1.1.0")
    assert on_downloads(calls) == ["UpdateItem"] * 4  # 1.1.0's consumer item once
    clock.moment = DAY_ONE + timedelta(days=1)
    with sent() as calls:
        download(module, token)
        download(module, token)
    assert on_downloads(calls) == ["UpdateItem"] * 3


def test_items_of_0_11_are_read_and_moved_by_the_backfill(
    module: Api, stream: StreamReader, monkeypatch: pytest.MonkeyPatch
):
    """A version counted by 0.11 (one item holding its total, days and consumers) keeps all
    of it: read beside the new items, in the report and the kept totals; the backfill moves
    its consumers to their own items, and a second run changes nothing."""
    Clock(monkeypatch, DAY_ONE)
    team_id, token = make_team(module, "acme", "ci")
    module_id = _module_id(module)
    base = store.DownloadsModel.Meta.table_name
    from chalicelib.core.data import db

    db.connection().dispatch(
        "PutItem",
        {
            "TableName": base,
            "Item": {
                "module_id": {"S": module_id},
                "version": {"S": "1.0.0"},
                "total": {"N": "7"},
                "d2026-11-22": {"N": "4"},
                "d2026-11-23": {"N": "3"},
                f"c#team#{team_id}": {"S": "2026-11-23T08:00:00.000Z"},
                "c#user#usr-old": {"S": "2026-11-22T08:00:00.000Z"},
            },
        },
    )
    download(module, token)
    reply = module.get(REPORT + "?days=2")
    old = {r["attributes"]["version"]: r["attributes"] for r in reply.data}["1.0.0"]
    assert old["total"] == 8
    assert [d["downloads"] for d in old["daily"]] == [4, 4]
    assert [(c["id"], c["last-download-at"]) for c in old["consumers"]] == [
        (team_id, "2026-11-23T09:30:00.000Z"),
        ("usr-old", "2026-11-22T08:00:00.000Z"),
    ]
    stream.drain()
    assert _module_item().version_downloads.as_dict() == {"1.0.0": 8}

    from infrastructure.backfill import backfill_all

    assert backfill_all()["download items"]["base items moved"] == 1
    again = backfill_all()["download items"]
    assert again == {"days folded": 0, "consumers removed": 0, "base items moved": 0}
    raw = store.DownloadsModel.get(module_id, "1.0.0").attribute_values
    assert raw["total"] == 7 and not [name for name in raw if name.startswith("c#")]
    assert module.get(REPORT + "?days=2").data == reply.data


def test_old_days_fold_into_the_total_and_silent_consumers_go(aws: None):
    """Bounds: a read leaves out consumers silent for DAYS_KEPT days and keeps the
    MAX_CONSUMERS most recent; the backfill folds older day items into the version's base
    total (the total unchanged) and deletes silent consumers' items."""
    old = DAY_ONE - timedelta(days=store.DAYS_KEPT + 3)
    store.record("mod-x", "1.0.0", "team", "team-old", old)
    store.record("mod-x", "1.0.0", "team", "team-old", old)
    for index in range(3):
        store.record("mod-x", "1.0.0", "user", f"usr-{index}", DAY_ONE + timedelta(minutes=index))
    (found,) = store.module_downloads("mod-x")
    assert found.total == 5 and set(found.consumers) == {("user", f"usr-{i}") for i in range(3)}
    assert store.version_total("mod-x", "1.0.0") == 5

    import chalicelib.modules.downloads.store as module_store

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(module_store, "MAX_CONSUMERS", 2)
        (found,) = store.module_downloads("mod-x")
    assert list(found.consumers) == [("user", "usr-2"), ("user", "usr-1")]

    assert store.fold_old_days(DAY_ONE) == {
        "days folded": 1,
        "consumers removed": 1,
        "base items moved": 0,
    }
    assert store.fold_old_days(DAY_ONE) == {
        "days folded": 0,
        "consumers removed": 0,
        "base items moved": 0,
    }
    (found,) = store.module_downloads("mod-x")
    assert found.total == 5 and set(found.days) == {f"{DAY_ONE:%Y-%m-%d}"}
    assert store.version_total("mod-x", "1.0.0") == 5
    assert store.version_total("mod-x", "1.0.1") is None


def test_deleting_a_module_deletes_its_download_items(module: Api):
    _, token = make_team(module, "acme", "ci")
    download(module, token)
    module_id = _module_id(module)
    assert store.module_downloads(module_id)
    assert module.delete(REPORT.removesuffix("/downloads")).status == 204
    assert store.module_downloads(module_id) == []


def test_deleting_a_version_or_the_organization_deletes_their_download_items(module: Api):
    """The composer's cascade (``modules.composed``): the core deletes the records, and what
    the downloads sub-room kept of them goes too."""
    _, token = make_team(module, "acme", "ci")
    download(module, token)
    download(module, token, "1.1.0")
    module_id = _module_id(module)
    assert module.delete(f"{REPORT.removesuffix('/downloads')}/1.0.0").status == 204
    assert [found.version for found in store.module_downloads(module_id)] == ["1.1.0"]
    assert module.delete("/api/v2/organizations/acme").status == 204
    assert store.module_downloads(module_id) == []


def _module_id(api: Api) -> str:
    return api.get("/api/v2/organizations/acme/registry-modules/private/acme/vpc/aws").data["id"]


def test_the_module_page_shows_downloads_to_owners_only(module: Api):
    _, team_token = make_team(module, "acme", "ci")
    download(module, team_token)
    download(module, team_token, "1.1.0")
    page = "/app/acme/registry/modules/private/acme/vpc/aws"
    owner = Browser(module.client)
    owner.sign_in(ADMIN_TOKEN)
    text = owner.get(page).text
    assert 'id="downloads"' in text and "Downloads (2)" in text
    assert "<svg" in text and "<rect" in text and "<script" not in text.split('id="downloads"')[1]
    assert "acme/ci" in text and "1.0.0: 1 download" in text
    reader = Browser(module.client)
    _, reader_token = make_team(module, "acme", "readers")
    reader.sign_in(reader_token)
    other = reader.get(page)
    assert other.status_code == 200 and 'id="downloads"' not in other.text
    assert "acme/ci" not in other.text


def test_the_functions_that_count_report_and_delete_may_use_the_table():
    """The deployed roles: the protocol function writes the counts (UpdateItem) and reads
    them (Query), the registry API reads and deletes them, the web UI reads them."""
    from infrastructure import template
    from infrastructure.groups import ROUTE_GROUPS

    def allowed(logical_id: str) -> set[str]:
        function = next(f for f in ROUTE_GROUPS if f.logical_id == logical_id)
        actions = set()
        for statement in template.role(function)["Properties"]["Policies"][0]["PolicyDocument"][
            "Statement"
        ]:
            if "module-downloads" in json.dumps(statement.get("Resource")):
                actions |= set(statement["Action"])
        return actions

    assert {"dynamodb:UpdateItem", "dynamodb:Query"} <= allowed("ProtocolFunction")
    assert {"dynamodb:Query", "dynamodb:BatchWriteItem"} <= allowed("RegistryFunction")
    assert {"dynamodb:BatchWriteItem"} <= allowed("APIHandler")  # organization deletes
    assert "dynamodb:Query" in allowed("WebFunction")


# ----- each module's total, kept from the table's stream ----------------------------------


@pytest.fixture
def stream(module: Api) -> StreamReader:
    """The module-downloads stream from now on (the session's tables keep older records)."""
    reader = download_totals_reader("LATEST")
    reader.open()
    return reader


def _module_item() -> ModuleModel:
    return next(iter(ModuleModel.query("acme")))


def test_the_module_list_shows_each_modules_total_from_the_stream(
    module: Api, stream: StreamReader
):
    _, token = make_team(module, "acme", "ci")
    for version in ("1.0.0", "1.0.0", "1.1.0"):
        download(module, token, version)
    assert _module_item().total_downloads() == 0  # the download path wrote nothing else
    assert stream.drain() >= 3
    assert _module_item().version_downloads.as_dict() == {"1.0.0": 2, "1.1.0": 1}
    browser = Browser(module.client)
    browser.sign_in(token)
    page = browser.get("/app/acme/registry/modules").text
    assert '<th scope="col">Downloads</th>' in page
    assert '<td class="number" data-label="Downloads">3</td>' in page


def test_a_batch_delivered_again_counts_nothing_twice(module: Api, stream: StreamReader):
    """Lambda delivers a failed batch again: the absolute totals make that harmless. The
    batch goes through the Lambda handler, in Lambda's event shape."""
    from chalicelib.entry.downloads import handler

    seen: list[list[Any]] = []
    stream.handle = seen.append
    _, token = make_team(module, "acme", "ci")
    download(module, token)
    download(module, token, "1.1.0")
    stream.drain()
    event = {"Records": json.loads(json.dumps([r for b in seen for r in b], default=str))}
    handler(event, None)
    handler(event, None)
    assert _module_item().total_downloads() == 2


def test_a_deleted_version_leaves_the_total(module: Api, stream: StreamReader):
    _, token = make_team(module, "acme", "ci")
    download(module, token)
    download(module, token, "1.1.0")
    stream.drain()
    assert module.delete(f"{REPORT.removesuffix('/downloads')}/1.1.0").status == 204
    stream.drain()
    assert _module_item().version_downloads.as_dict() == {"1.0.0": 1}


def test_a_module_counted_before_the_totals_gets_its_whole_map(module: Api, stream: StreamReader):
    """Downloads counted before this version kept totals: the module's first batch reads
    its items once (and the backfill does the same for every module)."""
    _, token = make_team(module, "acme", "ci")
    download(module, token)
    stream.drain()
    item = _module_item()
    item.update(actions=[ModuleModel.version_downloads.remove()])  # as before the upgrade
    download(module, token, "1.1.0")
    stream.drain()
    assert _module_item().version_downloads.as_dict() == {"1.0.0": 1, "1.1.0": 1}
    item.update(actions=[ModuleModel.version_downloads.remove()])
    from infrastructure.backfill import backfill_all

    assert backfill_all()["download totals"] == {"modules filled": 1}
    assert _module_item().total_downloads() == 2


def test_a_deleted_module_is_not_brought_back(module: Api, stream: StreamReader):
    _, token = make_team(module, "acme", "ci")
    download(module, token)
    assert module.delete(REPORT.removesuffix("/downloads")).status == 204
    stream.drain()  # the count, then the items' removal: the module is gone, nothing written
    assert list(ModuleModel.query("acme")) == []


def test_the_stack_feeds_the_totals_from_the_tables_stream():
    """The module-downloads table streams its new images to the DownloadTotals function,
    which may read the stream and the download items and update modules, and nothing else."""
    from infrastructure import template

    resources = template.merge_template()["Resources"]
    table = resources["ModuleDownloadsTable"]["Properties"]
    assert table["StreamSpecification"] == {"StreamViewType": "NEW_IMAGE"}
    function = resources["DownloadTotals"]["Properties"]
    assert function["Handler"] == "chalicelib.entry.downloads.handler"
    event = function["Events"]["Stream"]
    assert event["Type"] == "DynamoDB"
    assert event["Properties"]["Stream"] == {"Fn::GetAtt": ["ModuleDownloadsTable", "StreamArn"]}
    statements = resources["DownloadTotalsRole"]["Properties"]["Policies"][0]["PolicyDocument"][
        "Statement"
    ]
    granted = {action: json.dumps(s["Resource"]) for s in statements for action in s["Action"]}
    assert "dynamodb:GetRecords" in granted and "StreamArn" in granted["dynamodb:GetRecords"]
    assert "registry-modules" in granted["dynamodb:UpdateItem"]
    assert "registry-protocol-list" in granted["dynamodb:UpdateItem"]
    assert "module-downloads" not in granted["dynamodb:UpdateItem"]
    assert "s3:GetObject" not in granted


def test_the_protocols_list_and_search_report_the_kept_total(module: Api, stream: StreamReader):
    _, token = make_team(module, "acme", "ci")
    listed = f"{V1}/acme"
    assert module.as_(token).get(listed).json["modules"][0]["downloads"] == 0
    download(module, token)
    download(module, token, "1.1.0")
    stream.drain()
    assert module.as_(token).get(listed).json["modules"][0]["downloads"] == 2
    found = module.as_(token).get(f"{V1}/search?q=vpc").json["modules"]
    assert [m["downloads"] for m in found] == [2]
    # A version's change rewrites the entry whole, with the total the module keeps.
    assert module.delete(f"{REPORT.removesuffix('/downloads')}/1.1.0").status == 204
    stream.drain()
    assert module.as_(token).get(listed).json["modules"][0]["downloads"] == 1


def test_a_kept_table_without_its_stream_gets_it(aws: None):
    """``make run`` on a data directory saved before the stream: the table gains it, as the
    stack update turns it on in AWS."""
    from chalicelib.core.data import db
    from chalicelib.core.data.aws import client

    dynamodb = client("dynamodb")
    dynamodb.create_table(
        TableName="test-downloads-before-streams",
        KeySchema=[{"AttributeName": "module_id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "module_id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )

    class Before(store.DownloadsModel):
        Meta = db.table("downloads-before-streams", stream="NEW_IMAGE")

    def described() -> dict[str, Any]:
        return dynamodb.describe_table(TableName="test-downloads-before-streams")["Table"]

    try:
        db._add_missing_stream(Before, described())
        assert described()["StreamSpecification"] == {
            "StreamEnabled": True,
            "StreamViewType": "NEW_IMAGE",
        }
        db._add_missing_stream(Before, described())  # a second start changes nothing
    finally:
        dynamodb.delete_table(TableName="test-downloads-before-streams")


def test_keys_a_0_11_function_kept_during_the_update_go(module: Api, stream: StreamReader):
    """A 0.11 DownloadTotals function reading 0.12's day items kept their keys as versions
    (with 0): the next batch that touches the module removes them."""
    _, token = make_team(module, "acme", "ci")
    download(module, token)
    stream.drain()
    _module_item().update(actions=[ModuleModel.version_downloads["1.0.0#d#2026-11-23"].set(0)])
    download(module, token, "1.1.0")
    stream.drain()
    assert _module_item().version_downloads.as_dict() == {"1.0.0": 1, "1.1.0": 1}
