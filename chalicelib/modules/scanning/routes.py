"""``GET .../registry-modules/private/:ns/:name/:provider/versions/:version/findings``: a
version's scan findings (JSON:API ``registry-module-findings``), for readers of the module
(anyone else gets the module's own 404)."""

from __future__ import annotations

from typing import Any

from chalice import Blueprint

from chalicelib.core.api.access import Bearer
from chalicelib.core.api.http import Ctx, route
from chalicelib.core.api.jsonapi import document, resource, to_one
from chalicelib.core.api.openapi import PAGE, Param
from chalicelib.modules import versions
from chalicelib.modules.paths import MODULE
from chalicelib.modules.scanning import findings
from chalicelib.modules.service import ModuleRef
from chalicelib.trust.findings import Finding

bp = Blueprint(__name__)

FINDINGS = MODULE + "/versions/{version}/findings"


def render_finding(version_id: str, position: int, finding: Finding) -> dict[str, Any]:
    """One finding; its id is the version's and its place in the stored report (the report
    of a version id is written once)."""
    attributes = {
        "rule-id": finding.rule_id,
        "title": finding.title,
        "severity": str(finding.severity),
        "resource": finding.resource,
        "file": finding.file,
        "start-line": finding.start_line,
        "end-line": finding.end_line,
        "description": finding.description,
        "resolution": finding.resolution,
        "guidance-url": finding.guidance_url or None,
    }
    return resource(
        "registry-module-findings",
        f"{version_id}-{position}",
        attributes,
        relationships={"registry-module-version": to_one("registry-module-versions", version_id)},
    )


@route(
    bp,
    FINDINGS,
    auth=Bearer,
    query=(
        *PAGE,
        Param(
            "filter[severity]",
            "only findings of this severity, or of these (comma-separated): "
            "critical, high, medium, low, unknown",
            {"type": "string", "maxLength": 100},
        ),
    ),
    errors={400: "an unknown severity in filter[severity]"},
    tag="modules",
)
def list_findings(
    ctx: Ctx,
    organization_name: str,
    registry_name: str,
    namespace: str,
    name: str,
    provider: str,
    version: str,
):
    """A version's scan findings, most severe first; ``meta``: the scanner, its version and
    rule set, when, the scan's status and its counts per severity."""
    ref = ModuleRef(organization_name, registry_name, namespace, name, provider)
    item, _ = versions.find_version(ctx.user, ref, version)  # the module's readers only
    wanted = findings.parse_severities(ctx.query.get("filter[severity]"))
    scan = findings.read(item)
    numbered = [
        (position, finding)
        for position, finding in enumerate(scan.findings, 1)
        if wanted is None or finding.severity in wanted
    ]
    page = ctx.paginate(numbered)
    return document(
        [render_finding(item.id, position, finding) for position, finding in page.items],
        links=page.links,
        meta={**scan.meta(), **page.meta},
    )
