"""Bringing versions in from a module's repository: the ``vcs-sync`` and ``vcs-fetch`` jobs.

* ``sync_tags`` lists the repository's tags; every ``[tag-prefix][v]<semver>`` tag without a
  version yet becomes a pending version (source = the service provider) and a ``vcs-fetch``
  job, at most ``MAX_VERSIONS_PER_SYNC`` per job (a follow-up job does the rest). The module's
  ``vcs_sync`` report says what was published, which tags were skipped and why, or why the
  sync failed.
* ``fetch_version`` packs the version's commit (the branch head for a branch-based version
  created without one), or its ``source-directory``, and puts it at the version's upload key;
  the S3 event then runs the same ingest as an uploaded archive.

Both are idempotent: SQS may deliver a job twice, and retry queues them again.
"""

from __future__ import annotations

import logging
from typing import Any

from chalicelib.artifacts import objects, queue, semver
from chalicelib.artifacts.statuses import VersionStatus
from chalicelib.core import observe
from chalicelib.core.api.errors import NotFound, Unprocessable
from chalicelib.core.audit.events import Event
from chalicelib.core.data.ids import iso, now
from chalicelib.core.settings import get_settings
from chalicelib.modules import service, store, versions, writes
from chalicelib.modules.audit import events as audit_events
from chalicelib.modules.publishing.versions import semver_tags
from chalicelib.modules.statuses import SYNC_MAY_SET, ModuleStatus, SyncStatus
from chalicelib.modules.store import ModuleModel, ModuleVersionModel
from chalicelib.vcs import git
from chalicelib.vcs import service as vcs

log = logging.getLogger("registry.publishing.sync")

MAX_REPORTED_TAGS = 50
CLONE_FAILED = VersionStatus.CLONE_FAILED
# New versions one sync job creates (one transaction each); a follow-up job does the rest.
MAX_VERSIONS_PER_SYNC = 200


def find_module(module_id: str) -> ModuleModel | None:
    found = store.module_by_id(module_id)
    if found is None:
        return None
    return store.find_module(found.organization, found.key, consistent=True)


def record_sync(
    module: ModuleModel,
    report: dict[str, Any],
    event: Event,
    *,
    status: ModuleStatus | None = None,
) -> bool:
    """Store the sync report with its audit ``event`` (and move the module status from
    ``pending``-like states only: a concurrent first ok version's ``setup_complete`` is never
    overwritten; the status follows the report the event records)."""
    try:
        actions = [ModuleModel.vcs_sync.set(report), ModuleModel.updated_at.set(now())]
        writes.update_module(module, actions, event, read_back=False)
    except writes.ModuleGone:
        return False
    if status:
        with observe.bookkeeping():
            writes.update_module_if(module, [ModuleModel.status.set(str(status))], SYNC_MAY_SET)
    return True


def queue_sync(module: ModuleModel) -> None:
    queue.enqueue(queue.SYNC, module_id=module.id)


def request_sync(module: ModuleModel, event: Event) -> None:
    """Mark the module's tag sync as queued (what a reader sees until it runs), with the
    audit ``event`` of whoever asked (a resync, a retry, a VCS host's tag delivery), and
    queue it."""
    record_sync(module, {"status": SyncStatus.QUEUED}, event)
    queue_sync(module)


def repository(module: ModuleModel) -> tuple[vcs.Connection, str]:
    """A VCS module's connection (with its token) and clone URL; ``Unprocessable`` when the
    connection is gone, ``git.IdentifierError`` when the identifier no longer fits it."""
    repo = module.vcs_repo
    connection = vcs.resolve_connection(module.organization, repo["oauth-token-id"])
    return connection, connection.repository_url(repo["identifier"])


def _connection_gone(repo: dict[str, Any]) -> str:
    return (
        f"the VCS connection {repo['oauth-token-id']} no longer exists: update the module's "
        "oauth-token-id"
    )


def sync_tags(module_id: str) -> str:
    module = find_module(module_id)
    if module is None:
        return "gone"
    repo = module.vcs_repo
    if not repo or repo.get("branch"):
        return "not-tag-based"
    started = iso(now())
    try:
        connection, url = repository(module)
        tags = git.list_tags(url, connection.token, username=connection.username)
    except Unprocessable:
        return _sync_failed(module, _connection_gone(repo), started)
    except (git.GitError, git.IdentifierError) as exc:
        return _sync_failed(module, f"could not read the repository's tags: {exc}", started)

    found, skipped = semver_tags(tags, repo.get("tag-prefix"))
    existing = {v.version: v for v in versions.list_versions(module)}
    published: list[str] = []
    fetches: list[dict[str, str]] = []
    reported = [{"tag": s.tag, "reason": s.reason} for s in skipped]
    more = False
    for tag in found:
        have = existing.get(tag.version)
        if have is None and len(published) == MAX_VERSIONS_PER_SYNC:
            more = True  # the rest in a follow-up job, well within the function's timeout
            break
        if have is not None:
            if have.commit_sha and have.commit_sha != tag.sha and have.source != "tfe-api":
                reported.append(
                    {
                        "tag": tag.tag,
                        "reason": f"version {tag.version} was published from commit "
                        f"{have.commit_sha[:12]}; the tag now points at {tag.sha[:12]} and "
                        "published versions never change",
                    }
                )
            continue
        try:
            item = versions.insert_version(
                None,
                module,
                tag.version,
                commit_sha=tag.sha,
                source=repo["service-provider"],
                tag=tag.tag,
            )
        except Unprocessable:
            continue  # a concurrent sync created it
        except NotFound:
            break  # the module was deleted meanwhile
        fetches.append({"module_id": module.id, "version": item.version, "version_id": item.id})
        published.append(tag.version)
    # Queued even when the module went away midway: those jobs find nothing and stop.
    queue.enqueue_many(queue.FETCH, fetches)
    if more:
        queue_sync(module)

    report: dict[str, Any] = {
        "status": SyncStatus.CONTINUING if more else SyncStatus.SYNCED,
        "error": None,
        "synced-at": started,
        "tags-seen": len(tags),
        "published": published,
        "skipped-tags": reported[:MAX_REPORTED_TAGS],
    }
    status = None
    if not found and not existing:
        prefix = repo.get("tag-prefix")
        report["status"] = SyncStatus.NO_VERSION_TAGS
        report["error"] = (
            f"no tag of {repo['identifier']} is a version: tags must be "
            f"{prefix or ''}v1.2.3 or {prefix or ''}1.2.3 (SemVer, optional v prefix)"
        )
        status = ModuleStatus.NO_VERSION_TAGS
    elif module.status in (ModuleStatus.NO_VERSION_TAGS, ModuleStatus.SETUP_FAILED):
        status = ModuleStatus.PENDING
    meta = {
        "status": report["status"],
        "tags-seen": len(tags),
        "published": published,
        "skipped-tags": len(reported),
    }
    synced = audit_events.of_module(None, module, audit_events.SYNCED, meta)
    if not record_sync(module, report, synced, status=status):
        return "gone"
    log.info("sync of %s: published %s, skipped %d", module.id, published, len(reported))
    return f"synced {len(published)}"


def _sync_failed(module: ModuleModel, error: str, started: str) -> str:
    report = {"status": SyncStatus.FAILED, "error": error, "synced-at": started}
    # Only a module with nothing published fails as a whole; published versions stay usable.
    published = module.statuses()
    status = None if published else ModuleStatus.SETUP_FAILED
    failed = audit_events.of_module(
        None, module, audit_events.SYNC_FAILED, {"error": error}, outcome=audit_events.FAILED
    )
    record_sync(module, report, failed, status=status)
    log.info("sync of %s failed: %s", module.id, error)
    return "failed"


def fetch_version(module_id: str, version: str, version_id: str) -> str:
    """Pack the version's commit into its upload key; the S3 event does the rest."""
    module = find_module(module_id)
    if module is None or not module.vcs_repo:
        return "gone"
    try:
        item = store.find_version(module_id, semver.parse(version).order_key)
    except semver.InvalidVersion:
        return "gone"
    if item is None or item.id != version_id:
        return "gone"
    if item.status in (VersionStatus.OK, VersionStatus.INGRESSING):
        return f"already {item.status}"
    repo = module.vcs_repo
    if not service.mark_version(item, VersionStatus.CLONING):
        return "gone"
    settings = get_settings()
    try:
        connection, url = repository(module)
        sha = item.commit_sha or git.branch_head(
            url, connection.token, repo["branch"], username=connection.username
        )
        data = git.archive_commit(
            url,
            connection.token,
            sha,
            subdirectory=repo.get("source-directory"),
            username=connection.username,
            max_pack_bytes=settings.max_unpacked_bytes,
            max_archive_bytes=settings.max_unpacked_bytes,
        )
    except Unprocessable:
        return _fetch_failed(item, _connection_gone(repo), item.commit_sha)
    except (git.GitError, git.IdentifierError) as exc:
        return _fetch_failed(item, str(exc), item.commit_sha)
    if len(data) > settings.max_archive_bytes:
        error = (
            f"the packed files of commit {sha[:12]} are {len(data)} bytes, over the limit of "
            f"{settings.max_archive_bytes} bytes"
        )
        return _fetch_failed(item, error, sha)
    if item.commit_sha != sha:
        service.mark_version(item, VersionStatus.CLONING, commit_sha=sha)
    objects.put(item.upload_key, data, "application/x-gzip")
    return "fetched"


def _fetch_failed(item: ModuleVersionModel, error: str, commit_sha: str | None) -> str:
    """The version ``clone_failed`` with its reason, recorded (``fetch-failed``)."""
    meta = {**audit_events.uploader(item), "reason": error}
    failed = audit_events.of_version(
        None, item, audit_events.FETCH_FAILED, meta, outcome=audit_events.FAILED
    )
    service.mark_version(item, CLONE_FAILED, error=error, event=failed, commit_sha=commit_sha)
    return CLONE_FAILED
