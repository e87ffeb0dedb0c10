"""The owners' downloads report as a JSON:API document: one ``registry-module-downloads``
resource per version (newest first), the module's total in ``meta``."""

from __future__ import annotations

from typing import Any

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
