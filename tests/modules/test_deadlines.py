"""Deprecation deadlines (``revoke-at``): the version PATCH's checks, the ``by-deadline``
index written with the deprecation, and the sweep (``modules.deadlines``, run by the
scheduled function ``entry.deadlines``) that records the 7-day and 1-day notices once each
and revokes the version on its deadline as the registry itself.

The sweep (the entry's ``sweep``: each version in its own audit-checked scope) takes the
moment it runs at, so these tests step time by passing later moments: nothing here waits for
the clock."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from chalicelib.core.audit.store import AuditEventModel, partition_of
from chalicelib.core.data.ids import now
from chalicelib.entry.deadlines import sweep
from chalicelib.modules import store
from chalicelib.modules.deadlines import backfill
from chalicelib.modules.deadlines import sweep as deadlines
from chalicelib.modules.store import ModuleVersionModel
from tests.conftest import Api, make_org
from tests.modules.helpers import MAIN_TF, ORG, create_module, create_version, upload_and_ingest

VERSION_PATH = f"{ORG}/private/acme/vpc/aws"
REVOKE_AT = "/data/attributes/deprecation/revoke-at"


@pytest.fixture
def acme(api: Api) -> Api:
    make_org(api, "acme")
    create_module(api)
    for version in ("1.0.0", "2.0.0"):
        assert upload_and_ingest(create_version(api, version), {"main.tf": MAIN_TF}) == "ok"
    return api


def deprecate(api: Api, version: str = "1.0.0", **deprecation: Any):
    body = {"deprecated-status": "Deprecated", **deprecation}
    return api.patch(
        f"{VERSION_PATH}/{version}",
        {"data": {"type": "module-versions", "attributes": {"deprecation": body}}},
    )


def change(api: Api, attributes: dict[str, Any], version: str = "1.0.0"):
    return api.patch(
        f"{VERSION_PATH}/{version}",
        {"data": {"type": "module-versions", "attributes": attributes}},
    )


def stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def item(version: str = "1.0.0") -> ModuleVersionModel:
    (found,) = [v for v in ModuleVersionModel.scan() if v.version == version]
    return found


def events(action: str) -> list[dict[str, Any]]:
    found = AuditEventModel.query(partition_of("acme"), consistent_read=True)
    documents = [json.loads(event.document) for event in found]
    return [d for d in documents if d["resource"]["action"] == action]


def protocol_versions(api: Api) -> list[str]:
    reply = api.get("/api/registry/v1/modules/acme/vpc/aws/versions")
    return [v["version"] for v in reply.json["modules"][0]["versions"]]


@pytest.mark.parametrize(
    ("revoke_at", "extra"),
    [
        ("tomorrow", {}),  # unparsable
        ("2031-01-01T00:00:00", {}),  # no zone
        ("2031-01-01", {}),
        (lambda: stamp(now() - timedelta(minutes=6)), {}),  # more than 5 minutes past
        (lambda: stamp(now() + timedelta(days=3660)), {}),  # more than 10 years ahead
        ("x" * 5000, {}),
        (lambda: stamp(now() + timedelta(days=3)), {"deprecated-status": "Undeprecated"}),
    ],
)
def test_a_bad_deadline_is_refused_and_changes_nothing(acme: Api, revoke_at: Any, extra: dict):
    before = item()
    value = revoke_at() if callable(revoke_at) else revoke_at
    reply = deprecate(acme, **{"revoke-at": value, **extra})
    assert reply.status == 422, reply.json
    assert reply.json["errors"][0]["source"]["pointer"] == REVOKE_AT
    after = item()
    assert (after.deprecation, after.due_at, after.updated_at) == (None, None, before.updated_at)


def test_a_revoked_version_takes_no_deadline(acme: Api):
    assert deprecate(acme).status == 200
    assert change(acme, {"revocation": {"status": "Revoked"}}).status == 200
    reply = deprecate(acme, **{"revoke-at": stamp(now() + timedelta(days=3))})
    assert reply.status == 422 and reply.json["errors"][0]["source"]["pointer"] == REVOKE_AT


def test_the_deadline_is_kept_in_utc_shown_everywhere_and_indexed(acme: Api):
    plus_two = timezone(timedelta(hours=2))
    local = (now() + timedelta(days=30)).astimezone(plus_two).replace(microsecond=0)
    reply = deprecate(acme, reason="use 2.x", **{"revoke-at": local.isoformat()})
    assert reply.status == 200, reply.json
    kept = stamp(local)
    assert kept.endswith("Z")
    assert reply.data["attributes"]["deprecation"]["revoke-at"] == kept
    assert reply.json["included"][0]["attributes"]["revoke-at"] == kept
    module = acme.get(VERSION_PATH).data["attributes"]["version-statuses"]
    entry = next(e for e in module if e["version"] == "1.0.0")
    assert entry["deprecation"]["revoke-at"] == kept
    # the protocol's versions and detail say when
    reply = acme.get("/api/registry/v1/modules/acme/vpc/aws/versions")
    listed = {v["version"]: v["deprecation"] for v in reply.json["modules"][0]["versions"]}
    assert listed["1.0.0"] == {"reason": "use 2.x", "link": None, "revoke-at": kept}
    assert listed["2.0.0"] is None
    detail = acme.get("/api/registry/v1/modules/acme/vpc/aws/1.0.0").json
    assert detail["deprecation"]["revoke-at"] == kept
    # indexed: the first notice (7 days before), and the organization's deprecations by date
    version = item()
    assert (version.due, version.due_at) == (store.DUE, stamp(local - timedelta(days=7)))
    assert version.deprecation_order == f"1#{kept}"


def test_notices_once_each_then_the_sweep_revokes_as_the_registry(acme: Api):
    start = now()
    revoke_at = start + timedelta(days=10)
    link = "https://x.io/upgrade"
    assert deprecate(acme, reason="Move to 2.x", link=link, **{"revoke-at": stamp(revoke_at)})
    assert sweep(start) == {}  # nothing due yet
    assert sweep(revoke_at - timedelta(days=7, seconds=1)) == {}

    seven = revoke_at - timedelta(days=7) + timedelta(seconds=30)
    assert sweep(seven) == {"noticed": 1}
    assert sweep(seven + timedelta(minutes=1)) == {}  # once
    assert item().due_at == stamp(revoke_at - timedelta(days=1))
    one = revoke_at - timedelta(hours=23)
    assert sweep(one) == {"noticed": 1}
    assert sweep(one + timedelta(minutes=1)) == {}
    notices = events("deadline-approaching")
    assert [n["resource"]["meta"]["days-left"] for n in notices] == [7, 1]
    assert {n["auth"]["type"] for n in notices} == {"System"}
    assert notices[0]["resource"]["meta"]["revoke-at"] == stamp(revoke_at)
    assert protocol_versions(acme) == ["2.0.0", "1.0.0"]  # still served

    assert sweep(revoke_at + timedelta(seconds=5)) == {"revoked": 1}
    assert sweep(revoke_at + timedelta(minutes=1)) == {}  # once
    (revoked,) = events("revoked")
    assert revoked["auth"]["type"] == "System"
    assert revoked["resource"]["meta"] == {
        "registry": "private",
        "module": "acme/vpc/aws",
        "version": "1.0.0",
        "revoke-at": stamp(revoke_at),
        "by": "deadline",
        "message": "Move to 2.x",
        "link": link,
        "outcome": "succeeded",
    }
    attributes = acme.get(f"{VERSION_PATH}/version?module_version=1.0.0").data["attributes"]
    assert attributes["revocation"] == {"status": "Revoked", "message": "Move to 2.x", "link": link}
    version = item()
    assert (version.due, version.due_at, version.deprecation_order) == (None, None, "0#")
    # the protocol stops serving it, with the owner's message
    assert protocol_versions(acme) == ["2.0.0"]
    refused = acme.get("/api/registry/v1/modules/acme/vpc/aws/1.0.0/download")
    assert refused.status == 404 and "Move to 2.x" in json.dumps(refused.json)


def test_without_a_reason_the_revocation_says_it_was_the_deadline(acme: Api):
    revoke_at = now() + timedelta(hours=2)  # under a day: no notice, the revocation itself
    assert deprecate(acme, **{"revoke-at": stamp(revoke_at)}).status == 200
    assert item().due_at == stamp(revoke_at)
    assert sweep(revoke_at) == {"revoked": 1}
    assert events("deadline-approaching") == []
    revocation = item().revocation
    assert revocation["message"] == (
        f"Version 1.0.0 was revoked on its deprecation deadline, {stamp(revoke_at)}."
    )
    assert "link" not in revocation


def test_a_notice_already_passed_when_set_is_skipped(acme: Api):
    revoke_at = now() + timedelta(days=3)  # the 7-day notice is behind: the 1-day one is next
    assert deprecate(acme, **{"revoke-at": stamp(revoke_at)}).status == 200
    assert item().due_at == stamp(revoke_at - timedelta(days=1))
    assert sweep(revoke_at - timedelta(days=2)) == {}
    assert sweep(revoke_at - timedelta(hours=1)) == {"noticed": 1}
    assert [n["resource"]["meta"]["days-left"] for n in events("deadline-approaching")] == [1]


def test_moving_or_removing_the_deadline(acme: Api):
    first = now() + timedelta(days=2)
    assert deprecate(acme, reason="old", **{"revoke-at": stamp(first)}).status == 200
    moved = now() + timedelta(days=20)
    assert deprecate(acme, reason="old", **{"revoke-at": stamp(moved)}).status == 200
    assert item().due_at == stamp(moved - timedelta(days=7))
    assert sweep(first + timedelta(minutes=1)) == {}  # the old date means nothing
    assert item().revocation is None
    # deprecating again without it removes it: out of the index, nothing ever due
    reply = deprecate(acme, reason="old")
    assert "revoke-at" not in reply.data["attributes"]["deprecation"]
    version = item()
    assert (version.due, version.due_at) == (None, None)
    assert version.deprecation_order.startswith("2#")
    assert sweep(moved + timedelta(days=1)) == {}
    assert item().revocation is None
    assert "revoke-at" not in events("deprecated")[-1]["resource"]["meta"]
    assert events("deprecated")[-2]["resource"]["meta"]["revoke-at"] == stamp(moved)
    # undeprecating removes it too
    assert deprecate(acme, **{"revoke-at": stamp(moved)}).status == 200
    assert change(acme, {"deprecation": {"deprecated-status": "Undeprecated"}}).status == 200
    version = item()
    assert (version.due, version.due_at, version.deprecated_in) == (None, None, None)


def test_un_revoking_forgets_the_deadline(acme: Api):
    revoke_at = now() + timedelta(hours=1)
    assert deprecate(acme, **{"revoke-at": stamp(revoke_at)}).status == 200
    assert sweep(revoke_at) == {"revoked": 1}
    assert change(acme, {"revocation": {"status": "Unrevoked"}}).status == 200
    version = item()
    assert "revoke-at" not in version.deprecation and version.due_at is None
    assert sweep(revoke_at + timedelta(days=1)) == {}
    assert protocol_versions(acme) == ["2.0.0", "1.0.0"]


def test_a_concurrent_undeprecate_beats_the_sweep(acme: Api):
    """The sweep read the version from the index; a person undeprecates it before the sweep
    writes: the sweep's conditional write fails, it reads the version again, finds nothing
    due and leaves it alone (no revocation, no event)."""
    revoke_at = now() + timedelta(hours=1)
    assert deprecate(acme, **{"revoke-at": stamp(revoke_at)}).status == 200
    (seen,) = deadlines.due(revoke_at)
    assert change(acme, {"deprecation": {"deprecated-status": "Undeprecated"}}).status == 200
    assert deadlines.settle(seen, revoke_at) == "skipped"
    assert item().revocation is None and events("revoked") == []
    assert protocol_versions(acme) == ["2.0.0", "1.0.0"]


def test_a_stale_read_is_decided_again(acme: Api, monkeypatch: pytest.MonkeyPatch):
    """A PATCH that lands between the sweep's read and its write (moving the deadline later)
    wins: the sweep's write is refused and the fresh version is not due."""
    revoke_at = now() + timedelta(hours=1)
    assert deprecate(acme, **{"revoke-at": stamp(revoke_at)}).status == 200
    (seen,) = deadlines.due(revoke_at)
    reads = iter([store.find_version(seen.module_id, seen.order_key, consistent=True)])
    real = store.find_version

    def first_stale(*args: Any, **kwargs: Any):
        return next(reads, None) or real(*args, **kwargs)

    monkeypatch.setattr(store, "find_version", first_stale)
    later = now() + timedelta(days=30)
    assert deprecate(acme, **{"revoke-at": stamp(later)}).status == 200
    assert deadlines.settle(seen, revoke_at) == "skipped"
    assert item().revocation is None and events("revoked") == []
    assert item().due_at == stamp(later - timedelta(days=7))


def test_two_sweeps_at_once_revoke_once(acme: Api):
    revoke_at = now() + timedelta(hours=1)
    assert deprecate(acme, **{"revoke-at": stamp(revoke_at)}).status == 200
    (first,) = deadlines.due(revoke_at)
    (second,) = deadlines.due(revoke_at)
    assert deadlines.settle(first, revoke_at) == "revoked"
    assert deadlines.settle(second, revoke_at) == "skipped"
    assert len(events("revoked")) == 1


def test_the_scheduled_function_revokes_what_is_due(acme: Api):
    """The entry app's own handler, invoked as the schedule invokes it: it sweeps at its own
    now, so the deadline is set a moment ago (within the 5 minutes a deadline may be past)."""
    assert deprecate(acme, **{"revoke-at": stamp(now() - timedelta(seconds=30))}).status == 200
    event = acme.client.events.generate_cw_event(
        source="aws.events", detail_type="Scheduled Event", detail={}, resources=[]
    )
    acme.client.lambda_.invoke("deprecation_deadlines", event)
    assert item().revocation["status"] == "Revoked"
    assert protocol_versions(acme) == ["2.0.0"]
    assert sweep() == {}  # nothing left due


def test_the_backfill_indexes_versions_deprecated_before(acme: Api):
    assert deprecate(acme, reason="old").status == 200
    version = item()
    version.update(
        actions=[
            ModuleVersionModel.deprecated_in.remove(),
            ModuleVersionModel.deprecation_order.remove(),
        ]
    )
    assert backfill.backfill_deprecation_index() == {"versions indexed": 1}
    assert item().deprecated_in == "acme" and item().deprecation_order.startswith("2#")
    assert backfill.backfill_deprecation_index() == {}


def test_two_sweeps_that_read_at_once_give_a_notice_once(
    acme: Api, monkeypatch: pytest.MonkeyPatch
):
    """Both sweeps read the version before either writes: the second's write is refused (the
    version's ``due_at`` moved on), it reads again, finds nothing due: one notice."""
    revoke_at = now() + timedelta(days=10)
    assert deprecate(acme, **{"revoke-at": stamp(revoke_at)}).status == 200
    moment = revoke_at - timedelta(days=7) + timedelta(seconds=30)
    (seen,) = deadlines.due(moment)
    stale = store.find_version(seen.module_id, seen.order_key, consistent=True)
    assert deadlines.settle(seen, moment) == "noticed"
    reads = iter([stale])
    real = store.find_version
    monkeypatch.setattr(store, "find_version", lambda *a, **k: next(reads, None) or real(*a, **k))
    assert deadlines.settle(seen, moment) == "skipped"
    assert len(events("deadline-approaching")) == 1
