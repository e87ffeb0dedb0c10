"""Projects: validation, permissions, the default project, and tag bindings.

Who may do what (404 for anyone else, as if the project did not exist):

* read (show, list, tag bindings): the owners team and site admins, teams with
  ``manage-projects`` or ``read-projects``, and the organization's token;
* create, update, delete, change tag bindings: the owners team, site admins and teams with
  ``manage-projects``.

Every organization has a "Default Project" (TFE's rule): it is created with the organization
and, for organizations older than projects, on first use (listing or creating projects,
creating a workspace without a project). It can be renamed but not deleted. A project that
still holds workspaces cannot be deleted either (409).

Workspaces (a room above) reach projects only through ``find_in_organization``,
``ensure_default``, ``default_id``, ``bindings_of`` and the ``tx_*`` transaction parts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from chalicelib.accounts import authorization
from chalicelib.accounts.organizations import service as organizations_service
from chalicelib.core import observe, tagbindings
from chalicelib.core.api.errors import Conflict, NotFound, Unprocessable
from chalicelib.core.api.pagination import Page
from chalicelib.core.audit import events
from chalicelib.core.audit.events import Event
from chalicelib.core.auth import Principal
from chalicelib.core.data import lists
from chalicelib.core.data.ids import new_id, now
from chalicelib.core.tagbindings import Binding, TagBindingAttribute
from chalicelib.projects import store
from chalicelib.projects.store import ProjectModel

DEFAULT_NAME = "Default Project"
# TFE: letters, numbers, spaces, - and _, not starting or ending with a space, 3 to 40 long.
NAME = re.compile(r"^(?! )[A-Za-z0-9 _-]{3,40}(?<! )\Z")
MAX_DESCRIPTION = 256
EXECUTION_MODES = ("remote", "local")
# Up to four digits greater than 0, then d(ays) or h(ours): "14d", "36h".
DURATION = re.compile(r"^(?!0+[dh]$)[0-9]{1,4}[dh]\Z")
# Optimistic read-modify-write (PATCH …/tag-bindings) gives up after this many collisions.
MERGE_ATTEMPTS = 5

# The project side of workspace transactions (chalicelib/workspaces/store.py).
tx_add_workspace = store.tx_add_workspace
tx_remove_workspace = store.tx_remove_workspace


def can_read(rights: authorization.OrgAccess) -> bool:
    return authorization.allows(rights, "read-projects")


# ----- audit events -------------------------------------------------------------------------


def _event(principal: Principal, project: ProjectModel, action: str, **meta: Any) -> Event:
    return events.event(
        principal,
        organization=project.organization,
        resource_type="project",
        resource_id=project.id,
        action=action,
        meta={"name": project.name, **meta},
    )


def _changed(values: dict[str, Any], new_name: str | None = None) -> list[str]:
    """The API's names of the attributes a change sets."""
    names = {key for key in values if key != "updated_at"} | ({"name"} if new_name else set())
    return sorted(name.replace("_", "-") for name in names)


# ----- validation ---------------------------------------------------------------------------


def validate_name(name: Any) -> str:
    pointer = "/data/attributes/name"
    if not isinstance(name, str) or not name:
        raise Unprocessable("name is required", pointer=pointer)
    if not NAME.match(name):
        raise Unprocessable(
            "Name may only contain letters, numbers, spaces, - and _, must not start or end "
            "with a space, and must be 3 to 40 characters long",
            pointer=pointer,
        )
    return name


def clean_settings(settings: dict[str, Any], given: Iterable[str]) -> dict[str, Any]:
    """The settings the request gave (``given``: the attribute names it sent, so a null
    ``auto-destroy-activity-duration`` clears it), checked."""
    out: dict[str, Any] = {}
    for key in given:
        if key not in settings:
            continue
        value = settings[key]
        pointer = "/data/attributes/" + key.replace("_", "-")
        if key == "description":
            if value is not None and len(value) > MAX_DESCRIPTION:
                raise Unprocessable(
                    f"description must be at most {MAX_DESCRIPTION} characters", pointer=pointer
                )
        elif key == "default_execution_mode":
            if value is None:
                continue
            if value not in EXECUTION_MODES:
                raise Unprocessable(
                    f"default-execution-mode must be one of {', '.join(EXECUTION_MODES)}"
                    + (" (agent pools are not supported)" if value == "agent" else ""),
                    pointer=pointer,
                )
        elif key == "auto_destroy_activity_duration":
            if value is not None and not DURATION.match(value):
                raise Unprocessable(
                    "auto-destroy-activity-duration must be 1 to 4 digits (more than 0) "
                    "followed by d or h, like 14d",
                    pointer=pointer,
                )
        else:
            continue
        out[key] = value
    return out


# ----- permissions and reading --------------------------------------------------------------


def _not_found(project_id: str) -> NotFound:
    return NotFound(f"project {project_id} not found")


def readable_organization(principal: Principal, organization: str) -> authorization.OrgAccess:
    refusal = f"organization {organization!r} not found, or your token lacks read-projects"
    return authorization.authorize(principal, "read-projects", organization, refusal)


def manageable_organization(principal: Principal, organization: str) -> authorization.OrgAccess:
    refusal = f"organization {organization!r} not found, or your token lacks manage-projects"
    return authorization.authorize(principal, "manage-projects", organization, refusal)


def readable(principal: Principal, project_id: str) -> tuple[ProjectModel, authorization.OrgAccess]:
    project = store.get(project_id)
    rights = authorization.access(principal, project.organization) if project else None
    if project is None:
        raise _not_found(project_id)
    return project, authorization.require(
        rights, "read-projects", f"project {project_id} not found"
    )


def manageable(
    principal: Principal, project_id: str
) -> tuple[ProjectModel, authorization.OrgAccess]:
    project, rights = readable(principal, project_id)
    refusal = f"project {project_id} not found, or your token lacks manage-projects"
    return project, authorization.require(rights, "manage-projects", refusal)


def find_in_organization(project_id: str, organization: str) -> ProjectModel | None:
    """The project when it exists in ``organization`` (no permission check: the caller
    decides what a workspace may reference)."""
    project = store.get(project_id)
    return project if project is not None and project.organization == organization else None


def get_many(project_ids: Iterable[str]) -> dict[str, ProjectModel]:
    return store.get_many(list(project_ids))


def bindings_of(project_ids: Iterable[str]) -> dict[str, list[TagBindingAttribute]]:
    """Project id -> its tag bindings (what its workspaces inherit), for projects that exist."""
    return {pid: list(p.tag_bindings or []) for pid, p in get_many(project_ids).items()}


def default_id(organization: str) -> str | None:
    """The id the organization's default project has (or will have): ``prj-`` + the random
    part of the organization's ``org-`` id, so a re-created organization of the same name gets
    a new one. None when the organization does not exist."""
    external = organizations_service.organization_external_id(organization)
    return "prj-" + external.split("-", 1)[1] if external else None


def ensure_default(organization: str) -> ProjectModel:
    """The organization's default project, created if it does not exist yet."""
    project_id = default_id(organization)
    if project_id is None:
        raise NotFound(f"organization {organization!r} not found")
    existing = store.get(project_id)
    if existing is not None:
        return existing
    moment = now()
    project = ProjectModel(
        project_id,
        organization=organization,
        name=DEFAULT_NAME,
        is_default=True,
        created_at=moment,
        updated_at=moment,
    )
    try:
        # Bookkeeping: the default project is the organization's own (its id is derived from
        # the organization's), made with it, or on first use for organizations older than
        # projects; the organization's creation is the change.
        with observe.bookkeeping():
            store.insert(project, None)
    except store.Refused:
        pass  # created concurrently
    except store.NameTaken:
        raise Conflict(
            f"the name {DEFAULT_NAME!r} is held by another project of {organization!r}; "
            "rename it so the default project can be created"
        ) from None
    return store.get(project_id) or project


def page_projects(
    principal: Principal, organization: str, query: dict[str, str], page: Page
) -> tuple[list[ProjectModel], int, authorization.OrgAccess]:
    """One page of ``list_projects`` and how many match, reading only what the page needs
    (``chalicelib.core.data.lists``): the name claims (``project-names``, keyed by organization
    and lower-cased name, which is the list's order) are the lean index: the kept count,
    the claims up to the page's end and the page's projects by id; ``q`` and
    ``filter[names]`` read every claim (they match the name), then the page's projects.
    ``filter[tagged]`` matches the projects' bindings, so it reads them all, as before."""
    rights = readable_organization(principal, organization)
    ensure_default(organization)
    tagged = tagbindings.tagged_filters(query)
    sort = query.get("sort") or "name"
    if sort not in ("name", "-name"):
        raise Unprocessable("sort must be name or -name", parameter="sort")
    if tagged:
        items, _ = list_projects(principal, organization, query)
        return items[page.offset : page.offset + page.size], len(items), rights
    names = {n.strip().casefold() for n in (query.get("filter[names]") or "").split(",")}
    names.discard("")
    needle = (query.get("q") or "").casefold()

    def fetch(claims: list[Any]) -> list[ProjectModel]:
        found = store.get_many([c.project_id for c in claims])
        return [found[c.project_id] for c in claims if c.project_id in found]

    source = lists.ClaimList(store.ProjectNameModel, organization, fetch, forward=sort == "name")
    matches = None
    if names:

        def matches(claim: Any) -> bool:
            return claim.name in names
    elif needle:

        def matches(claim: Any) -> bool:
            return needle in claim.name

    total = store.project_count(organization) if matches is None else None
    items, total = lists.read_page(source, page, total=total, matches=matches)
    return items, total, rights


def list_projects(
    principal: Principal, organization: str, query: dict[str, str]
) -> tuple[list[ProjectModel], authorization.OrgAccess]:
    """``filter[names]`` (comma-separated, exact, case-insensitive; wins over ``q``), ``q``
    (part of the name, case-insensitive), ``filter[tagged][i][key|value]`` (the project's
    bindings), ``sort`` (``name`` or ``-name``; default by name)."""
    rights = readable_organization(principal, organization)
    ensure_default(organization)
    filters = tagbindings.tagged_filters(query)
    sort = query.get("sort") or "name"
    if sort not in ("name", "-name"):
        raise Unprocessable("sort must be name or -name", parameter="sort")
    items = store.in_organization(organization)
    names = {n.strip().casefold() for n in (query.get("filter[names]") or "").split(",")}
    names.discard("")
    if names:
        items = [p for p in items if p.name.casefold() in names]
    elif needle := (query.get("q") or "").casefold():
        items = [p for p in items if needle in p.name.casefold()]
    if filters:
        items = [
            p for p in items if tagbindings.satisfies(tagbindings.as_dict(p.tag_bindings), filters)
        ]
    items.sort(key=lambda p: (p.name.casefold(), p.id), reverse=sort == "-name")
    return items, rights


# ----- writing ------------------------------------------------------------------------------


def _name_taken() -> Unprocessable:
    return Unprocessable("name has already been taken", pointer="/data/attributes/name")


def create_project(
    principal: Principal,
    organization: str,
    name: Any,
    settings: dict[str, Any],
    given: Iterable[str],
    bindings: Sequence[Binding] | None,
) -> ProjectModel:
    manageable_organization(principal, organization)
    name = validate_name(name)
    values = clean_settings(settings, given)
    ensure_default(organization)  # before the first project, so the default name stays free
    moment = now()
    project = ProjectModel(
        new_id("prj"), organization=organization, name=name, created_at=moment, updated_at=moment
    )
    for key, value in values.items():
        setattr(project, key, value)
    project.tag_bindings = tagbindings.replace([], bindings or [])
    try:
        store.insert(project, _event(principal, project, "created"))
    except store.NameTaken:
        raise _name_taken() from None
    return project


def update_project(
    principal: Principal,
    project_id: str,
    new_name: Any,
    settings: dict[str, Any],
    given: Iterable[str],
    bindings: Sequence[Binding] | None,
) -> ProjectModel:
    """``bindings``: the new set (replaces), or None to leave them as they are."""
    project, _ = manageable(principal, project_id)
    values = {**clean_settings(settings, given), "updated_at": now()}
    if new_name is not None:
        new_name = validate_name(new_name)
    if bindings is not None:
        values["tag_bindings"] = tagbindings.replace(project.tag_bindings or [], bindings)
    if new_name == project.name:
        new_name = None
    renaming = {"name": new_name, "previous-name": project.name} if new_name else {}
    event = _event(principal, project, "updated", changed=_changed(values, new_name), **renaming)
    if new_name is None:
        if not store.update(project, values, event):
            raise _not_found(project_id)
        return project
    if store.claim_key(new_name) == store.claim_key(project.name):
        values["name"] = new_name  # a change of case only: the claim stays
        if not store.update(project, values, event):
            raise _not_found(project_id)
        return project
    try:
        renamed = store.rename(project, new_name, values, event)
    except store.NameTaken:
        raise _name_taken() from None
    if not renamed:
        raise Conflict("the project changed concurrently; try again")
    return store.get(project_id) or project


def delete_project(principal: Principal, project_id: str) -> None:
    project, _ = manageable(principal, project_id)
    if project.is_default:
        raise Conflict("the organization's default project cannot be deleted")
    try:
        if not store.delete(project, _event(principal, project, "deleted")):
            raise _not_found(project_id)
    except store.Refused:
        raise Conflict(
            "the project still holds workspaces; move or delete them before deleting it"
        ) from None


def add_bindings(
    principal: Principal, project_id: str, added: Sequence[Binding]
) -> list[TagBindingAttribute]:
    """``PATCH …/tag-bindings``: add or update, never remove; the resulting set."""
    for _ in range(MERGE_ATTEMPTS):
        project, _ = manageable(principal, project_id)
        merged = tagbindings.merge(project.tag_bindings or [], added)
        values = {"tag_bindings": merged, "updated_at": now()}
        event = _event(principal, project, "updated", changed=["tag-bindings"])
        if store.update(project, values, event, expected=project.updated_at):
            return merged
    raise Conflict("the project's tag bindings changed concurrently; try again")


def delete_all_for_organization(organization: str) -> None:
    """Every project of the organization, whatever it holds (deleting the organization:
    its workspaces are gone by then)."""
    for project in store.in_organization(organization):
        store.purge(project)
    project_id = default_id(organization)
    leftover = store.get(project_id) if project_id else None
    if leftover is not None:  # the index may lag behind a default project just created
        store.purge(leftover)
