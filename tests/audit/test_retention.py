"""How long audit events are kept (issue #37): 400 days at least, longer by the site's general
setting ``audit-retention-days`` (never shorter), as each event's TTL."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from chalicelib.core.audit import events, store, trail
from chalicelib.core.auth import Principal
from chalicelib.core.settings import get_settings
from tests.conftest import Api

GENERAL = "/api/v2/admin/general-settings"
MOMENT = datetime(2026, 5, 6, 7, 8, 9, tzinfo=UTC)


def _kept_days() -> int:
    """The TTL of an event recorded now, in days after the event."""
    made = events.event(
        Principal("user", "user-x", "at-x"),
        organization="acme",
        resource_type="thing",
        resource_id="thing-1",
        action="updated",
        moment=MOMENT,
    )
    trail.record(made)
    [item] = [i for i in store.AuditEventModel.query("acme") if made.id in i.key]
    return (item.expires - MOMENT).days


def _set(days: int) -> None:
    """The site's setting, as the general settings' PATCH stores it (its service)."""
    from chalicelib.admin import service
    from chalicelib.admin.store import forget_cached_settings

    service.update_general(None, {"audit-retention-days": days})  # type: ignore[arg-type]
    forget_cached_settings()


def test_events_are_kept_400_days_by_default_and_never_fewer(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chalicelib.admin.store import forget_cached_settings

    assert _kept_days() == 400
    shown = api.get(GENERAL).json["data"]["attributes"]
    assert shown["audit-retention-days"] == 400
    monkeypatch.setenv("REGISTRY_AUDIT_RETENTION_DAYS", "14")  # HCP's: refused, 400 kept
    get_settings.cache_clear()
    assert _kept_days() == 400
    monkeypatch.setenv("REGISTRY_AUDIT_RETENTION_DAYS", "731")  # the deployment's default
    get_settings.cache_clear()
    forget_cached_settings()  # the settings read before, with the old default
    assert _kept_days() == 731


def test_the_site_setting_keeps_events_longer(api: Api) -> None:
    _set(2557)  # seven years
    assert _kept_days() == 2557
    assert api.get(GENERAL).json["data"]["attributes"]["audit-retention-days"] == 2557
    # A value stored below the floor (by hand, or an older release) still keeps 400.
    _set(30)
    assert _kept_days() == 400


@pytest.mark.parametrize("days", [399, 14, 0, -1, 3654, "400", 10**12])
def test_a_retention_below_400_days_or_absurd_is_refused(api: Api, days: object) -> None:
    """The PATCH is a 422 naming the attribute, and nothing changes."""
    body = {"data": {"type": "general-settings", "attributes": {"audit-retention-days": days}}}
    reply = api.patch(GENERAL, body)
    assert reply.status == 422, reply.json
    assert "audit-retention-days" in reply.error["source"]["pointer"]
    assert api.get(GENERAL).json["data"]["attributes"]["audit-retention-days"] == 400
    assert _kept_days() == 400


def test_a_retention_the_settings_cannot_give_leaves_the_deployments(
    aws: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failing settings read (a function without the grant, DynamoDB throttling) never
    fails the change its event records: the deployment's retention is used."""

    def unreadable() -> int:
        raise RuntimeError("no settings")

    monkeypatch.setattr(store, "_retention", unreadable)
    assert _kept_days() == 400


def test_every_function_that_records_events_may_read_the_retention() -> None:
    """An event's TTL reads the general settings: each function granted to add events is
    granted to read the settings table."""
    from infrastructure import template
    from infrastructure.groups import ALL_FUNCTIONS

    resources = template.merge_template()["Resources"]
    recording = [f for f in ALL_FUNCTIONS if f.tables.get("audit-events") == "append"]
    assert recording
    for function in recording:
        statements = resources[f"{function.logical_id}Role"]["Properties"]["Policies"][0][
            "PolicyDocument"
        ]["Statement"]
        readable = [
            str(s["Resource"]) for s in statements if "dynamodb:GetItem" in s.get("Action", [])
        ]
        assert any("-settings" in r for r in readable), function.logical_id


def test_the_trail_keeps_the_later_expiry_in_the_items_ttl(api: Api) -> None:
    """The TTL attribute is the one DynamoDB's TTL reads (the template enables it)."""
    from infrastructure import template

    table = template.merge_template()["Resources"]["AuditEventsTable"]["Properties"]
    assert table["TimeToLiveSpecification"] == {"AttributeName": "expires", "Enabled": True}
    _set(1000)
    assert _kept_days() == 1000
