"""PynamoDB models of organizations, users and teams.

Memberships are kept on both sides (``TeamModel.user_ids`` and ``UserModel.team_refs``) so
that a permission check is a GetItem of the user plus a BatchGet of their teams in one
organization, and a team's member list is a single GetItem.
"""

from __future__ import annotations

from pynamodb.attributes import (
    BooleanAttribute,
    MapAttribute,
    UnicodeAttribute,
    UnicodeSetAttribute,
    UTCDateTimeAttribute,
)
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex

from chalicelib.core import db

DIRECTORY = "organizations"


class OrganizationDirectory(GlobalSecondaryIndex):
    """Every organization under one constant key, so listing all of them is a Query."""

    class Meta:
        index_name = "directory"
        projection = AllProjection()

    directory = UnicodeAttribute(hash_key=True)
    name = UnicodeAttribute(range_key=True)


@db.register
class OrganizationModel(db.Model):
    Meta = db.table("organizations")

    name = UnicodeAttribute(hash_key=True)
    external_id = UnicodeAttribute()
    email = UnicodeAttribute()
    directory = UnicodeAttribute(default=DIRECTORY)
    collaborator_auth_policy = UnicodeAttribute(default="password")
    cost_estimation_enabled = BooleanAttribute(default=False)
    session_timeout = UnicodeAttribute(null=True)
    # The organization's single token: its id and the hash it is stored under.
    token_id = UnicodeAttribute(null=True)
    token_hash = UnicodeAttribute(null=True)
    created_at = UTCDateTimeAttribute()
    updated_at = UTCDateTimeAttribute()
    by_directory = OrganizationDirectory()


class UserByName(GlobalSecondaryIndex):
    class Meta:
        index_name = "by-username"
        projection = AllProjection()

    username = UnicodeAttribute(hash_key=True)


@db.register
class UserModel(db.Model):
    Meta = db.table("users")

    id = UnicodeAttribute(hash_key=True)
    username = UnicodeAttribute()
    email = UnicodeAttribute()
    is_site_admin = BooleanAttribute(default=False)
    # "<organization>/<team id>" for every team the user belongs to.
    team_refs = UnicodeSetAttribute(default=set)
    created_at = UTCDateTimeAttribute()
    by_username = UserByName()


class TeamsByOrganization(GlobalSecondaryIndex):
    class Meta:
        index_name = "by-organization"
        projection = AllProjection()

    organization = UnicodeAttribute(hash_key=True)
    name = UnicodeAttribute(range_key=True)


class OrganizationAccess(MapAttribute):
    manage_modules = BooleanAttribute(default=False)
    manage_workspaces = BooleanAttribute(default=False)
    manage_policies = BooleanAttribute(default=False)
    manage_providers = BooleanAttribute(default=False)
    manage_vcs_settings = BooleanAttribute(default=False)
    manage_membership = BooleanAttribute(default=False)
    manage_projects = BooleanAttribute(default=False)
    read_workspaces = BooleanAttribute(default=False)
    read_projects = BooleanAttribute(default=False)


ACCESS_FLAGS = [name for name in OrganizationAccess.get_attributes()]


@db.register
class TeamModel(db.Model):
    Meta = db.table("teams")

    id = UnicodeAttribute(hash_key=True)
    organization = UnicodeAttribute()
    name = UnicodeAttribute()
    visibility = UnicodeAttribute(default="secret")
    sso_team_id = UnicodeAttribute(null=True)
    access = OrganizationAccess(default=OrganizationAccess)
    user_ids = UnicodeSetAttribute(default=set)
    # The team's single token: its id and the hash it is stored under.
    token_id = UnicodeAttribute(null=True)
    token_hash = UnicodeAttribute(null=True)
    created_at = UTCDateTimeAttribute()
    by_organization = TeamsByOrganization()

    @property
    def is_owners(self) -> bool:
        return self.name == "owners"
