"""PynamoDB models of organization tags and of the workspace-tag relationships.

* ``tags``: (organization, name) -> id, created-at, ``instance_count``. The key makes a name
  unique per organization (creates are conditional) and listing an organization's tags one
  Query on its partition, name-ordered.
* ``tag-ids``: id -> (organization, name), for the routes addressed by tag id.
* ``tag-workspaces``: one item per (tag id, workspace id) pair: the workspaces of a tag are
  one Query on the tag's partition (strongly consistent, so a bulk delete sees every pair).

``instance_count`` is exact because it only changes inside a transaction that also puts or
deletes the pair item under a condition (the pair must not exist / must exist), and updates
the workspace's ``tags`` map. A tag whose count would reach 0 is deleted in that same
transaction (TFE drops tags no longer on any workspace), so a listed tag always has
``instance-count >= 1``.
"""

from __future__ import annotations

from pynamodb.attributes import (
    BooleanAttribute,
    NumberAttribute,
    UnicodeAttribute,
    UTCDateTimeAttribute,
)

from chalicelib.core import db


@db.register
class TagModel(db.Model):
    Meta = db.table("tags")

    organization = UnicodeAttribute(hash_key=True)
    name = UnicodeAttribute(range_key=True)
    id = UnicodeAttribute()
    instance_count = NumberAttribute(default=0)
    # Set by a bulk delete before it detaches the tag: no workspace can be added from then on.
    deleting = BooleanAttribute(null=True)
    created_at = UTCDateTimeAttribute()


@db.register
class TagIdModel(db.Model):
    Meta = db.table("tag-ids")

    id = UnicodeAttribute(hash_key=True)
    organization = UnicodeAttribute()
    name = UnicodeAttribute()


@db.register
class TagWorkspaceModel(db.Model):
    Meta = db.table("tag-workspaces")

    tag_id = UnicodeAttribute(hash_key=True)
    workspace_id = UnicodeAttribute(range_key=True)
    organization = UnicodeAttribute()
    created_at = UTCDateTimeAttribute()
