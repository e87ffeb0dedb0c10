"""Workspaces: validation, permissions, create/update/delete, and the workspace side of the
tag transactions (``tx_attach_tag`` / ``tx_detach_tag``, used by chalicelib/tags; the
conditional writes themselves are in store.py).

Reading a workspace needs read access to its organization; creating, changing, deleting and
tagging one needs ``manage-workspaces`` (owners and site admins have it). Otherwise 404.

Every workspace belongs to a project of its organization (the default project unless the
request names one, ``relationships.project``); moving it needs ``manage-workspaces`` too. Its
key/value tag bindings are its own plus, effectively, its project's (its own value wins on a
key both have); ``filter[tagged]`` on the list matches those effective bindings.

The functions here return ``WorkspaceModel`` items; other rooms name that type through this
module (``workspaces.WorkspaceModel``) rather than importing workspaces/store.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from chalicelib.accounts import authorization
from chalicelib.core import tagbindings
from chalicelib.core.api.errors import Conflict, NotFound, Unprocessable
from chalicelib.core.api.pagination import Page
from chalicelib.core.audit import events
from chalicelib.core.audit.events import Event
from chalicelib.core.auth import Principal
from chalicelib.core.data import lists
from chalicelib.core.data.ids import new_id, now
from chalicelib.core.tagbindings import Binding, Source, TagBindingAttribute
from chalicelib.projects import service as projects
from chalicelib.workspaces import store
from chalicelib.workspaces.store import WorkspaceModel, WorkspaceNameModel

NAME = re.compile(r"^[A-Za-z0-9_-]{1,90}\Z")
PROJECT_POINTER = "/data/relationships/project/data/id"
# Optimistic read-modify-write (PATCH …/tag-bindings) gives up after this many collisions.
MERGE_ATTEMPTS = 5
EXECUTION_MODES = ("remote", "local")
MAX_TEXT = 255
# The bounds of a request body's arrays (a 422 naming them, before anything is written;
# ``schemas`` applies those of the attributes): each tag name on create, and each workspace
# moved, is a write of its own.
MAX_TAG_NAMES = 100
MAX_TAG_NAME_LENGTH = 255  # the tags room checks the whole tag-name rule
MAX_TRIGGER_PATHS = 100  # trigger-prefixes, and trigger-patterns, each
MAX_TRIGGER_PATH_LENGTH = 1_000
MAX_MOVED_WORKSPACES = 100  # workspaces moved into a project at once

# Attributes that map one-to-one onto the model (name handled separately).
SETTINGS = (
    "description",
    "auto_apply",
    "allow_destroy_plan",
    "assessments_enabled",
    "execution_mode",
    "file_triggers_enabled",
    "global_remote_state",
    "queue_all_runs",
    "speculative_enabled",
    "structured_run_output_enabled",
    "terraform_version",
    "working_directory",
    "source_name",
    "source_url",
    "trigger_prefixes",
    "trigger_patterns",
)


@dataclass(frozen=True)
class WorkspaceRef:
    """A workspace addressed by id, or by organization and name."""

    id: str | None = None
    organization: str | None = None
    name: str | None = None

    def describe(self) -> str:
        return self.id or f"{self.organization}/{self.name}"


# ----- validation ---------------------------------------------------------------------------


def validate_name(name: Any) -> str:
    if not isinstance(name, str) or not name:
        raise Unprocessable("name is required", pointer="/data/attributes/name")
    if not NAME.match(name):
        raise Unprocessable(
            "name may contain only letters, numbers, - and _, at most 90 characters",
            pointer="/data/attributes/name",
        )
    return name


def clean_settings(values: dict[str, Any]) -> dict[str, Any]:
    """Validate the settings present in ``values`` (``None`` = not given)."""
    out: dict[str, Any] = {}
    operations = values.get("operations")
    if operations is not None and values.get("execution_mode") is None:
        values = {**values, "execution_mode": "remote" if operations else "local"}
    for key in SETTINGS:
        value = values.get(key)
        if value is None:
            continue
        pointer = "/data/attributes/" + key.replace("_", "-")
        if key == "execution_mode" and value not in EXECUTION_MODES:
            raise Unprocessable(
                f"execution-mode must be one of {', '.join(EXECUTION_MODES)}"
                + (" (agent pools are not supported)" if value == "agent" else ""),
                pointer=pointer,
            )
        if key == "terraform_version" and not (0 < len(value) <= 64):
            raise Unprocessable("terraform-version must be 1 to 64 characters", pointer=pointer)
        if isinstance(value, str) and key != "description" and len(value) > MAX_TEXT:
            raise Unprocessable(f"{pointer.rsplit('/', 1)[1]} is too long", pointer=pointer)
        out[key] = value
    return out


# ----- reading ------------------------------------------------------------------------------


def find(ref: WorkspaceRef) -> WorkspaceModel | None:
    """The workspace (not being deleted) or None; no permission check."""
    if ref.id:
        workspace = store.get(ref.id)
    else:
        assert ref.organization and ref.name
        workspace = store.by_name(ref.organization, ref.name)
    if workspace is None or workspace.deleting:
        return None
    return workspace


def tag_entries(workspace: WorkspaceModel) -> list[tuple[str, str]]:
    """(tag id, tag name) of the workspace's tags in the order they were added."""
    return store.tag_entries(workspace)


def readable(
    principal: Principal, ref: WorkspaceRef
) -> tuple[WorkspaceModel, authorization.OrgAccess]:
    if ref.organization:
        rights: authorization.OrgAccess | None = authorization.organization_access(
            principal, ref.organization
        )
        workspace = find(ref)
    else:
        workspace = find(ref)
        rights = authorization.access(principal, workspace.organization) if workspace else None
    if workspace is None or rights is None or not rights.can_read:
        raise NotFound(f"workspace {ref.describe()} not found")
    return workspace, rights


def manageable(
    principal: Principal, ref: WorkspaceRef
) -> tuple[WorkspaceModel, authorization.OrgAccess]:
    workspace, rights = readable(principal, ref)
    refusal = f"workspace {ref.describe()} not found, or your token lacks manage-workspaces"
    return workspace, authorization.require(rights, "manage-workspaces", refusal)


def require_manage(principal: Principal, organization: str) -> authorization.OrgAccess:
    refusal = f"organization {organization!r} not found, or your token lacks manage-workspaces"
    return authorization.authorize(principal, "manage-workspaces", organization, refusal)


def page_workspaces(
    principal: Principal, organization: str, query: dict[str, str], page: Page
) -> tuple[list[WorkspaceModel], int, authorization.OrgAccess]:
    """One page of ``list_workspaces`` and how many match, reading only what the page needs
    (``chalicelib.core.data.lists``): the name claims (``workspace-names``, keyed by organization
    and name: the list's order) are the lean index, so a page reads the kept count, the
    claims up to its end and its own workspaces by id; ``search[name]`` reads every claim,
    then the page's workspaces. The filters on what only the workspaces hold (project, tag
    bindings, tags) read them all, as before."""
    rights = authorization.organization_access(principal, organization)
    tagged = tagbindings.tagged_filters(query)
    whole = (
        tagged
        or query.get("filter[project][id]")
        or _names(query.get("search[tags]"))
        or _names(query.get("search[exclude-tags]"))
    )
    if whole:
        items, _ = list_workspaces(principal, organization, query)
        return items[page.offset : page.offset + page.size], len(items), rights
    needle = (query.get("search[name]") or "").lower()
    total = None if needle else store.workspace_count(organization)

    def fetch(claims: list[WorkspaceNameModel]) -> list[WorkspaceModel]:
        by_id = {w.id: w for w in store.by_ids([c.workspace_id for c in claims])}
        return [by_id[c.workspace_id] for c in claims if c.workspace_id in by_id]

    source = lists.ClaimList(WorkspaceNameModel, organization, fetch)

    def matches(claim: WorkspaceNameModel) -> bool:
        return needle in claim.name.lower()

    items, total = lists.read_page(source, page, total=total, matches=matches if needle else None)
    # A workspace being deleted is left out (it is counted until it is gone).
    return [w for w in items if not w.deleting], total, rights


def list_workspaces(
    principal: Principal, organization: str, query: dict[str, str]
) -> tuple[list[WorkspaceModel], authorization.OrgAccess]:
    """``search[name]``, ``search[tags]`` / ``search[exclude-tags]`` (organization tags),
    ``filter[project][id]`` and ``filter[tagged][i][key|value]`` (effective bindings)."""
    rights = authorization.organization_access(principal, organization)
    tagged = tagbindings.tagged_filters(query)
    items = [w for w in store.of_organization(organization) if not w.deleting]
    if needle := (query.get("search[name]") or "").lower():
        items = [w for w in items if needle in w.name.lower()]
    if project_id := query.get("filter[project][id]"):
        of = projects_of(items)
        items = [w for w in items if of.get(w.id) == project_id]
    if tagged:
        of = projects_of(items)
        inherited = projects.bindings_of({p for p in of.values() if p is not None})
        items = [
            w
            for w in items
            if tagbindings.satisfies(
                tagbindings.effective(w.tag_bindings or [], inherited.get(of[w.id] or "", [])),
                tagged,
            )
        ]
    wanted = _names(query.get("search[tags]"))
    unwanted = _names(query.get("search[exclude-tags]"))
    if wanted or unwanted:

        def names(w: WorkspaceModel) -> set[str]:
            return {name for _, name in tag_entries(w)}

        items = [w for w in items if wanted <= names(w) and not (unwanted & names(w))]
    return items, rights


def _names(raw: str | None) -> set[str]:
    return {part.strip() for part in (raw or "").split(",") if part.strip()}


def projects_of(workspaces: Iterable[WorkspaceModel]) -> dict[str, str | None]:
    """Workspace id -> the id of its project. Workspaces created before projects existed
    belong to their organization's default project (looked up once per organization)."""
    defaults: dict[str, str | None] = {}
    out: dict[str, str | None] = {}
    for w in workspaces:
        if w.project_id:
            out[w.id] = w.project_id
            continue
        if w.organization not in defaults:
            defaults[w.organization] = projects.default_id(w.organization)
        out[w.id] = defaults[w.organization]
    return out


def effective_bindings(
    workspaces: Sequence[WorkspaceModel], project_ids: dict[str, str | None]
) -> dict[str, tuple[list[TagBindingAttribute], list[TagBindingAttribute], Source | None]]:
    """Workspace id -> (its own bindings, its project's, where those come from), for
    ``tagbindings.render_effective``; ``project_ids`` from ``projects_of``."""
    inherited = projects.bindings_of({pid for pid in project_ids.values() if pid})
    out: dict[str, tuple[list[TagBindingAttribute], list[TagBindingAttribute], Source | None]]
    out = {}
    for w in workspaces:
        pid = project_ids.get(w.id)
        source = Source("projects", pid, f"/api/v2/projects/{pid}") if pid else None
        out[w.id] = (list(w.tag_bindings or []), inherited.get(pid, []) if pid else [], source)
    return out


def workspaces_by_ids(ids: list[str]) -> dict[str, WorkspaceModel]:
    found = store.by_ids(ids, consistent_read=True)
    return {w.id: w for w in found if not w.deleting}


# ----- writing ------------------------------------------------------------------------------


def event_of(principal: Principal, workspace: WorkspaceModel, action: str, **meta: Any) -> Event:
    """A workspace's audit event (its name and what else ``meta`` says)."""
    return events.event(
        principal,
        organization=workspace.organization,
        resource_type="workspace",
        resource_id=workspace.id,
        action=action,
        meta={"name": workspace.name, **meta},
    )


def _changed(values: dict[str, Any], *also: str | None) -> list[str]:
    """The API's names of the attributes a change sets (``also``: those set when given)."""
    names = {key for key in values if key != "updated_at"}
    names |= {name for name in also if name}
    return sorted(name.replace("_", "-") for name in names)


def _name_taken() -> Unprocessable:
    return Unprocessable("name has already been taken", pointer="/data/attributes/name")


def _project_missing(project_id: str) -> Unprocessable:
    return Unprocessable(
        f"project {project_id} not found in the workspace's organization", pointer=PROJECT_POINTER
    )


def _project_in(organization: str, project_id: str) -> str:
    if projects.find_in_organization(project_id, organization) is None:
        raise _project_missing(project_id)
    return project_id


def create_workspace(
    principal: Principal,
    organization: str,
    name: Any,
    settings: dict[str, Any],
    project_id: str | None = None,
    bindings: Sequence[Binding] | None = None,
    tag_names: Sequence[str] = (),
) -> WorkspaceModel:
    """``project_id``: the project to create it in (default: the organization's default
    project); ``bindings``: its own tag bindings; ``tag_names``: the tags the caller puts on
    it next (named in its creation's event)."""
    require_manage(principal, organization)
    name = validate_name(name)
    values = clean_settings(settings)
    if project_id is not None:
        project_id = _project_in(organization, project_id)
    else:
        project_id = projects.ensure_default(organization).id
    moment = now()
    workspace = WorkspaceModel(
        new_id("ws"),
        organization=organization,
        name=name,
        project_id=project_id,
        tag_bindings=tagbindings.replace([], bindings or []),
        created_at=moment,
        updated_at=moment,
    )
    for key, value in values.items():
        setattr(workspace, key, value)
    meta: dict[str, Any] = {"project-id": project_id}
    if tag_names:
        meta["tag-names"] = list(tag_names)
    try:
        store.insert(workspace, event_of(principal, workspace, "created", **meta))
    except store.NameTaken:
        raise _name_taken() from None
    except store.ProjectGone:
        raise _project_missing(project_id) from None
    return workspace


def update_workspace(
    principal: Principal,
    ref: WorkspaceRef,
    new_name: Any,
    settings: dict[str, Any],
    project_id: str | None = None,
    bindings: Sequence[Binding] | None = None,
) -> WorkspaceModel:
    """``project_id``: move it there (None: stays); ``bindings``: its new own set (replaces;
    None: unchanged). Everything is checked before anything is written."""
    workspace, _ = manageable(principal, ref)
    values = {**clean_settings(settings), "updated_at": now()}
    if new_name is not None:
        new_name = validate_name(new_name)
    if bindings is not None:
        values["tag_bindings"] = tagbindings.replace(workspace.tag_bindings or [], bindings)
    if project_id is not None:
        project_id = _project_in(workspace.organization, project_id)
        if project_id == workspace.project_id:
            project_id = None  # already there
    if new_name == workspace.name:
        new_name = None
    meta: dict[str, Any] = {
        "changed": _changed(values, new_name and "name", project_id and "project")
    }
    if new_name:
        meta.update({"name": new_name, "previous-name": workspace.name})
    if project_id:
        meta.update({"project-id": project_id, "previous-project-id": workspace.project_id})
    event = event_of(principal, workspace, "updated", **meta)
    if new_name is None and project_id is None:
        if not store.update(workspace, values, event):
            raise NotFound(f"workspace {ref.describe()} not found")
        return workspace
    try:
        changed = store.change(workspace, values, event, new_name=new_name, new_project=project_id)
    except store.NameTaken:
        raise _name_taken() from None
    except store.ProjectGone:
        raise _project_missing(str(project_id)) from None
    if not changed:
        raise Conflict("the workspace changed concurrently; try again")
    return store.get(workspace.id) or workspace


def add_bindings(
    principal: Principal, ref: WorkspaceRef, added: Sequence[Binding]
) -> list[TagBindingAttribute]:
    """``PATCH …/tag-bindings``: add or update the workspace's own, never remove; the
    resulting set."""
    for _ in range(MERGE_ATTEMPTS):
        workspace, _ = manageable(principal, ref)
        merged = tagbindings.merge(workspace.tag_bindings or [], added)
        values = {"tag_bindings": merged, "updated_at": now()}
        event = event_of(principal, workspace, "updated", changed=["tag-bindings"])
        if store.update(workspace, values, event, expected=workspace.updated_at):
            return merged
    raise Conflict("the workspace's tag bindings changed concurrently; try again")


def move_to_project(principal: Principal, project_id: str, workspace_ids: list[str]) -> None:
    """``POST /projects/:id/relationships/workspaces``: move every workspace named into the
    project. The project must exist and the caller manage workspaces in its organization
    (else 404); every workspace is checked (422 naming it) before any moves."""
    project = projects.get_many([project_id]).get(project_id)
    refusal = f"project {project_id} not found, or your token lacks manage-workspaces"
    if project is None:
        raise NotFound(refusal)
    authorization.require(
        authorization.access(principal, project.organization), "manage-workspaces", refusal
    )
    found = workspaces_by_ids(workspace_ids) if workspace_ids else {}
    for index, workspace_id in enumerate(workspace_ids):
        workspace = found.get(workspace_id)
        if workspace is None or workspace.organization != project.organization:
            raise Unprocessable(
                f"workspace {workspace_id} not found in the project's organization",
                pointer=f"/data/{index}/id",
            )
    for workspace_id in dict.fromkeys(workspace_ids):
        update_workspace(principal, WorkspaceRef(id=workspace_id), None, {}, project_id)


def all_in_organization(organization: str) -> list[WorkspaceModel]:
    """Every workspace of the organization, those being deleted included."""
    return store.of_organization(organization)


def fence(workspace: WorkspaceModel) -> bool:
    """Mark the workspace as being deleted, so no new tag lands on it; False when it is
    already gone. The first step of deleting it (``lifecycle.destroy_workspace``)."""
    return store.fence(workspace)


def remove(workspace: WorkspaceModel, event: Event | None) -> None:
    """Delete a fenced workspace (its tags detached) and its name, with the delete's audit
    event (None: part of its organization's delete)."""
    store.delete(workspace, event)


# ----- the workspace side of tag transactions -----------------------------------------------

# chalicelib/tags builds each (tag, workspace) transaction and adds the workspace's item
# through these, so it needs nothing from workspaces/store.py.
tx_attach_tag = store.tx_attach_tag
tx_detach_tag = store.tx_detach_tag
