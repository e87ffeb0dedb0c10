"""Publishing modules from VCS repositories, as the API offers it: publish, branch versions,
PATCH of ``vcs-repo``, resync, retry, a new webhook secret, the repository's commits.

A VCS-backed module records its repository in ``vcs_repo`` (the response's ``vcs-repo``
keys), a webhook id and a KMS-sealed webhook secret. Nothing but the commits list talks to
the VCS host during a request: the work runs as jobs on the ingest queue
(``registry.queue``, run by ``worker``): ``sync`` syncs tags and fetches versions, ``hooks``
manages the webhook at the host and receives its deliveries.

* Tag-based: every ``[tag-prefix][v]<semver>`` tag becomes a version.
* Branch-based: versions are created through the create-version endpoint; the fetch job
  takes the branch head (or the given ``commit-sha``).

Statuses: module ``pending`` -> ``setup_complete`` with the first ok version, or
``no_version_tags`` / ``setup_failed`` when a sync finds nothing / cannot read the
repository; version ``pending`` -> ``cloning`` -> ``reg_ingressing`` -> ``ok``, or
``clone_failed`` / ``reg_ingress_failed`` with the reason in ``error``.
Published versions never change: a tag moved to another commit is reported, not re-published.
"""

from __future__ import annotations

import re
import secrets as random
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from chalicelib.accounts import authorization
from chalicelib.artifacts import queue, semver
from chalicelib.artifacts.statuses import VersionStatus
from chalicelib.core import secrets
from chalicelib.core.api.errors import BadGateway, NotFound, Unprocessable
from chalicelib.core.api.links import link_base_url
from chalicelib.core.audit import trail
from chalicelib.core.auth import Principal
from chalicelib.core.data.ids import iso, new_id, now
from chalicelib.modules import render, service, versions, writes
from chalicelib.modules.audit import events as audit_events
from chalicelib.modules.publishing.hooks import WEBHOOK_SECRET_PURPOSE, registered_hook
from chalicelib.modules.publishing.sync import queue_sync, repository, request_sync
from chalicelib.modules.statuses import (
    RETRYABLE,
    HookStatus,
    ModuleStatus,
    SyncStatus,
)
from chalicelib.modules.store import ModuleModel, ModuleVersionModel, module_key
from chalicelib.vcs import git, providers
from chalicelib.vcs import service as vcs

if TYPE_CHECKING:
    from chalicelib.modules.publishing.schemas import PublishAttributes, VcsRepoAttributes

POINTER = "/data/attributes/vcs-repo/"
REPOSITORY_NAME = re.compile(r"^terraform-([0-9a-z]+)-(.+)\Z")
# git check-ref-format, roughly: no whitespace, control or special characters, no "..",
# no leading "-" or "/", no trailing "/", "." or ".lock".
BRANCH = re.compile(r"^(?![-/])(?!.*\.\.)(?!.*//)(?!.*@\{)[^\s~^:?*\[\\\x00-\x1f\x7f]+(?<![/.])\Z")
COMMIT_SHA = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})\Z")
MAX_BRANCH = 255
MAX_TAG_PREFIX = 128
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
    principal: Principal, organization: str | None, attrs: PublishAttributes
) -> tuple[ModuleModel, authorization.OrgAccess, str]:
    """Create a VCS-backed module and queue its first sync and the webhook's registration at
    the VCS host; returns the webhook secret too (shown once). ``organization`` is None on
    the deprecated path: the token names it. The VCS host sends deliveries to the configured
    public address (``link_base_url``), never to the request's host: without one, 503."""
    repo = attrs.vcs_repo
    if repo is None:
        raise Unprocessable("vcs-repo is required", pointer="/data/attributes/vcs-repo")
    token_id = _check_credentials(repo)
    if not repo.identifier:
        raise Unprocessable("identifier is required", pointer=POINTER + "identifier")
    if organization is None:
        organization = repo.organization_name or vcs.token_organization(principal, token_id)
    rights = authorization.organization_access(principal, organization)
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

    base_url = link_base_url("VCS webhook URLs")
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
        status=ModuleStatus.PENDING,
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
        webhook_registration={
            "status": HookStatus.PENDING,
            "url": render.webhook_url(base_url, webhook_id),
        },
        vcs_sync=None if branch else {"status": SyncStatus.QUEUED},
        created_at=moment,
        updated_at=moment,
    )
    meta = {
        "vcs-repo": repo.identifier,
        "service-provider": fields["service-provider"],
        "publishing-mechanism": module.publishing_mechanism,
        "no-code": module.no_code,
    }
    service.save_new_module(principal, module, meta=meta)
    queue.enqueue(queue.HOOK, module_id=module.id)
    if not branch:
        queue.enqueue(queue.SYNC, module_id=module.id)
    elif attrs.initial_version:
        create_branch_version(principal, module, attrs.initial_version, None)
        module.refresh()
    return module, rights, webhook_secret


def create_branch_version(
    principal: Principal, module: ModuleModel, version: str, commit_sha: str | None
) -> ModuleVersionModel:
    """A version of a branch-based module from the branch head (or ``commit_sha``), created
    by ``principal`` (recorded)."""
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
    creator = {"type": principal.kind, "id": principal.id}
    item = versions.insert_version(
        principal,
        module,
        version,
        commit_sha=commit_sha or None,
        source=repo["service-provider"],
        created_by=creator,
    )
    queue.enqueue(queue.FETCH, module_id=module.id, version=item.version, version_id=item.id)
    return item


@dataclass
class VcsUpdate:
    """What a PATCH's ``vcs-repo`` changes: the item updates, then the jobs to queue."""

    actions: list[Any]
    vcs_repo: dict[str, Any]
    sync: bool = False
    # The repository or connection changed: add the webhook there, after removing the one
    # registered at the old place (``previous``, when there is one).
    rehook: bool = False
    previous: dict[str, Any] | None = None

    def queue_jobs(self, module: ModuleModel) -> None:
        if self.rehook:
            queue.enqueue(queue.HOOK, module_id=module.id, previous=self.previous)
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
        updated,
        sync=tag_based and updated != current,
    )
    if plan.sync:
        plan.actions.append(ModuleModel.vcs_sync.set({"status": SyncStatus.QUEUED}))
    moved = any(updated[k] != current[k] for k in ("identifier", "oauth-token-id"))
    if moved:
        plan.rehook, plan.previous = True, registered_hook(module)
        registration = {**(module.webhook_registration or {}), "status": HookStatus.PENDING}
        registration.pop("hook-id", None)
        plan.actions.append(ModuleModel.webhook_registration.set(registration))
    return plan


# ----- actions ------------------------------------------------------------------------------


def _vcs_module(
    principal: Principal, module_id: str, what: str
) -> tuple[ModuleModel, authorization.OrgAccess]:
    module, rights = service.get_module_by_id(principal, module_id)
    service.require_rights(rights, what)
    if not module.vcs_repo:
        raise Unprocessable(f"{what}: this module is not backed by a VCS repository")
    return module, rights


def resync(principal: Principal, module_id: str) -> tuple[ModuleModel, authorization.OrgAccess]:
    """Read the repository's tags again and publish the new ones."""
    module, rights = _vcs_module(principal, module_id, "resyncing a module")
    if module.vcs_repo.get("branch"):
        raise Unprocessable(
            "resync reads tags, and this module is branch-based: create versions instead"
        )
    request_sync(module, audit_events.of_module(principal, module, audit_events.SYNC_REQUESTED))
    module.refresh()
    return module, rights


def retry(principal: Principal, module_id: str) -> tuple[ModuleModel, authorization.OrgAccess]:
    """Run every version that is not ok again: fetch it again for a VCS module (and redo a
    failed sync or webhook registration), ingest its uploaded archive again otherwise; an
    accepted version without a scan gets its scan."""
    from chalicelib.modules.scanning.backfill import request_scans_of

    module, rights = service.get_module_by_id(principal, module_id)
    service.require_rights(rights, "retrying a module")
    if module.registry_name != "private":
        raise Unprocessable("public modules have no versions to retry")
    # Accepted versions whose scan never came (its job dead-lettered; held ones wait on it)
    # are scanned, not fetched or ingested again.
    scans = request_scans_of(module)
    meta: dict[str, Any] = {"scans": scans}
    if not module.vcs_repo:
        meta["versions"] = versions.requeue_uploads(module)
        trail.record(audit_events.of_module(principal, module, audit_events.RETRIED, meta))
        return module, rights
    fetches = [
        {"module_id": module.id, "version": version.version, "version_id": version.id}
        for version in versions.list_versions(module)
        if version.status in RETRYABLE
        and not version.accepted
        and service.mark_version(version, VersionStatus.PENDING)
    ]
    meta["versions"] = [fetch["version"] for fetch in fetches]
    queue.enqueue_many(queue.FETCH, fetches)
    meta["sync"] = not module.vcs_repo.get("branch") and (
        (module.vcs_sync or {}).get("status") == SyncStatus.FAILED
    )
    meta["webhook"] = (module.webhook_registration or {}).get("status") == HookStatus.FAILED
    retried = audit_events.of_module(principal, module, audit_events.RETRIED, meta)
    if meta["sync"]:
        request_sync(module, retried)
    else:
        trail.record(retried)
    if meta["webhook"]:
        queue.enqueue(queue.HOOK, module_id=module.id)
    module.refresh()
    return module, rights


def regenerate_webhook_secret(principal: Principal, module_id: str) -> tuple[ModuleModel, str]:
    """A new secret; the webhook at the VCS host is replaced with one that uses it (at the
    configured public address, as ``publish``)."""
    module, _ = _vcs_module(principal, module_id, "regenerating a webhook secret")
    base_url = link_base_url("VCS webhook URLs")
    secret = random.token_urlsafe(32)
    registration = {
        **(module.webhook_registration or {}),
        "status": HookStatus.PENDING,
        "url": render.webhook_url(base_url, module.webhook_id),
    }
    sealed = secrets.seal(secret, purpose=WEBHOOK_SECRET_PURPOSE)
    actions = [
        ModuleModel.webhook_secret.set(sealed),
        ModuleModel.webhook_registration.set(registration),
        ModuleModel.updated_at.set(now()),
    ]
    regenerated = audit_events.of_module(
        principal, module, audit_events.WEBHOOK_SECRET_REGENERATED
    )  # never the secret
    try:
        writes.update_module(module, actions, regenerated)
    except writes.ModuleGone:
        raise NotFound(f"registry module {module_id} not found") from None
    queue.enqueue(queue.HOOK, module_id=module.id)
    return module, secret


def list_commits(principal: Principal, ref: service.ModuleRef) -> list[dict[str, Any]]:
    """The newest 20 commits of the module's branch (the default branch for tag-based
    modules), read from the VCS host now: no pagination, as in TFE."""
    module, _ = service.get_module(principal, ref)
    repo = module.vcs_repo
    if not repo:
        # go-tfe expects "not found" for a module without a VCS connection.
        raise NotFound("this module is not backed by a VCS repository: it has no commits")
    try:
        connection, url = repository(module)
        commits = git.recent_commits(
            url, connection.token, repo.get("branch") or None, username=connection.username
        )
    except (git.GitError, git.IdentifierError) as exc:
        raise BadGateway(f"could not read the repository's commits: {exc}") from None
    return [
        {
            "sha": c.sha,
            "date": iso(datetime.fromtimestamp(c.date, UTC)),
            "url": providers.commit_url(
                repo["repository-http-url"], repo["service-provider"], c.sha
            ),
            "author": c.author,
            "author-avatar-url": None,
            "author-html-url": None,
            "message": c.message,
        }
        for c in commits
    ]
