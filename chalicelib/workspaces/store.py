"""PynamoDB models of workspaces.

A workspace item is keyed by its id (``ws-...``): every read and every tag transaction
addresses it directly. Its name is claimed by a second item keyed by (organization, name),
written in the same transaction as the workspace, so names are unique per organization
without reading an index. Listing an organization's workspaces is one Query on the
``by-organization`` index, name-ordered.

``tags`` maps tag id -> ``{"name": ..., "seq": ...}`` (``seq`` = insertion order). It is
changed only in the transactions that also write the tag relationship item and the tag's
``instance-count`` (see chalicelib/tags/store.py), so it never disagrees with them.
"""

from __future__ import annotations

from pynamodb.attributes import (
    BooleanAttribute,
    ListAttribute,
    MapAttribute,
    UnicodeAttribute,
    UTCDateTimeAttribute,
)
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex

from chalicelib.core import db


class WorkspacesByOrganization(GlobalSecondaryIndex):
    class Meta:
        index_name = "by-organization"
        projection = AllProjection()

    organization = UnicodeAttribute(hash_key=True)
    name = UnicodeAttribute(range_key=True)


@db.register
class WorkspaceModel(db.Model):
    Meta = db.table("workspaces")

    id = UnicodeAttribute(hash_key=True)
    organization = UnicodeAttribute()
    name = UnicodeAttribute()
    description = UnicodeAttribute(null=True)
    auto_apply = BooleanAttribute(default=False)
    allow_destroy_plan = BooleanAttribute(default=True)
    assessments_enabled = BooleanAttribute(default=False)
    execution_mode = UnicodeAttribute(default="remote")
    file_triggers_enabled = BooleanAttribute(default=True)
    global_remote_state = BooleanAttribute(default=False)
    queue_all_runs = BooleanAttribute(default=False)
    speculative_enabled = BooleanAttribute(default=True)
    structured_run_output_enabled = BooleanAttribute(default=True)
    terraform_version = UnicodeAttribute(default="latest")
    working_directory = UnicodeAttribute(default="")
    source_name = UnicodeAttribute(null=True)
    source_url = UnicodeAttribute(null=True)
    trigger_prefixes = ListAttribute(of=UnicodeAttribute, default=list)
    trigger_patterns = ListAttribute(of=UnicodeAttribute, default=list)
    locked = BooleanAttribute(default=False)
    tags = MapAttribute(default=dict)
    # Set while the workspace is being deleted: no tag can be added from then on.
    deleting = BooleanAttribute(null=True)
    created_at = UTCDateTimeAttribute()
    updated_at = UTCDateTimeAttribute()
    by_organization = WorkspacesByOrganization()


@db.register
class WorkspaceNameModel(db.Model):
    """The claim of a workspace name in an organization: (organization, name) -> id."""

    Meta = db.table("workspace-names")

    organization = UnicodeAttribute(hash_key=True)
    name = UnicodeAttribute(range_key=True)
    workspace_id = UnicodeAttribute()


def tag_entries(workspace: WorkspaceModel) -> list[tuple[str, str]]:
    """(tag id, tag name) of the workspace's tags in insertion order."""
    raw = workspace.tags.as_dict() if workspace.tags else {}
    ordered = sorted(raw.items(), key=lambda kv: (int(kv[1].get("seq", 0)), kv[0]))
    return [(tag_id, str(entry["name"])) for tag_id, entry in ordered]
