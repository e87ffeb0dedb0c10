"""The audit events of the registry's modules, versions and no-code modules: one home for
what each change records (``core.audit.events.event``), written by ``writes`` in the change's
own transaction.

``resource_type``: ``registry-module``, ``registry-module-version`` or ``no-code-module``;
``resource_id``: the item's id (``mod-...``, ``modver-...``, ``nocode-...``); the event is
kept in the module's organization's partition. ``meta`` names the module (``registry``,
``module`` as ``namespace/name/provider``) and the version, so that a reader of the trail
knows what the id was after it is deleted. ``principal`` None: the registry itself (the
ingest, publishing and scan workers, a VCS host's signed webhook delivery): ``auth.type``
``System``; who the change was for goes in ``meta`` (``uploaded-by``: the version's
``created_by``).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from chalicelib.core.audit import events
from chalicelib.core.audit.events import SUCCEEDED, Event

if TYPE_CHECKING:
    from chalicelib.core.auth import Principal
    from chalicelib.modules.nocode.store import NoCodeModuleModel
    from chalicelib.modules.store import ModuleModel, ModuleVersionModel

MODULE = "registry-module"
VERSION = "registry-module-version"
NO_CODE = "no-code-module"

# Actions beyond HCP's ``created``/``updated``/``deleted`` (past tense, kebab-case).
UPLOADED = "uploaded"  # ingest accepted the archive (the version is ok, or held for its scan)
REFUSED = "refused"  # ingest refused the archive (outcome ``refused``)
FETCH_FAILED = "fetch-failed"  # publishing could not fetch the version's commit
SCANNED = "scanned"  # the scan's summary recorded (a held version published, if it passed)
QUARANTINED = "quarantined"  # the scan held the version back under the policy
SYNCED = "synced"  # the publishing worker read the repository's tags
SYNC_FAILED = "sync-failed"
SYNC_REQUESTED = "sync-requested"  # a resync, or a VCS host's tag delivery
RETRIED = "retried"
WEBHOOK_REGISTERED = "webhook-registered"  # outcome: registered, manual or failed
WEBHOOK_SECRET_REGENERATED = "webhook-secret-regenerated"
FAILED = "failed"


def _names(module_key: str) -> dict[str, str]:
    """``registry`` and ``module`` (``namespace/name/provider``) of a module's key."""
    registry, namespace, name, provider = module_key.split("#")
    return {"registry": registry, "module": f"{namespace}/{name}/{provider}"}


def of_module(
    principal: Principal | None,
    module: ModuleModel,
    action: str,
    meta: dict[str, Any] | None = None,
    *,
    outcome: str = SUCCEEDED,
    moment: datetime | None = None,
) -> Event:
    """A change of the module ``module``."""
    return events.event(
        principal,
        organization=module.organization,
        resource_type=MODULE,
        resource_id=module.id,
        action=action,
        meta={**_names(module.key), **(meta or {})},
        outcome=outcome,
        moment=moment,
    )


def of_version(
    principal: Principal | None,
    version: ModuleVersionModel,
    action: str,
    meta: dict[str, Any] | None = None,
    *,
    outcome: str = SUCCEEDED,
    moment: datetime | None = None,
) -> Event:
    """A change of the module version ``version``."""
    return events.event(
        principal,
        organization=version.organization,
        resource_type=VERSION,
        resource_id=version.id,
        action=action,
        meta={**_names(version.module_key), "version": version.version, **(meta or {})},
        outcome=outcome,
        moment=moment,
    )


def of_no_code(
    principal: Principal,
    item: NoCodeModuleModel,
    action: str,
    meta: dict[str, Any] | None = None,
) -> Event:
    """A change of the no-code module ``item`` (of one registry module)."""
    return events.event(
        principal,
        organization=item.organization,
        resource_type=NO_CODE,
        resource_id=item.id,
        action=action,
        meta={
            **_names(item.module_key),
            "registry-module": item.registry_module_id,
            **(meta or {}),
        },
    )


def uploader(version: ModuleVersionModel) -> dict[str, Any]:
    """Who a worker's outcome for ``version`` was for: the person or token that created the
    version (its upload link), as ``<type>:<id>``; a VCS version's source and commit."""
    meta: dict[str, Any] = {"source": version.source}
    created_by = version.created_by or {}
    if created_by.get("id"):
        meta["uploaded-by"] = f"{created_by.get('type')}:{created_by['id']}"
    if version.commit_sha:
        meta["commit-sha"] = version.commit_sha
    return meta
