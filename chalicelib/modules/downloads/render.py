"""The owners' downloads report as a JSON:API document: one ``registry-module-downloads``
resource per version (newest first), the module's total in ``meta``; and the upgrade
campaigns' resources (``campaign``): a module's consumers, the organization's campaigns."""

from __future__ import annotations

from typing import Any

from chalicelib.modules.downloads.campaign import Campaign, Consumer, ModuleCampaign
from chalicelib.modules.downloads.service import Report


def render_report(report: Report) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(data, meta) of the report."""
    module = report.module
    data = [
        {
            "type": "registry-module-downloads",
            "id": f"{module.id}/{version.version}",
            "attributes": {
                "version": version.version,
                "total": version.total,
                "daily": [{"date": day, "downloads": n} for day, n in version.daily],
                "consumers": [
                    {
                        "kind": consumer.kind,
                        "id": consumer.id,
                        "name": consumer.name,
                        "last-download-at": consumer.last_download,
                    }
                    for consumer in version.consumers
                ],
            },
            "relationships": {
                "registry-module": {"data": {"type": "registry-modules", "id": module.id}}
            },
        }
        for version in report.versions
    ]
    return data, {"total": report.total, "days": report.days}


# The JSON:API type of each consumer kind (the ``consumer`` relationship).
CONSUMER_TYPES = {"user": "users", "team": "teams", "organization": "organizations"}


def render_consumer(
    campaign: Campaign, consumer: Consumer, names: dict[tuple[str, str], str]
) -> dict[str, Any]:
    """One ``registry-module-consumers`` resource: a consumer, the version it downloaded
    last and where that version stands."""
    module = campaign.module
    return {
        "type": "registry-module-consumers",
        "id": f"{module.id}/{consumer.kind}/{consumer.id}",
        "attributes": {
            "kind": consumer.kind,
            "consumer-id": consumer.id,
            "name": names.get((consumer.kind, consumer.id)),
            "version": consumer.version,
            "last-download-at": consumer.last_download,
            "status": str(consumer.standing),
            "deprecated": consumer.deprecated,
            "revoked": consumer.revoked,
            "behind": consumer.behind,
            "revoke-at": consumer.revoke_at,
            "latest-version": campaign.latest,
        },
        "relationships": {
            "consumer": {
                "data": {
                    "type": CONSUMER_TYPES.get(consumer.kind, consumer.kind),
                    "id": consumer.id,
                }
            },
            "registry-module": {"data": {"type": "registry-modules", "id": module.id}},
        },
    }


def render_module_campaign(found: ModuleCampaign, base_url: str) -> dict[str, Any]:
    """One ``registry-module-campaigns`` resource: a module with consumers on deprecated
    versions, its deprecated versions (most urgent first) and its consumers' counts."""
    module = found.module
    address = f"{module.registry_name}/{module.namespace}/{module.name}/{module.provider}"
    return {
        "type": "registry-module-campaigns",
        "id": module.id,
        "attributes": {
            "registry-name": module.registry_name,
            "namespace": module.namespace,
            "name": module.name,
            "provider": module.provider,
            "latest-version": found.campaign.latest,
            "soonest-revoke-at": found.soonest_revoke_at,
            "consumers": found.campaign.counts(),
            "deprecated-versions": [
                {
                    "version": v.version,
                    "revoked": v.revoked,
                    "revoke-at": v.revoke_at,
                    "reason": v.reason,
                    "link": v.link,
                    "consumers": v.consumers,
                }
                for v in found.deprecated
            ],
        },
        "relationships": {
            "registry-module": {"data": {"type": "registry-modules", "id": module.id}}
        },
        "links": {
            "consumers": f"{base_url}/api/v2/organizations/{module.organization}"
            f"/registry-modules/{address}/consumers"
        },
    }
