"""An event as the trail's pages show it: when, who (a link that filters by them), what
was done to which resource (a link to the resource's page while it can still have one),
the outcome, and from where (address, user agent, request id)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import quote

# Site settings areas that have a page (``web.siteadmin.settings_routes``).
SETTINGS_PAGES = {"general", "saml", "smtp", "sms", "cost-estimation", "customization"}
# What a "deleted" or "removed" event's resource no longer has: a page.
GONE = {"deleted", "removed"}


@dataclass(frozen=True)
class Row:
    """One event's row."""

    id: str
    when: datetime
    actor: str
    actor_id: str
    actor_type: str
    action: str
    resource_type: str
    resource_id: str
    link: str | None
    outcome: str
    details: list[tuple[str, str]]
    source_address: str | None
    user_agent: str | None
    request_id: str


def _module_path(organization: str, key: Any, version: Any = None) -> str | None:
    """The module page of a module key (``registry#namespace#name#provider``)."""
    parts = str(key or "").split("#")
    if len(parts) != 4 or not all(parts):
        return None
    path = f"/app/{quote(organization)}/registry/modules/" + "/".join(quote(p) for p in parts)
    return f"{path}/{quote(str(version))}" if version else path


def link(organization: str | None, resource: dict[str, Any]) -> str | None:
    """The page of an event's resource, when there is one to link to."""
    kind, rid, meta = resource.get("type"), str(resource.get("id") or ""), resource.get("meta")
    meta = meta if isinstance(meta, dict) else {}
    if resource.get("action") in GONE or not rid:
        return None
    if organization is None:  # site-wide: settings and the users' directory
        if kind == "setting" and rid in SETTINGS_PAGES:
            return f"/app/admin/settings/{rid}"
        if kind == "scim-token" or (kind == "setting" and rid == "scim"):
            return "/app/admin/scim"
        if kind == "user":
            return "/app/admin/users"
        return None
    org = quote(organization)
    if kind == "registry-module-version":
        return _module_path(organization, meta.get("module"), meta.get("version"))
    if kind == "registry-module":
        return _module_path(organization, meta.get("module"))
    if kind == "organization":
        return f"/app/{org}/registry/modules"
    if kind in ("organization-membership", "invitation"):
        return f"/app/{org}/members"
    if kind == "team" and rid.startswith("team-"):
        return f"/app/{org}/teams/{quote(rid)}"
    if kind in ("registry-policy", "authentication-token") and rid == organization:
        return f"/app/{org}/settings"
    if kind in ("registry-provider", "registry-provider-version", "registry-provider-platform"):
        return f"/app/{org}/registry/providers"
    return None


def row(document: dict[str, Any], organization: str | None) -> Row:
    """The row of a stored event (HCP's shape, ``core.audit.events.Event.to_json``)."""
    auth, request, resource = document["auth"], document["request"], document["resource"]
    meta = dict(resource.get("meta") or {})
    outcome = str(meta.pop("outcome", None) or "succeeded")
    details = [
        (str(k), ", ".join(map(str, v)) if isinstance(v, list) else str(v))
        for k, v in meta.items()
        if v not in (None, "", [])
    ]
    return Row(
        id=document["id"],
        when=datetime.fromisoformat(document["timestamp"].replace("Z", "+00:00")),
        actor=auth.get("description") or auth.get("accessor_id") or "",
        actor_id=auth.get("accessor_id") or "",
        actor_type=auth.get("type") or "",
        action=resource.get("action") or "",
        resource_type=resource.get("type") or "",
        resource_id=resource.get("id") or "",
        link=link(organization, resource),
        outcome=outcome,
        details=details,
        source_address=request.get("source_address"),
        user_agent=request.get("user_agent"),
        request_id=request.get("id") or "",
    )
