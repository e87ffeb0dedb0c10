"""Publishing modules from VCS repositories: tag-based and branch-based.

A VCS-backed module records its repository in ``vcs_repo`` (the response's ``vcs-repo``
keys), a webhook id and a KMS-sealed webhook secret. Nothing talks to the VCS host during a
request: the work runs as jobs on the ingest queue (``chalicelib.registry.jobs``).

* Tag-based: ``sync_tags`` lists the repository's tags; every ``[tag-prefix][v]<semver>``
  tag without a version yet becomes a pending version (source = the service provider) and a
  ``vcs-fetch`` job. The module's ``vcs-sync`` report says what was published, which tags
  were skipped and why, or why the sync failed.
* Branch-based: versions are created through the create-version endpoint; the fetch job
  takes the branch head (or the given ``commit-sha``).
* ``fetch_version`` packs the commit (or its ``source-directory``) and puts it at the
  version's upload key; the S3 event then runs the same ingest as an uploaded archive.
* Webhooks: ``register_webhook`` adds the module's webhook at the VCS host (``vcs.hooks``)
  and records the outcome; ``receive_webhook`` verifies a delivery (``registry.webhooks``)
  and queues a tag sync when it is about tags.

Statuses: module ``pending`` -> ``setup_complete`` with the first ok version, or
``no_version_tags`` / ``setup_failed`` when a sync finds nothing / cannot read the
repository; version ``pending`` -> ``cloning`` -> ``reg_ingressing`` -> ``ok``, or
``clone_failed`` / ``reg_ingress_failed`` with the reason in ``error``.
Published versions never change: a tag moved to another commit is reported, not re-published.
"""

from __future__ import annotations

import logging
import re
import secrets as random
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pynamodb.exceptions import UpdateError

from chalicelib.accounts import service as accounts
from chalicelib.core import db, secrets
from chalicelib.core.auth import Principal
from chalicelib.core.aws import client
from chalicelib.core.errors import BadGateway, NotFound, Unauthorized, Unprocessable
from chalicelib.core.ids import iso, new_id, now
from chalicelib.core.settings import get_settings
from chalicelib.registry import jobs, render, semver, service, webhooks
from chalicelib.registry.store import ModuleModel, ModuleVersionModel, module_key
from chalicelib.registry.vcs_schemas import PublishAttributes, VcsRepoAttributes
from chalicelib.vcs import git, hooks
from chalicelib.vcs import service as vcs

log = logging.getLogger("registry.publishing")

POINTER = "/data/attributes/vcs-repo/"
WEBHOOK_SECRET_PURPOSE = "registry/webhook-secret"
REPOSITORY_NAME = re.compile(r"^terraform-([0-9a-z]+)-(.+)$")
# git check-ref-format, roughly: no whitespace, control or special characters, no "..",
# no leading "-" or "/", no trailing "/", "." or ".lock".
BRANCH = re.compile(r"^(?![-/])(?!.*\.\.)(?!.*//)(?!.*@\{)[^\s~^:?*\[\\\x00-\x1f\x7f]+(?<![/.])$")
COMMIT_SHA = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")
MAX_BRANCH = 255
MAX_TAG_PREFIX = 128
MAX_REPORTED_TAGS = 50
# New versions one sync job creates (one transaction each); a follow-up job does the rest.
MAX_VERSIONS_PER_SYNC = 200
NOT_DONE = ("pending", "cloning", "clone_failed", "reg_ingress_req_failed", "reg_ingress_failed")
GITHUB_APP_UNAVAILABLE = (
    "publishing through a GitHub App installation needs a GitHub App configured for this "
    "instance, and none is: connect the repository with an OAuth client and send its "
    "oauth-token-id instead"
)


# ----- validation ---------------------------------------------------------------------------


def _branch(value: str | None) -> str:
    """A branch name, or "" for none."""
    if not value:
        return ""
    if len(value) > MAX_BRANCH or not BRANCH.match(value) or value.endswith(".lock"):
        raise Unprocessable(f"{value!r} is not a valid branch name", pointer=POINTER + "branch")
    return value


def _tag_prefix(value: str | None) -> str | None:
    if not value:
        return None
    if len(value) > MAX_TAG_PREFIX or any(c.isspace() for c in value) or value.startswith("-"):
        raise Unprocessable(
            f"tag-prefix must be at most {MAX_TAG_PREFIX} characters without spaces, "
            "for example 'net/' for tags like net/v1.2.0",
            pointer=POINTER + "tag-prefix",
        )
    return value


def _source_directory(value: str | None) -> str | None:
    try:
        return git.clean_subdirectory(value) or None
    except git.GitError as exc:
        raise Unprocessable(
            f"{exc}: give a path inside the repository, like modules/net",
            pointer=POINTER + "source-directory",
        ) from None


def _connection_fields(organization: str, token_id: str, identifier: str) -> dict[str, Any]:
    """Validate the connection and identifier; the ``vcs-repo`` fields they determine."""
    connection = vcs.resolve_connection(organization, token_id, unseal=False)
    try:
        url = connection.repository_url(identifier)
    except git.IdentifierError as exc:
        raise Unprocessable(str(exc), pointer=POINTER + "identifier") from None
    return {
        "identifier": identifier,
        "oauth-token-id": connection.token_id,
        "service-provider": connection.client.service_provider,
        "repository-http-url": url.removesuffix(".git"),
    }


def names_from_identifier(identifier: str) -> tuple[str, str] | None:
    """(name, provider) from a ``terraform-<provider>-<name>`` repository name."""
    match = REPOSITORY_NAME.match(identifier.rsplit("/", 1)[-1])
    return (match.group(2), match.group(1)) if match else None


def _names(attrs: PublishAttributes, identifier: str) -> tuple[str, str]:
    derived = names_from_identifier(identifier)
    name = attrs.name or (derived[0] if derived else None)
    provider = attrs.provider or (derived[1] if derived else None)
    if not name or not provider:
        missing = "name" if not name else "provider"
        raise Unprocessable(
            f"the repository name {identifier.rsplit('/', 1)[-1]!r} does not follow "
            "terraform-<provider>-<name>: give name and provider explicitly",
            pointer=f"/data/attributes/{missing}",
        )
    return service.validate_name(name, "name"), service.validate_provider(provider)


def _check_credentials(repo: VcsRepoAttributes) -> str:
    """The oauth-token-id; GitHub App installations are refused with the reason."""
    if repo.github_app_installation_id and repo.oauth_token_id:
        raise Unprocessable(
            "oauth-token-id and github-app-installation-id cannot be combined",
            pointer=POINTER + "github-app-installation-id",
        )
    if repo.github_app_installation_id:
        raise Unprocessable(GITHUB_APP_UNAVAILABLE, pointer=POINTER + "github-app-installation-id")
    if not repo.oauth_token_id:
        raise Unprocessable("oauth-token-id is required", pointer=POINTER + "oauth-token-id")
    return repo.oauth_token_id


# ----- publishing ---------------------------------------------------------------------------


def publish(
    principal: Principal, organization: str | None, attrs: PublishAttributes, base_url: str
) -> tuple[ModuleModel, accounts.OrgAccess, str]:
    """Create a VCS-backed module and queue its first sync and the webhook's registration at
    the VCS host; returns the webhook secret too (shown once). ``organization`` is None on
    the deprecated path: the token names it. ``base_url`` is where the VCS host will send
    deliveries (the request's, unless the instance address is configured)."""
    repo = attrs.vcs_repo
    if repo is None:
        raise Unprocessable("vcs-repo is required", pointer="/data/attributes/vcs-repo")
    token_id = _check_credentials(repo)
    if not repo.identifier:
        raise Unprocessable("identifier is required", pointer=POINTER + "identifier")
    if organization is None:
        organization = repo.organization_name or vcs.token_organization(token_id)
    rights = accounts.organization_access(principal, organization)
    service.require_rights(rights, "publishing a module")
    fields = _connection_fields(organization, token_id, repo.identifier)
    branch = _branch(repo.branch)
    if branch and repo.tags:
        raise Unprocessable(
            "branch and tags cannot be combined: give a branch for branch-based publishing, "
            "or tags: true (and no branch) for tag-based",
            pointer=POINTER + "tags",
        )
    tag_prefix = _tag_prefix(repo.tag_prefix)
    source_directory = _source_directory(repo.source_directory)
    name, provider = _names(attrs, repo.identifier)
    if attrs.initial_version is not None:
        if not branch:
            raise Unprocessable(
                "initial-version is for branch-based modules; tag-based modules get their "
                "versions from tags",
                pointer="/data/attributes/initial-version",
            )
        if not semver.is_valid(attrs.initial_version):
            raise Unprocessable(
                f"{attrs.initial_version!r} is not a valid semantic version",
                pointer="/data/attributes/initial-version",
            )
    tests = attrs.test_config.tests_enabled if attrs.test_config else None
    if tests and not branch:
        raise Unprocessable(
            "tests run on branch-based modules: give vcs-repo.branch to enable them",
            pointer="/data/attributes/test-config/tests-enabled",
        )

    webhook_secret = random.token_urlsafe(32)
    webhook_id = str(uuid.uuid4())
    moment = now()
    module = ModuleModel(
        organization,
        module_key("private", organization, name, provider),
        id=new_id("mod"),
        registry_name="private",
        namespace=organization,
        name=name,
        provider=provider,
        status="pending",
        publishing_mechanism="branch" if branch else "git_tag",
        no_code=bool(attrs.no_code),
        test_config=(
            {"id": new_id("tc"), "tests-enabled": bool(tests)} if tests is not None else None
        ),
        vcs_repo={
            **fields,
            "display-identifier": repo.display_identifier or repo.identifier,
            "branch": branch,
            "tags": not branch,
            "tag-prefix": tag_prefix,
            "source-directory": source_directory,
            # TFE's default; git submodules are not fetched yet (see README).
            "ingress-submodules": repo.ingress_submodules is not False,
        },
        webhook_id=webhook_id,
        webhook_secret=secrets.seal(webhook_secret, purpose=WEBHOOK_SECRET_PURPOSE),
        webhook_registration={"status": "pending", "url": render.webhook_url(base_url, webhook_id)},
        vcs_sync=None if branch else {"status": "queued"},
        created_at=moment,
        updated_at=moment,
    )
    service.save_new_module(module)
    jobs.enqueue(jobs.HOOK, module_id=module.id)
    if not branch:
        jobs.enqueue(jobs.SYNC, module_id=module.id)
    elif attrs.initial_version:
        create_branch_version(module, attrs.initial_version, None)
        module.refresh()
    return module, rights, webhook_secret


def create_branch_version(
    module: ModuleModel, version: str, commit_sha: str | None
) -> ModuleVersionModel:
    """A version of a branch-based module from the branch head (or ``commit_sha``)."""
    repo = module.vcs_repo or {}
    if not repo.get("branch"):
        raise Unprocessable(
            "versions of a tag-based module come from its repository's tags: push a tag, "
            "or switch the module to branch-based publishing",
            pointer="/data/attributes/version",
        )
    if commit_sha and not COMMIT_SHA.match(commit_sha):
        raise Unprocessable(
            "commit-sha must be a full commit sha (40 hex characters)",
            pointer="/data/attributes/commit-sha",
        )
    item = service.insert_version(
        module, version, commit_sha=commit_sha or None, source=repo["service-provider"]
    )
    jobs.enqueue(jobs.FETCH, module_id=module.id, version=item.version, version_id=item.id)
    return item


@dataclass
class VcsUpdate:
    """What a PATCH's ``vcs-repo`` changes: the item updates, then the jobs to queue."""

    actions: list[Any]
    sync: bool = False
    # The webhook registered at the previous repository/connection, to move to the new one.
    rehook: dict[str, Any] | None = None

    def queue_jobs(self, module: ModuleModel) -> None:
        if self.rehook is not None:
            jobs.enqueue(jobs.HOOK, module_id=module.id, previous=self.rehook or None)
        if self.sync:
            queue_sync(module)


def plan_update(module: ModuleModel, repo: VcsRepoAttributes) -> VcsUpdate:
    """Validate a PATCH's ``vcs-repo`` against the module; nothing is written here."""
    if not module.vcs_repo:
        raise Unprocessable(
            "this module is not backed by a VCS repository; its versions are uploaded",
            pointer="/data/attributes/vcs-repo",
        )
    given = repo.model_fields_set
    current: dict[str, Any] = dict(module.vcs_repo)
    updated = dict(current)
    if repo.branch and repo.tags:
        raise Unprocessable(
            "branch and tags cannot be used together: a branch switches to branch-based "
            "publishing, tags: true to tag-based",
            pointer=POINTER + "tags",
        )
    if repo.branch:
        updated.update(branch=_branch(repo.branch), tags=False)
    elif repo.tags or ("branch" in given and repo.branch == ""):
        updated.update(branch="", tags=True)
    elif repo.tags is False and not current["branch"]:
        raise Unprocessable(
            "to stop tag-based publishing, give the branch to publish from",
            pointer=POINTER + "branch",
        )
    if repo.github_app_installation_id:
        raise Unprocessable(GITHUB_APP_UNAVAILABLE, pointer=POINTER + "github-app-installation-id")
    if "tag_prefix" in given:
        updated["tag-prefix"] = _tag_prefix(repo.tag_prefix)
    if "source_directory" in given:
        updated["source-directory"] = _source_directory(repo.source_directory)
    if repo.display_identifier:
        updated["display-identifier"] = repo.display_identifier
    if repo.ingress_submodules is not None:
        updated["ingress-submodules"] = repo.ingress_submodules
    if repo.identifier or repo.oauth_token_id:
        updated.update(
            _connection_fields(
                module.organization,
                repo.oauth_token_id or current["oauth-token-id"],
                repo.identifier or current["identifier"],
            )
        )
    tag_based = not updated["branch"]
    plan = VcsUpdate(
        [
            ModuleModel.vcs_repo.set(updated),
            ModuleModel.publishing_mechanism.set("git_tag" if tag_based else "branch"),
        ],
        sync=tag_based and updated != current,
    )
    if plan.sync:
        plan.actions.append(ModuleModel.vcs_sync.set({"status": "queued"}))
    moved = any(updated[k] != current[k] for k in ("identifier", "oauth-token-id"))
    if moved:
        plan.rehook = _registered_hook(module) or {}
        registration = {**(module.webhook_registration or {}), "status": "pending"}
        registration.pop("hook-id", None)
        plan.actions.append(ModuleModel.webhook_registration.set(registration))
    return plan


def _registered_hook(module: ModuleModel) -> dict[str, Any] | None:
    """Where the module's webhook is registered now: enough to remove it later."""
    hook_id = (module.webhook_registration or {}).get("hook-id")
    if not hook_id or not module.vcs_repo:
        return None
    return {
        "identifier": module.vcs_repo["identifier"],
        "oauth-token-id": module.vcs_repo["oauth-token-id"],
        "hook-id": hook_id,
    }


def queue_sync(module: ModuleModel) -> None:
    jobs.enqueue(jobs.SYNC, module_id=module.id)


# ----- actions ------------------------------------------------------------------------------


def _vcs_module(
    principal: Principal, module_id: str, what: str
) -> tuple[ModuleModel, accounts.OrgAccess]:
    module, rights = service.get_module_by_id(principal, module_id)
    service.require_rights(rights, what)
    if not module.vcs_repo:
        raise Unprocessable(f"{what}: this module is not backed by a VCS repository")
    return module, rights


def resync(principal: Principal, module_id: str) -> tuple[ModuleModel, accounts.OrgAccess]:
    """Read the repository's tags again and publish the new ones."""
    module, rights = _vcs_module(principal, module_id, "resyncing a module")
    if module.vcs_repo.get("branch"):
        raise Unprocessable(
            "resync reads tags, and this module is branch-based: create versions instead"
        )
    _record_sync(module, {"status": "queued"})
    queue_sync(module)
    module.refresh()
    return module, rights


def retry(principal: Principal, module_id: str) -> tuple[ModuleModel, accounts.OrgAccess]:
    """Run every version that is not ok again: fetch it again for a VCS module (and redo a
    failed sync or webhook registration), ingest its uploaded archive again otherwise."""
    module, rights = service.get_module_by_id(principal, module_id)
    service.require_rights(rights, "retrying a module")
    if module.registry_name != "private":
        raise Unprocessable("public modules have no versions to retry")
    if not module.vcs_repo:
        service.requeue_uploads(module)
        return module, rights
    fetches = [
        {"module_id": module.id, "version": version.version, "version_id": version.id}
        for version in service.list_versions(module)
        if version.status in NOT_DONE and service.mark_version(version, "pending")
    ]
    jobs.enqueue_many(jobs.FETCH, fetches)
    if not module.vcs_repo.get("branch") and (module.vcs_sync or {}).get("status") == "failed":
        _record_sync(module, {"status": "queued"})
        queue_sync(module)
    if (module.webhook_registration or {}).get("status") == "failed":
        jobs.enqueue(jobs.HOOK, module_id=module.id)
    module.refresh()
    return module, rights


def regenerate_webhook_secret(
    principal: Principal, module_id: str, base_url: str
) -> tuple[ModuleModel, str]:
    """A new secret; the webhook at the VCS host is replaced with one that uses it."""
    module, _ = _vcs_module(principal, module_id, "regenerating a webhook secret")
    secret = random.token_urlsafe(32)
    registration = {
        **(module.webhook_registration or {}),
        "status": "pending",
        "url": render.webhook_url(base_url, module.webhook_id),
    }
    module.update(
        actions=[
            ModuleModel.webhook_secret.set(secrets.seal(secret, purpose=WEBHOOK_SECRET_PURPOSE)),
            ModuleModel.webhook_registration.set(registration),
            ModuleModel.updated_at.set(now()),
        ],
        condition=ModuleModel.id == module.id,
    )
    jobs.enqueue(jobs.HOOK, module_id=module.id)
    return module, secret


def commit_url(repo: dict[str, Any], sha: str) -> str:
    """Where the VCS host shows a commit."""
    base = repo["repository-http-url"]
    provider = repo["service-provider"]
    if provider.startswith("gitlab"):
        return f"{base}/-/commit/{sha}"
    if provider.startswith("bitbucket"):
        return f"{base}/commits/{sha}"
    return f"{base}/commit/{sha}"


def list_commits(principal: Principal, ref: service.ModuleRef) -> list[dict[str, Any]]:
    """The newest 20 commits of the module's branch (the default branch for tag-based
    modules), read from the VCS host now: no pagination, as in TFE."""
    module, _ = service.get_module(principal, ref)
    repo = module.vcs_repo
    if not repo:
        # go-tfe expects "not found" for a module without a VCS connection.
        raise NotFound("this module is not backed by a VCS repository: it has no commits")
    connection = vcs.resolve_connection(module.organization, repo["oauth-token-id"])
    try:
        url = connection.repository_url(repo["identifier"])
        commits = git.recent_commits(
            url, connection.token, repo.get("branch") or None, username=connection.username
        )
    except (git.GitError, git.IdentifierError) as exc:
        raise BadGateway(f"could not read the repository's commits: {exc}") from None
    return [
        {
            "sha": c.sha,
            "date": iso(datetime.fromtimestamp(c.date, UTC)),
            "url": commit_url(repo, c.sha),
            "author": c.author,
            "author-avatar-url": None,
            "author-html-url": None,
            "message": c.message,
        }
        for c in commits
    ]


# ----- jobs ---------------------------------------------------------------------------------


def _module(module_id: str) -> ModuleModel | None:
    found = next(iter(ModuleModel.by_id.query(module_id)), None)
    if found is None:
        return None
    try:
        return ModuleModel.get(found.organization, found.key, consistent_read=True)
    except ModuleModel.DoesNotExist:
        return None


def _record_sync(module: ModuleModel, report: dict[str, Any], *, status: str | None = None) -> bool:
    """Store the sync report (and move the module status from ``pending``-like states
    only: a concurrent first ok version's ``setup_complete`` is never overwritten)."""
    try:
        module.update(
            actions=[ModuleModel.vcs_sync.set(report), ModuleModel.updated_at.set(now())],
            condition=ModuleModel.id == module.id,
        )
    except UpdateError as exc:
        if db.conditional_failure(exc):
            return False
        raise
    if status:
        try:
            module.update(
                actions=[ModuleModel.status.set(status)],
                condition=(ModuleModel.id == module.id)
                & ModuleModel.status.is_in("pending", "no_version_tags", "setup_failed"),
            )
        except UpdateError as exc:
            if not db.conditional_failure(exc):
                raise
    return True


def sync_tags(module_id: str) -> str:
    module = _module(module_id)
    if module is None:
        return "gone"
    repo = module.vcs_repo
    if not repo or repo.get("branch"):
        return "not-tag-based"
    started = iso(now())
    try:
        connection = vcs.resolve_connection(module.organization, repo["oauth-token-id"])
        url = connection.repository_url(repo["identifier"])
        tags = git.list_tags(url, connection.token, username=connection.username)
    except Unprocessable:
        return _sync_failed(
            module,
            f"the VCS connection {repo['oauth-token-id']} no longer exists: update the "
            "module's oauth-token-id",
            started,
        )
    except (git.GitError, git.IdentifierError) as exc:
        return _sync_failed(module, f"could not read the repository's tags: {exc}", started)

    found, skipped = git.semver_tags(tags, repo.get("tag-prefix"))
    existing = {v.version: v for v in service.list_versions(module)}
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
            item = service.insert_version(
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
    jobs.enqueue_many(jobs.FETCH, fetches)
    if more:
        queue_sync(module)

    report: dict[str, Any] = {
        "status": "continuing" if more else "synced",
        "error": None,
        "synced-at": started,
        "tags-seen": len(tags),
        "published": published,
        "skipped-tags": reported[:MAX_REPORTED_TAGS],
    }
    status = None
    if not found and not existing:
        prefix = repo.get("tag-prefix")
        report["status"] = "no_version_tags"
        report["error"] = (
            f"no tag of {repo['identifier']} is a version: tags must be "
            f"{prefix or ''}v1.2.3 or {prefix or ''}1.2.3 (SemVer, optional v prefix)"
        )
        status = "no_version_tags"
    elif module.status in ("no_version_tags", "setup_failed"):
        status = "pending"
    if not _record_sync(module, report, status=status):
        return "gone"
    log.info("sync of %s: published %s, skipped %d", module.id, published, len(reported))
    return f"synced {len(published)}"


def _sync_failed(module: ModuleModel, error: str, started: str) -> str:
    report = {"status": "failed", "error": error, "synced-at": started}
    # Only a module with nothing published fails as a whole; published versions stay usable.
    published = module.version_statuses.as_dict() if module.version_statuses else {}
    status = None if published else "setup_failed"
    _record_sync(module, report, status=status)
    log.info("sync of %s failed: %s", module.id, error)
    return "failed"


def fetch_version(module_id: str, version: str, version_id: str) -> str:
    """Pack the version's commit into its upload key; the S3 event does the rest."""
    module = _module(module_id)
    if module is None or not module.vcs_repo:
        return "gone"
    try:
        item = ModuleVersionModel.get(module_id, semver.parse(version).order_key)
    except (semver.InvalidVersion, ModuleVersionModel.DoesNotExist):
        return "gone"
    if item.id != version_id:
        return "gone"
    if item.status in (service.DONE, "reg_ingressing"):
        return f"already {item.status}"
    repo = module.vcs_repo
    if not service.mark_version(item, "cloning"):
        return "gone"
    settings = get_settings()
    try:
        connection = vcs.resolve_connection(module.organization, repo["oauth-token-id"])
        url = connection.repository_url(repo["identifier"])
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
        error = f"the VCS connection {repo['oauth-token-id']} no longer exists"
        service.mark_version(item, "clone_failed", error=error, commit_sha=item.commit_sha)
        return "clone_failed"
    except (git.GitError, git.IdentifierError) as exc:
        service.mark_version(item, "clone_failed", error=str(exc), commit_sha=item.commit_sha)
        return "clone_failed"
    if len(data) > settings.max_archive_bytes:
        error = (
            f"the packed files of commit {sha[:12]} are {len(data)} bytes, over the limit of "
            f"{settings.max_archive_bytes} bytes"
        )
        service.mark_version(item, "clone_failed", error=error, commit_sha=sha)
        return "clone_failed"
    if item.commit_sha != sha:
        service.mark_version(item, "cloning", commit_sha=sha)
    client("s3").put_object(
        Bucket=settings.bucket, Key=item.upload_key, Body=data, ContentType="application/x-gzip"
    )
    return "fetched"


# ----- webhooks -----------------------------------------------------------------------------


def register_webhook(module_id: str, previous: dict[str, Any] | None) -> str:
    """Add the module's webhook at the VCS host, first removing ``previous`` (or the hook
    registered before); the outcome is recorded in ``webhook_registration``."""
    module = _module(module_id)
    if module is None or not module.vcs_repo:
        return "gone"  # deleting a module queues the removal of its webhook itself
    old = previous or _registered_hook(module)
    if old:
        remove_webhook(module.organization, old)
    registration = dict(module.webhook_registration or {})
    registration.pop("hook-id", None)
    repo = module.vcs_repo
    try:
        connection = vcs.resolve_connection(module.organization, repo["oauth-token-id"])
        secret = secrets.unseal(module.webhook_secret, purpose=WEBHOOK_SECRET_PURPOSE)
        hook_id = hooks.register(
            connection.client.service_provider,
            connection.client.api_url,
            connection.token,
            repo["identifier"],
            registration["url"],
            secret,
        )
        registration.update(status="registered", detail=None, **{"hook-id": hook_id})
    except hooks.ManualSetup as exc:
        registration.update(status="manual", detail=str(exc))
    except hooks.HookError as exc:
        registration.update(status="failed", detail=f"adding the webhook failed: {exc}")
    except Unprocessable:
        registration.update(status="failed", detail="the module's VCS connection is gone")
    try:
        module.update(
            actions=[ModuleModel.webhook_registration.set(registration)],
            condition=ModuleModel.id == module.id,
        )
    except UpdateError as exc:
        if not db.conditional_failure(exc):
            raise
        module.webhook_registration = registration
        added = _registered_hook(module)
        if added:  # the module was deleted meanwhile: take the new hook away again
            remove_webhook(module.organization, added)
        return "gone"
    return registration["status"]


def remove_webhook(organization: str, previous: dict[str, Any]) -> str:
    """Best effort: a webhook left behind only delivers to a URL that answers 404."""
    try:
        connection = vcs.resolve_connection(organization, previous["oauth-token-id"])
        hooks.unregister(
            connection.client.service_provider,
            connection.client.api_url,
            connection.token,
            previous["identifier"],
            previous["hook-id"],
        )
    except (hooks.HookError, Unprocessable) as exc:
        log.info("could not remove webhook %s: %s", previous.get("hook-id"), exc)
        return "left"
    return "removed"


def unhook_on_delete(module: ModuleModel) -> None:
    """Queue the removal of a deleted module's webhook at the VCS host."""
    previous = _registered_hook(module)
    if previous:
        jobs.enqueue(jobs.UNHOOK, organization=module.organization, previous=previous)


def receive_webhook(webhook_id: str, headers: Any, body: bytes) -> tuple[int, dict[str, str]]:
    """Verify a VCS host's delivery and queue a tag sync when it is about tags."""
    module = next(iter(ModuleModel.by_webhook.query(webhook_id)), None)
    if module is None or not module.webhook_secret or not module.vcs_repo:
        raise NotFound(f"webhook {webhook_id} not found")
    provider = module.vcs_repo["service-provider"]
    secret = secrets.unseal(module.webhook_secret, purpose=WEBHOOK_SECRET_PURPOSE)
    if not webhooks.verify(provider, secret, headers, body):
        raise Unauthorized(
            "the webhook delivery is not signed with this module's secret "
            f"({webhooks.SCHEMES.get(provider, provider)})",
            title="unauthorized",
        )
    event = webhooks.classify(provider, headers, body)
    if event.kind == webhooks.PING:
        return 200, {"status": "ok", "detail": "webhook verified"}
    if event.kind != webhooks.TAGS:
        return 200, {"status": "ignored", "detail": event.detail}
    if module.vcs_repo.get("branch"):
        return 200, {
            "status": "ignored",
            "detail": "branch-based module: versions are created through the API",
        }
    _record_sync(module, {"status": "queued"})
    queue_sync(module)
    return 202, {"status": "accepted", "detail": f"tag sync queued ({event.detail})"}
