"""JSON:API rendering of registry modules and versions, shared by the registry and the
publishing routes (what go-tfe compares: list items equal the create/read response)."""

from __future__ import annotations

from typing import Any

from chalicelib.accounts.authorization import OrgAccess
from chalicelib.artifacts.semver import parse as parse_version
from chalicelib.core import tagbindings
from chalicelib.core.api.jsonapi import Includer, identifiers, resource, to_one
from chalicelib.core.data.ids import iso
from chalicelib.modules.statuses import is_revoked
from chalicelib.modules.store import ModuleModel, ModuleVersionModel
from chalicelib.trust import findings


def webhook_url(base_url: str, webhook_id: str) -> str:
    return f"{base_url}/webhooks/vcs/{webhook_id}"


VERSION_STATUS_KEYS = ("status", "error")


def render_deprecation(deprecation: dict[str, Any] | None) -> dict[str, Any] | None:
    """A version's ``deprecation`` attribute: ``null`` unless it is deprecated; with
    ``revoke-at`` (when the registry revokes it) only when it has a deadline, as TFE's
    clients know the object without it."""
    if not deprecation:
        return None
    return {
        "deprecated-status": deprecation.get("deprecated-status"),
        "reason": deprecation.get("reason"),
        "link": deprecation.get("link"),
        **_deadline(deprecation),
    }


def _deadline(deprecation: dict[str, Any]) -> dict[str, Any]:
    """``{"revoke-at"}`` of a deprecation with a deadline, else nothing."""
    return {"revoke-at": deprecation["revoke-at"]} if deprecation.get("revoke-at") else {}


def render_revocation(revocation: dict[str, Any] | None) -> dict[str, Any] | None:
    """A version's ``revocation`` attribute: ``Revoked`` with its message and link,
    ``Unrevoked`` once that is undone (until the version is undeprecated), else ``null``."""
    if not revocation:
        return None
    return {
        "status": revocation.get("status"),
        "message": revocation.get("message"),
        "link": revocation.get("link"),
    }


def _status_entry(version: str, entry: dict[str, Any]) -> dict[str, Any]:
    """One ``version-statuses`` item: status and error, and the deprecation and revocation
    of a version that has them."""
    out = {"version": version, **{k: entry[k] for k in VERSION_STATUS_KEYS if k in entry}}
    if entry.get("deprecation"):
        out["deprecation"] = render_deprecation(entry["deprecation"])
    if entry.get("revocation"):
        out["revocation"] = render_revocation(entry["revocation"])
    if entry.get("scan"):  # scanned: absent means pending, as on versions before scans
        out.update(render_scan_entry(entry["scan"]))
    return out


def render_scan_entry(summary: dict[str, Any] | None) -> dict[str, Any]:
    """What a version's attributes, and its ``version-statuses`` item, say of its scan:
    ``scan-status`` (``pending`` until it is scanned) and ``scan-counts``, findings per
    severity (every severity named; null while pending or after a failed scan). Read from
    the version's ``scan`` or the module entry's (``findings.entry_summary``): nothing more."""
    status = findings.status_of(summary)
    counted = status in (findings.ScanStatus.PASSED, findings.ScanStatus.FINDINGS)
    return {
        "scan-status": str(status),
        "scan-counts": findings.counts_of(summary) if counted else None,
    }


def render_scan(summary: dict[str, Any] | None) -> dict[str, Any]:
    """A version's scan attributes: ``render_scan_entry``'s, and ``scan``, the summary's
    facts (scanner, its version and rule set, when, the error of a failed scan), null while
    pending. Its findings are ``.../versions/:version/findings``."""
    facts = None
    if findings.status_of(summary) != findings.ScanStatus.PENDING and summary:
        keys = ("scanner", "scanner-version", "rules-version", "scanned-at", "error")
        facts = {key: summary[key] for key in keys if key in summary}
    return {**render_scan_entry(summary), "scan": facts}


def _version_order(version: str) -> tuple[Any, ...]:
    try:
        return (0, parse_version(version).order_key)
    except ValueError:
        return (1, version)


def render_vcs_repo(module: ModuleModel, base_url: str) -> dict[str, Any]:
    registration = module.webhook_registration or {}
    return {
        **module.vcs_repo,
        "github-app-installation-id": None,
        "webhook-url": webhook_url(base_url, module.webhook_id),
        # Whether the registry added the webhook at the VCS host (and why not).
        "webhook-registration": {
            "status": registration.get("status"),
            "detail": registration.get("detail"),
        },
    }


def render_module(module: ModuleModel, rights: OrgAccess, base_url: str) -> dict[str, Any]:
    """``vcs-repo`` (and the last tag sync's ``vcs-sync`` report) only on VCS modules."""
    statuses = module.statuses()
    attributes: dict[str, Any] = {
        "name": module.name,
        "namespace": module.namespace,
        "provider": module.provider,
        "registry-name": module.registry_name,
        "status": module.status,
        "version-statuses": [
            _status_entry(v, statuses[v]) for v in sorted(statuses, key=_version_order)
        ],
        "revoked-versions": [
            v
            for v in sorted(statuses, key=_version_order)
            if is_revoked(statuses[v].get("revocation"))
        ],
        "publishing-mechanism": module.publishing_mechanism,
        "no-code": module.no_code,
        "created-at": iso(module.created_at),
        "updated-at": iso(module.updated_at),
        "permissions": {
            "can-delete": rights.is_owner,
            # What the caller may do, as TFE reports it (go-tfe expects both true for an owner
            # on any module); whether the action applies to this module is the action's answer.
            "can-resync": rights.manage_modules,
            "can-retry": rights.manage_modules,
        },
        "test-config": module.test_config,
    }
    if module.vcs_repo:
        attributes["vcs-repo"] = render_vcs_repo(module, base_url)
        attributes["vcs-sync"] = module.vcs_sync
    return resource(
        "registry-modules",
        module.id,
        attributes,
        relationships={
            "organization": to_one("organizations", module.organization),
            "no-code-modules": {"data": no_code_identifiers(module)},
            "tag-bindings": tagbindings.relationship(tag_bindings_path(module.id)),
        },
        links={
            "self": f"/api/v2/organizations/{module.organization}/registry-modules/"
            f"{module.registry_name}/{module.namespace}/{module.name}/{module.provider}"
        },
    )


def tag_bindings_path(module_id: str) -> str:
    """Where a module's tag bindings are listed (its ``tag-bindings`` relationship)."""
    return f"/api/v2/registry-modules/{module_id}/tag-bindings"


def no_code_identifiers(module: ModuleModel) -> list[dict[str, str]]:
    """The ``no-code-modules`` relationship's data: the module's no-code module, whose id
    the module item carries (one per module), so no other read is needed."""
    ids = [module.no_code_module_id] if module.no_code_module_id else []
    return identifiers("no-code-modules", ids)


# What a module's list and read serve for ``?include=`` (go-tfe's
# RegistryModuleListIncludeOpt).
MODULE_INCLUDES = ("no-code-modules",)


def module_includers(no_code_modules: Includer) -> dict[str, Includer]:
    """The loaders of ``MODULE_INCLUDES``. The no-code modules live in a sub-room the
    registry's core does not import (chalicelib.modules.nocode): the routes hand its loader
    in."""
    return {"no-code-modules": no_code_modules}


def render_version(version: ModuleVersionModel, upload: str | None = None) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "source": version.source,
        "status": version.status,
        "version": version.version,
        "commit-sha": version.commit_sha,
        "created-at": iso(version.created_at),
        "updated-at": iso(version.updated_at),
        "deprecation": render_deprecation(version.deprecation),
        "revocation": render_revocation(version.revocation),
        **render_scan(version.scan_summary),
    }
    if version.error:
        attributes["error"] = version.error
    if version.quarantine:
        attributes["quarantine"] = render_quarantine(version.quarantine)
    if version.sha256:
        attributes["sha256"] = version.sha256
    relationships = {"registry-module": to_one("registry-modules", version.module_id)}
    if version.deprecation:
        relationships["deprecation"] = to_one("deprecations", version.deprecation.get("id"))
    return resource(
        "registry-module-versions",
        version.id,
        attributes,
        relationships=relationships,
        links={"upload": upload} if upload else None,
    )


def render_quarantine(quarantine: dict[str, Any]) -> dict[str, Any]:
    """Why the publishing policy held the version back (``reasons``, ``quarantined-at``) and,
    once released, who released it (``released-by``: type, id, a user's name), when and why
    (``released-at``, ``release-reason``); a version never held back has none."""
    keys = ("reasons", "quarantined-at", "released-by", "released-at", "release-reason")
    return {key: quarantine.get(key) for key in keys}


def render_deprecation_included(version: ModuleVersionModel) -> list[dict[str, Any]]:
    """The ``deprecations`` resource a deprecated version's ``deprecation`` relationship
    names, for ``included`` (TFE answers a deprecation with it): reason, link and deadline."""
    deprecation = version.deprecation
    if not deprecation or not deprecation.get("id"):
        return []
    attributes = {
        "reason": deprecation.get("reason"),
        "link": deprecation.get("link"),
        **_deadline(deprecation),
    }
    return [resource("deprecations", deprecation["id"], attributes)]
