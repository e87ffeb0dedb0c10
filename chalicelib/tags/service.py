"""Organization tags: listing, attaching to and detaching from workspaces, bulk deletion.

Every change of a (tag, workspace) pair is one DynamoDB transaction of three or four items
(``store.attach_pair`` / ``store.detach_pair``: the pair item, the tag's ``instance_count``
or the tag itself, the workspace's ``tags`` map), each under a condition. So the count
equals the number of pair items at every commit, whatever runs concurrently; a failed
condition on the tag means "someone else changed it first": re-read and retry. Attaching an
attached pair and detaching a detached one are no-ops.

Audit events: a person's tagging or untagging of a workspace is one event (``workspace``,
``tagged``/``untagged``) in the pair's own transaction; a bulk-deleted tag one (``tag``,
``deleted``) once it is gone. The pairs a workspace's or an organization's delete removes
record nothing of their own: that delete is the change.
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from chalicelib.accounts import authorization
from chalicelib.core.api.errors import Conflict, NotFound, Unprocessable
from chalicelib.core.api.pagination import Page
from chalicelib.core.audit import events, trail
from chalicelib.core.audit.events import Event
from chalicelib.core.auth import Principal
from chalicelib.core.data import lists
from chalicelib.tags import store
from chalicelib.tags.store import TagModel
from chalicelib.workspaces import service as workspaces
from chalicelib.workspaces.service import WorkspaceRef, tag_entries

TAG_NAME = re.compile(r"^[A-Za-z0-9:_-]{1,255}\Z")
MAX_ATTEMPTS = 12
# The bounds of one request's arrays (a 422 naming them, before any write): every tag or
# workspace named is one transaction of its own (``attach``/``detach``), and a deleted tag
# one per workspace it is on, so a request must stay far inside API Gateway's 29 s.
MAX_TAGS_PER_REQUEST = 100  # tags added to, removed from a workspace, or deleted at once
MAX_WORKSPACES_PER_REQUEST = 100  # workspaces added to a tag at once


@dataclass(frozen=True)
class TagRef:
    """One element of a relationship body: a tag id or a tag name."""

    id: str | None
    name: str | None


# ----- validation ---------------------------------------------------------------------------


def validate_tag_name(name: Any, pointer: str) -> str:
    if not isinstance(name, str) or not name:
        raise Unprocessable("tag name must be a non-empty string", pointer=pointer)
    if not TAG_NAME.match(name):
        raise Unprocessable(
            "tag names are 1 to 255 letters, numbers, colons, hyphens or underscores",
            pointer=pointer,
        )
    return name


def parse_tag_refs(items: list[dict[str, Any]]) -> list[TagRef]:
    """Each element needs an ``id`` or ``attributes.name``; every name is validated before
    anything is written, so a bad one changes nothing."""
    refs: list[TagRef] = []
    for index, item in enumerate(items):
        tag_id = item.get("id")
        attributes = item.get("attributes")
        if attributes is not None and not isinstance(attributes, dict):
            raise Unprocessable("attributes must be an object", pointer=f"/data/{index}/attributes")
        name = (attributes or {}).get("name")
        if tag_id not in (None, ""):
            if not isinstance(tag_id, str):
                raise Unprocessable("id must be a string", pointer=f"/data/{index}/id")
            refs.append(TagRef(tag_id, None))
        elif name is not None:
            refs.append(TagRef(None, validate_tag_name(name, f"/data/{index}/attributes/name")))
        else:
            raise Unprocessable("each tag needs an id or attributes.name", pointer=f"/data/{index}")
    return refs


def ids_of(items: list[dict[str, Any]], what: str) -> list[str]:
    ids = []
    for index, item in enumerate(items):
        value = item.get("id")
        if not isinstance(value, str) or not value:
            raise Unprocessable(f"each {what} needs an id", pointer=f"/data/{index}/id")
        ids.append(value)
    return ids


# ----- reading ------------------------------------------------------------------------------


def page_tags(
    principal: Principal,
    organization: str,
    q: str | None,
    exclude_workspace: str | None,
    page: Page,
) -> tuple[list[TagModel], int]:
    """One page of the organization's tags (name order) and how many there are, reading
    only what the page needs (``chalicelib.core.data.lists``): the kept count and the page, the
    tags before a later page (a tag item is about 100 bytes: lean already, no index), and
    for ``q`` or ``filter[exclude][taggable][id]`` (or while no count is kept: before the
    backfill) the organization's tags, then the page."""
    authorization.organization_access(principal, organization)
    needle = q.lower() if q else None
    excluded: set[str] = set()
    if exclude_workspace:
        workspace = workspaces.find(WorkspaceRef(id=exclude_workspace))
        if workspace is not None and workspace.organization == organization:
            excluded = {tag_id for tag_id, _ in tag_entries(workspace)}
    source = lists.KeyedList(TagModel, organization)
    kept = store.tag_count(organization)
    if needle is None and not exclude_workspace and kept is not None:
        tags, total = lists.read_page(source, page, total=kept)
        # A tag a bulk delete is removing is left out (it is counted until it is gone).
        return [t for t in tags if not t.deleting], total

    def matches(tag: TagModel) -> bool:
        if tag.deleting or tag.id in excluded:
            return False
        return needle is None or needle in tag.name.lower()

    return lists.read_page(source, page, total=None, matches=matches)


def workspace_tags(
    principal: Principal, workspace_id: str, name_filter: str | None
) -> list[TagModel]:
    """Tags of a workspace in insertion order (a GetItem and a BatchGet)."""
    workspace, _ = workspaces.readable(principal, WorkspaceRef(id=workspace_id))
    entries = tag_entries(workspace)
    if name_filter:
        entries = [(i, n) for i, n in entries if name_filter.lower() in n.lower()]
    found = store.tags_named(workspace.organization, [name for _, name in entries])
    return [found[tag_id] for tag_id, _ in entries if tag_id in found]


# ----- audit events -------------------------------------------------------------------------


def _tagging(
    actor: Principal, organization: str, workspace_id: str, action: str, name: str
) -> Callable[[str], Event]:
    """The event of tagging (``tagged``) or untagging (``untagged``) a workspace, made of the
    tag's id (a new tag's is made in its transaction)."""

    def event(tag_id: str) -> Event:
        return events.event(
            actor,
            organization=organization,
            resource_type="workspace",
            resource_id=workspace_id,
            action=action,
            meta={"tag": name, "tag-id": tag_id},
        )

    return event


# ----- the pair transactions ----------------------------------------------------------------


def _backoff(attempt: int) -> None:
    time.sleep(min(0.2, 0.005 * 2**attempt) * random.random())


def attach(
    organization: str, workspace_id: str, ref: TagRef, actor: Principal | None = None
) -> bool:
    """Attach one tag (by id or name) to one workspace. True if a pair was created (with
    ``actor``'s event: None when the pair is part of another change)."""
    for attempt in range(MAX_ATTEMPTS):
        if ref.id:
            known = store.tag_ids([ref.id]).get(ref.id)
            if known is None or known.organization != organization:
                raise NotFound(f"tag {ref.id} not found")
            name = known.name
        else:
            assert ref.name
            name = ref.name
        tag = store.get_tag(organization, name)
        if ref.id and (tag is None or tag.id != ref.id):
            raise NotFound(f"tag {ref.id} not found")
        if tag is not None and tag.deleting:
            if ref.id:
                raise NotFound(f"tag {ref.id} is being deleted")
            _backoff(attempt + 3)  # a bulk delete is finishing: recreate the name after it
            continue
        event = _tagging(actor, organization, workspace_id, "tagged", name) if actor else None
        try:
            store.attach_pair(organization, name, tag.id if tag else None, workspace_id, event)
            return True
        except store.Cancelled as exc:
            if "workspace" in exc.failed:
                raise NotFound(f"workspace {workspace_id} not found") from None
            if "pair" in exc.failed and tag is not None:
                return False  # already attached
            _backoff(attempt)  # the tag changed meanwhile, or a transient conflict
    raise Conflict("too many concurrent changes to this tag; try again")


def detach(
    organization: str,
    workspace_id: str,
    tag_id: str,
    name: str,
    *,
    last: bool = False,
    actor: Principal | None = None,
) -> bool:
    """Detach one tag from one workspace. True if a pair was removed (with ``actor``'s
    event: None when the pair goes as part of another change). ``last`` is a hint that this
    is the tag's last pair (the guess is checked by the transaction's condition)."""
    for attempt in range(MAX_ATTEMPTS):
        event = None
        if actor is not None:
            event = _tagging(actor, organization, workspace_id, "untagged", name)(tag_id)
        try:
            store.detach_pair(organization, workspace_id, tag_id, name, last=last, event=event)
            return True
        except store.Cancelled as exc:
            if "pair" in exc.failed:
                return False  # not attached
            if "tag" in exc.failed:
                last = not last  # the count is (or is no longer) 1: take the other branch
                if attempt:
                    _backoff(attempt)
                continue
            if "workspace" in exc.failed:
                raise NotFound(f"workspace {workspace_id} not found") from None
            _backoff(attempt)  # transient (the tag-id delete has no condition to fail)
    raise Conflict("too many concurrent changes to this tag; try again")


# ----- workspace tag relationships ----------------------------------------------------------


def add_workspace_tags(principal: Principal, workspace_id: str, items: list[dict]) -> None:
    refs = parse_tag_refs(items)
    workspace, _ = workspaces.manageable(principal, WorkspaceRef(id=workspace_id))
    _check_ids(workspace.organization, [r.id for r in refs if r.id])
    on_it = tag_entries(workspace)
    ids, names = {i for i, _ in on_it}, {n for _, n in on_it}
    for ref in refs:
        if ref.id in ids or ref.name in names:
            continue  # already there (a concurrent change is caught by the pair condition)
        attach(workspace.organization, workspace.id, ref, principal)


def tag_workspace_names(workspace: workspaces.WorkspaceModel, names: list[str]) -> None:
    """Tag a just-created workspace (``tag-names`` on create: its creation's event names
    them)."""
    for name in dict.fromkeys(names):
        attach(workspace.organization, workspace.id, TagRef(None, name))


def remove_workspace_tags(principal: Principal, workspace_id: str, items: list[dict]) -> None:
    refs = parse_tag_refs(items)
    workspace, _ = workspaces.manageable(principal, WorkspaceRef(id=workspace_id))
    _check_ids(workspace.organization, [r.id for r in refs if r.id])
    on_it = tag_entries(workspace)
    by_name = {name: tag_id for tag_id, name in on_it}
    by_id = dict(on_it)
    for ref in refs:
        tag_id = ref.id if ref.id else by_name.get(ref.name or "")
        if tag_id and tag_id in by_id:  # unknown names, and tags not on it: nothing to do
            detach(workspace.organization, workspace.id, tag_id, by_id[tag_id], actor=principal)


def _check_ids(organization: str, ids: list[str]) -> None:
    known = store.tag_ids(ids)
    for tag_id in ids:
        if tag_id not in known or known[tag_id].organization != organization:
            raise NotFound(f"tag {tag_id} not found")


# ----- tag-addressed operations -------------------------------------------------------------


def add_workspaces_to_tag(principal: Principal, tag_id: str, items: list[dict]) -> None:
    ids = ids_of(items, "workspace")
    known = store.tag_ids([tag_id]).get(tag_id)
    rights = authorization.access(principal, known.organization) if known else None
    if known is None or rights is None or not rights.can_read:
        raise NotFound(f"tag {tag_id} not found")
    refusal = f"tag {tag_id} not found, or your token lacks manage-workspaces"
    authorization.require(rights, "manage-workspaces", refusal)
    found = workspaces.workspaces_by_ids(ids)
    for index, workspace_id in enumerate(ids):
        workspace = found.get(workspace_id)
        if workspace is None or workspace.organization != known.organization:
            raise NotFound(f"workspace {workspace_id} not found", pointer=f"/data/{index}/id")
    for workspace_id in dict.fromkeys(ids):
        attach(known.organization, workspace_id, TagRef(tag_id, None), principal)


def delete_tags(principal: Principal, organization: str, items: list[dict]) -> None:
    """Bulk delete: fence each tag off (no new pairs), detach it from every workspace (the
    last detach deletes it), then remove whatever is left. Unknown ids are ignored, so a
    retried request succeeds."""
    for index, item in enumerate(items):
        if item.get("type") not in ("tags", None, ""):
            raise Unprocessable("type must be 'tags'", pointer=f"/data/{index}/type")
    ids = ids_of(items, "tag")
    workspaces.require_manage(principal, organization)
    known = [t for t in store.tag_ids(ids).values() if t.organization == organization]
    for tag in known:
        _delete_tag(organization, tag.id, tag.name)
        # Recorded once the tag is gone (it takes a transaction per workspace it was on).
        trail.record(
            events.event(
                principal,
                organization=organization,
                resource_type="tag",
                resource_id=tag.id,
                action="deleted",
                meta={"name": tag.name},
            )
        )


def _delete_tag(organization: str, tag_id: str, name: str) -> None:
    if not store.fence_tag(organization, tag_id, name):  # already gone with its last workspace
        store.delete_tag_id(tag_id)
        return
    pairs = store.tag_pairs(tag_id)
    for remaining, pair in enumerate(reversed(pairs), start=1):
        detach(organization, pair.workspace_id, tag_id, name, last=remaining == len(pairs))
    if pairs:
        return  # the last detach deleted the tag and its id item
    # Normally the last detach deleted both items already; these are for a tag left without
    # pairs (a retried delete after a failure half-way).
    store.delete_tag(organization, tag_id, name)


def delete_all_for_organization(organization: str) -> None:
    """Cascade of an organization delete, after its workspaces: normally nothing is left."""
    for tag in store.organization_tags(organization):
        _delete_tag(organization, tag.id, tag.name)
