"""Registry module versions: reading them, creating them (an upload link, or a VCS branch's
commit), their lifecycle (deprecating, revoking, releasing from quarantine) and deleting one.

A version of a private module is created ``pending`` with a presigned upload link; ingest
(``ingest.handler``) or VCS publishing makes it ``ok`` or failed (``service.mark_version``).
Under a blocking publishing policy (``trust.policy``) its scan may make it ``quarantined``
instead: an owner or a manage-modules team releases it with a reason (``release_version``),
or deletes it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TypeVar
from urllib.parse import urlsplit

from chalicelib.accounts import authorization
from chalicelib.artifacts import objects, queue, semver
from chalicelib.core.api.errors import Conflict, Forbidden, NotFound, Unprocessable
from chalicelib.core.api.pagination import Page
from chalicelib.core.audit.events import Event
from chalicelib.core.auth import Principal
from chalicelib.core.data.ids import iso, new_id, now
from chalicelib.modules import keys, store, writes
from chalicelib.modules.audit import events as audit_events
from chalicelib.modules.service import ModuleRef, check_registry, get_module, require_rights
from chalicelib.modules.statuses import (
    ARCHIVE_KEPT,
    TRANSITIONS,
    DeprecationStatus,
    Lifecycle,
    RevocationStatus,
    VersionAction,
    VersionStatus,
    deadline_text,
    is_revoked,
    lifecycle,
    lifecycle_moves,
)
from chalicelib.modules.store import ModuleModel, ModuleVersionModel

# ----- reading ------------------------------------------------------------------------------


def list_versions(module: ModuleModel) -> list[ModuleVersionModel]:
    return store.versions_of(module.id)


def page_versions(module: ModuleModel, page: Page) -> tuple[list[ModuleVersionModel], int]:
    """One page of the module's versions, newest first, and how many there are. The module
    item (read already) names every version in its statuses, which the transactions that
    create and delete versions keep: that is the count, and the order key of the version
    just before the page, so a page is one Query of its own versions
    (``chalicelib.core.data.lists``) and nothing else is read."""
    order_keys = sorted(
        (semver.parse(v).order_key for v in module.statuses() if semver.is_valid(v)),
        reverse=True,
    )
    total = len(order_keys)
    if page.offset >= total:
        return [], total
    before = order_keys[page.offset - 1] if page.offset else None
    return store.versions_after(module.id, before, page.size), total


def find_version(principal: Principal, ref: ModuleRef, version: str):
    module, rights = get_module(principal, ref)
    return version_of(module, version), rights


def version_of(module: ModuleModel, version: str) -> ModuleVersionModel:
    missing = NotFound(f"version {version!r} of {module.name}/{module.provider} not found")
    try:
        parsed = semver.parse(version)
    except semver.InvalidVersion:
        raise missing from None
    found = store.find_version(module.id, parsed.order_key)
    if found is None:
        raise missing
    return found


# ----- creating -----------------------------------------------------------------------------


# ``(principal, module, version, commit_sha)``: a VCS branch module's new version.
BranchVersion = Callable[[Principal, ModuleModel, str, "str | None"], ModuleVersionModel]


def create_version(
    principal: Principal,
    ref: ModuleRef,
    version: str | None,
    commit_sha: str | None,
    *,
    from_vcs: BranchVersion,
) -> tuple[ModuleVersionModel, str | None]:
    """A pending version and its presigned upload URL. A VCS-backed module's version is
    ``from_vcs``'s (publishing fetches its archive from the repository: no upload URL)."""
    if ref.registry == "public":
        check_registry("public")
    module, rights = get_module(principal, ref)
    if module.registry_name != "private":
        raise Forbidden("versions cannot be created for public modules")
    require_rights(rights, "creating a version")
    if not version:
        raise Unprocessable("version is required", pointer="/data/attributes/version")
    if module.vcs_repo:
        return from_vcs(principal, module, version, commit_sha), None
    # Who the upload link is for: the version's provenance names them (trust.provenance).
    uploader = {"type": principal.kind, "id": principal.id}
    item = insert_version(principal, module, version, commit_sha=commit_sha, created_by=uploader)
    return item, objects.presigned_upload_url(item.upload_key)


def insert_version(
    principal: Principal | None,
    module: ModuleModel,
    version: str,
    *,
    commit_sha: str | None = None,
    source: str = "tfe-api",
    tag: str | None = None,
    created_by: dict[str, str] | None = None,
) -> ModuleVersionModel:
    """Create a pending version item and its entry in the module's statuses, with its audit
    event (``created``, by ``principal``; None: the publishing worker, from a tag), in one
    transaction; 422 when the version exists, 404 when the module went away."""
    try:
        parsed = semver.parse(version)
    except semver.InvalidVersion as exc:
        raise Unprocessable(str(exc), pointer="/data/attributes/version") from None
    moment = now()
    version_id = new_id("modver")
    upload = keys.UploadKey(module.id, parsed.text, version_id)
    item = ModuleVersionModel(
        module.id,
        parsed.order_key,
        id=version_id,
        version=parsed.text,
        source=source,
        commit_sha=commit_sha,
        tag=tag,
        organization=module.organization,
        module_key=module.key,
        upload_key=upload.key,
        created_at=moment,
        updated_at=moment,
        created_by=created_by,
    )
    meta = {"source": source, **({"tag": tag} if tag else {})}
    event = audit_events.of_version(principal, item, "created", meta, moment=moment)
    try:
        writes.insert_version(module, item, moment, event)
    except writes.VersionTaken:
        raise Unprocessable(
            f"version {parsed.text} already exists",
            pointer="/data/attributes/version",
            title="version has already been taken",
        ) from None
    except writes.ModuleGone:
        raise NotFound("the module was deleted while the version was being created") from None
    return item


def upload_url(version: ModuleVersionModel, rights: authorization.OrgAccess) -> str | None:
    """The upload link stays usable until the version is ok (CI retries, failed ingests), but
    only for a caller who could create the version: a presigned PUT publishes whatever it
    carries, so a reader must never receive one. VCS versions have none: their archive comes
    from the repository."""
    if not authorization.allows(rights, "manage-modules") or not version.awaits_upload:
        return None
    return objects.presigned_upload_url(version.upload_key)


def requeue_uploads(module: ModuleModel) -> list[str]:
    """Ingest again the uploaded archives of versions that are not ok (their S3 event was
    lost, or ingest crashed and the event went to the dead-letter queue). A refused archive
    was deleted when it was refused: that version needs a new upload, which its upload link
    still takes."""
    stuck = [
        version
        for version in list_versions(module)
        if version.status not in ARCHIVE_KEPT and objects.exists(version.upload_key)
    ]
    queue.enqueue_upload_events(version.upload_key for version in stuck)
    return [version.version for version in stuck]


# ----- deprecating and revoking -------------------------------------------------------------

# Caps on what a deprecation or revocation stores (each copy lives in the version item and in
# the module item, and a revocation message is what ``terraform init`` prints).
MAX_LIFECYCLE_TEXT = 1000
MAX_LIFECYCLE_LINK = 2048
DEPRECATION = "/data/attributes/deprecation"
REVOCATION = "/data/attributes/revocation"


# How far a deprecation's deadline (``revoke-at``) may be: a little in the past (a clock
# behind, a form sent a minute late: the sweep revokes it at its next run), at most ten years
# ahead.
DEADLINE_PAST_GRACE = timedelta(minutes=5)
DEADLINE_HORIZON = timedelta(days=3653)
REVOKE_AT = f"{DEPRECATION}/revoke-at"


@dataclass(frozen=True)
class LifecycleChange:
    """``attributes.deprecation`` (``deprecated-status``, ``reason``, ``link``, ``revoke-at``:
    when the registry revokes it, an aware time) or ``attributes.revocation`` (``status``,
    ``message``, ``link``) of a version PATCH."""

    status: str | None
    text: str | None
    link: str | None
    revoke_at: datetime | None = None


S = TypeVar("S", DeprecationStatus, RevocationStatus)


def _lifecycle_status(value: str | None, kind: type[S], pointer: str) -> S:
    names = " or ".join(repr(str(member)) for member in kind)
    field = pointer.rsplit("/", 1)[1]
    if not value:
        raise Unprocessable(f"{field} is required: {names}", pointer=pointer)
    for member in kind:
        if member.lower() == value.lower():
            return member
    raise Unprocessable(f"{field} must be {names}, not {value[:64]!r}", pointer=pointer)


def _lifecycle_text(value: str | None, pointer: str) -> str | None:
    if value and len(value) > MAX_LIFECYCLE_TEXT:
        field = pointer.rsplit("/", 1)[1]
        raise Unprocessable(
            f"{field} must be at most {MAX_LIFECYCLE_TEXT} characters", pointer=pointer
        )
    return value or None


def _lifecycle_link(value: str | None, pointer: str) -> str | None:
    if not value:
        return None
    problem = None
    if len(value) > MAX_LIFECYCLE_LINK:
        problem = f"must be at most {MAX_LIFECYCLE_LINK} characters"
    elif any(ch.isspace() or not ch.isprintable() for ch in value):
        problem = "must not contain spaces or control characters"
    else:
        try:
            parts = urlsplit(value)
            valid = parts.scheme in ("http", "https") and bool(parts.hostname)
        except ValueError:
            valid = False
        if not valid:
            problem = "must be an http:// or https:// URL"
    if problem:
        raise Unprocessable(f"link {problem}", pointer=pointer)
    return value


def _compact(values: dict[str, str | None]) -> dict[str, str]:
    """Only the keys with a value (DynamoDB maps of the module item hold plain strings)."""
    return {key: value for key, value in values.items() if value}


def _revoke_at(value: datetime | None, status: DeprecationStatus) -> str | None:
    """A deprecation's deadline as it is kept (UTC, to the second: ``statuses.deadline_text``):
    with a zone, not more than 5 minutes past, at most 10 years ahead, and only on a
    deprecation (422 otherwise)."""
    if value is None:
        return None
    if status != DeprecationStatus.DEPRECATED:
        raise Unprocessable(
            "revoke-at is only for a deprecation (status Deprecated)", pointer=REVOKE_AT
        )
    if value.tzinfo is None or value.utcoffset() is None:
        raise Unprocessable(
            "revoke-at must name its time zone (e.g. Z or +02:00)", pointer=REVOKE_AT
        )
    moment = now()
    if value < moment - DEADLINE_PAST_GRACE:
        raise Unprocessable("revoke-at must not be in the past", pointer=REVOKE_AT)
    if value > moment + DEADLINE_HORIZON:
        raise Unprocessable("revoke-at must be at most 10 years ahead", pointer=REVOKE_AT)
    return deadline_text(value)


def _deprecation(change: LifecycleChange) -> tuple[DeprecationStatus, dict[str, str]]:
    status = _lifecycle_status(change.status, DeprecationStatus, f"{DEPRECATION}/deprecated-status")
    fields = {
        "reason": _lifecycle_text(change.text, f"{DEPRECATION}/reason"),
        "link": _lifecycle_link(change.link, f"{DEPRECATION}/link"),
        "revoke-at": _revoke_at(change.revoke_at, status),
    }
    return status, _compact(fields)


def _revocation(change: LifecycleChange) -> tuple[RevocationStatus, dict[str, str]]:
    status = _lifecycle_status(change.status, RevocationStatus, f"{REVOCATION}/status")
    fields = {
        "message": _lifecycle_text(change.text, f"{REVOCATION}/message"),
        "link": _lifecycle_link(change.link, f"{REVOCATION}/link"),
    }
    return status, _compact(fields)


def _wanted(
    deprecation: LifecycleChange | None, revocation: LifecycleChange | None
) -> tuple[VersionAction, dict[str, str]]:
    """The one change a PATCH asks for, and its texts, checked."""
    if deprecation is not None and revocation is not None:
        raise Unprocessable(
            "send either deprecation or revocation, not both", pointer="/data/attributes"
        )
    if deprecation is not None:
        deprecated, fields = _deprecation(deprecation)
        if deprecated == DeprecationStatus.DEPRECATED:
            return VersionAction.DEPRECATE, fields
        return VersionAction.UNDEPRECATE, fields
    if revocation is not None:
        revoked, fields = _revocation(revocation)
        if revoked == RevocationStatus.REVOKED:
            return VersionAction.REVOKE, fields
        return VersionAction.UNREVOKE, fields
    raise Unprocessable("deprecation or revocation is required", pointer="/data/attributes")


def change_version_lifecycle(
    principal: Principal,
    ref: ModuleRef,
    version: str,
    *,
    deprecation: LifecycleChange | None,
    revocation: LifecycleChange | None,
) -> tuple[ModuleVersionModel, authorization.OrgAccess]:
    """Deprecate, undeprecate, revoke or un-revoke one ok version of a private module (owners
    and manage-modules teams; 404 for everyone else). A version is deprecated before it can be
    revoked; un-revoking leaves it deprecated (``Unrevoked``); undeprecating a revoked version
    is refused; undeprecating clears both. Everything is checked before the one conditional
    write, which is decided again on the fresh item if the version changed meanwhile.

    A deprecation may carry a deadline (``revoke-at``): the sweep revokes the version then
    (``chalicelib.modules.deadlines``). Deprecating again replaces it (sent: moved; left
    out: removed), as it replaces the reason and link; a revoked version takes none."""
    module, rights = get_module(principal, ref)
    require_rights(rights, "deprecating or revoking a version")
    if module.registry_name != "private":
        raise NotFound("only versions of private modules can be deprecated or revoked")
    item = version_of(module, version)
    action, fields = _wanted(deprecation, revocation)
    for _ in range(3):
        _check_transition(item, action)
        if "revoke-at" in fields and is_revoked(item.revocation):
            raise Unprocessable(
                f"version {item.version} is revoked already: it takes no deadline",
                pointer=REVOKE_AT,
            )
        new_deprecation, new_revocation = _changed(item, action, fields)
        moment = now()
        recorded = _event(principal, item, action, moment, fields)
        try:
            writes.record_version_lifecycle(item, new_deprecation, new_revocation, moment, recorded)
        except writes.VersionChanged:
            item = version_of(module, version)  # 404 when it was deleted meanwhile
            continue
        except writes.ModuleGone:
            raise NotFound("the module was deleted while the version was being changed") from None
        item.deprecation, item.revocation, item.updated_at = new_deprecation, new_revocation, moment
        return item, rights
    raise Conflict(f"version {item.version} is being changed by another request: try again")


def _event(
    principal: Principal,
    item: ModuleVersionModel,
    action: VersionAction,
    moment: datetime,
    meta: dict[str, str],
) -> Event:
    """The audit event of a version's lifecycle change (written with it): ``deprecated``,
    ``undeprecated``, ``revoked``, ``unrevoked`` or ``released``, with the texts given."""
    return audit_events.of_version(principal, item, f"{action}d", meta, moment=moment)


def _check_transition(item: ModuleVersionModel, action: VersionAction) -> None:
    """Refuse a change the version's lifecycle does not allow now (``statuses.TRANSITIONS``)."""
    state = lifecycle(item.status, item.deprecation, item.revocation)
    if (state, action) in TRANSITIONS:
        return
    if state == Lifecycle.QUARANTINED:
        raise Unprocessable(
            f"version {item.version} is quarantined by the organization's publishing policy: "
            "release it (with a reason) or delete it",
            pointer="/data/attributes",
        )
    if action == VersionAction.RELEASE:
        raise Unprocessable(
            f"only a quarantined version can be released: {item.version} is {item.status}",
            pointer="/data/attributes",
        )
    if state == Lifecycle.UNPUBLISHED:
        raise Unprocessable(
            f"only published versions can be deprecated or revoked: {item.version} is "
            f"{item.status}",
            pointer="/data/attributes",
        )
    if action == VersionAction.REVOKE:
        raise Unprocessable(
            f"version {item.version} must be deprecated before it can be revoked",
            pointer=f"{REVOCATION}/status",
        )
    raise Unprocessable(
        f"version {item.version} is revoked: un-revoke it (revocation status 'Unrevoked') "
        "before undeprecating it",
        pointer=f"{DEPRECATION}/deprecated-status",
    )


def _changed(
    item: ModuleVersionModel, action: VersionAction, fields: dict[str, str]
) -> tuple[dict[str, str] | None, dict[str, str] | None]:
    """The (deprecation, revocation) after an allowed ``action``: deprecating again replaces
    the reason, link and deadline (a revoked version stays revoked), revoking again the
    message and link; undeprecating clears both; un-revoking a version that is not revoked
    changes nothing. Un-revoking forgets the deadline (whoever un-revokes wants it served:
    a new deadline is a new deprecation)."""
    if action == VersionAction.DEPRECATE:
        kept_id = (item.deprecation or {}).get("id") or new_id("dep")
        status = str(DeprecationStatus.DEPRECATED)
        return {"id": kept_id, "deprecated-status": status, **fields}, item.revocation
    if action == VersionAction.UNDEPRECATE:
        return None, None
    if action == VersionAction.REVOKE:
        return item.deprecation, {"status": str(RevocationStatus.REVOKED), **fields}
    if is_revoked(item.revocation):
        kept = {k: v for k, v in (item.deprecation or {}).items() if k != "revoke-at"}
        return kept or None, {"status": str(RevocationStatus.UNREVOKED)}
    return item.deprecation, item.revocation


# ----- releasing a quarantined version ------------------------------------------------------

RELEASE_REASON = "/data/attributes/reason"


def who(principal: Principal) -> dict[str, str]:
    """A principal as a version's records name it: its kind and id, and a user's username."""
    from chalicelib.accounts.users.service import shown_username

    named = {"type": principal.kind, "id": principal.id}
    username = shown_username(principal)
    return {**named, "name": username} if username else named


def release_version(
    principal: Principal, ref: ModuleRef, version: str, reason: str | None
) -> tuple[ModuleVersionModel, authorization.OrgAccess]:
    """Serve a version the publishing policy quarantined, with a written reason (owners and
    manage-modules teams; 404 for everyone else): it becomes ``ok`` and the registry protocol
    lists it; its ``quarantine`` keeps the reasons it was held for, and who released it, when
    and why. Only a quarantined version is released (422 otherwise); everything is checked
    before the one conditional write, decided again on the fresh item if it changed."""
    module, rights = get_module(principal, ref)
    require_rights(rights, "releasing a quarantined version")
    if module.registry_name != "private":
        raise NotFound("only versions of private modules are quarantined")
    text = (reason or "").strip()
    if not text:
        raise Unprocessable(
            "reason is required: say why this version may be served despite its policy",
            pointer=RELEASE_REASON,
        )
    if len(text) > MAX_LIFECYCLE_TEXT:
        raise Unprocessable(
            f"reason must be at most {MAX_LIFECYCLE_TEXT} characters", pointer=RELEASE_REASON
        )
    item = version_of(module, version)
    released_by = who(principal)
    for _ in range(3):
        _check_transition(item, VersionAction.RELEASE)
        moment = now()
        record = {
            **(item.quarantine or {}),
            "released-by": released_by,
            "released-at": iso(moment),
            "release-reason": text,
        }
        recorded = _event(principal, item, VersionAction.RELEASE, moment, {"reason": text})
        try:
            writes.release_version(item, record, moment, recorded)
        except writes.VersionChanged:
            item = version_of(module, version)  # 404 when it was deleted meanwhile
            continue
        except writes.ModuleGone:
            raise NotFound("the module was deleted while the version was being released") from None
        item.status, item.quarantine, item.updated_at = str(VersionStatus.OK), record, moment
        return item, rights
    raise Conflict(f"version {item.version} is being changed by another request: try again")


def offered_actions(version: ModuleVersionModel, *, owner: bool) -> list[VersionAction]:
    """What may be done to a version now, in the order a page offers it (the service
    decides again when it is asked): its upload while it awaits one, the lifecycle changes
    that move it, and for owners its deletion."""
    actions = [VersionAction.UPLOAD] if version.awaits_upload else []
    actions += lifecycle_moves(lifecycle(version.status, version.deprecation, version.revocation))
    return [*actions, VersionAction.DELETE] if owner else actions


# ----- deleting -----------------------------------------------------------------------------


def delete_version(principal: Principal, module: ModuleModel, version: ModuleVersionModel) -> bool:
    """Delete one version and its objects, recorded (``deleted``); True when it was the last
    one and took the module with it (recorded too: the module ``deleted``)."""
    moment = now()
    event = audit_events.of_version(principal, version, "deleted", moment=moment)
    cause = {"versions": [version.version], "cause": "its last version was deleted"}
    module_event = audit_events.of_module(principal, module, "deleted", cause, moment=moment)
    module_gone = writes.delete_version(module, version, moment, event, module_event)
    objects.delete_objects(version.object_keys)
    return module_gone
