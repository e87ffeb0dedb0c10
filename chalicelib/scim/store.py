"""Storage of SCIM provisioning: the settings singleton, the users and groups an identity
provider pushed, and the links between groups and teams.

* ``scim-settings``: one item (``id = "scim"``).
* ``scim-users``: one item per SCIM user, keyed by its SCIM id; it names the instance user it
  provisioned (``user_id``) and keeps the ids of the groups it belongs to (``group_ids``), so
  that a user's changes reach its groups' teams without reading every group. Indexes: the
  lower-cased ``userName``, the ``externalId``, the instance user, and a directory (every
  SCIM user under one key, sorted by ``userName``) for listing without a Scan.
* ``scim-groups``: one item per group with its members' SCIM ids; indexes on the lower-cased
  ``displayName``, the ``externalId`` and a directory.
* ``scim-mappings``: one item per linked team (a team links to at most one group), with an
  index by group.

SCIM tokens live in the shared tokens table (``chalicelib.core.auth.TokenModel``, kind
``scim``) under ``scim:`` + the SHA-256 of the token: stored hashed like every token, but a
SCIM token never authenticates an API request, nor an API token a SCIM request.
"""

from __future__ import annotations

from typing import Any

from pynamodb.attributes import (
    BooleanAttribute,
    JSONAttribute,
    UnicodeAttribute,
    UnicodeSetAttribute,
    UTCDateTimeAttribute,
    VersionAttribute,
)
from pynamodb.exceptions import PutError, UpdateError
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex

from chalicelib.core.api.errors import Conflict
from chalicelib.core.auth import TokenModel, hash_token
from chalicelib.core.data import db

DIRECTORY = "scim"
SETTINGS_ID = "scim"
TOKEN_KIND = "scim"
TOKEN_OWNER = "scim"


# Longer keys are no id of ours (and DynamoDB refuses keys past 2048 bytes, or empty ones).
MAX_KEY = 512


def _key(value: str) -> bool:
    return 0 < len(value) <= MAX_KEY


def scim_token_hash(secret: str) -> str:
    return "scim:" + hash_token(secret)


@db.register
class ScimSettingsModel(db.Model):
    Meta = db.table("scim-settings")

    id = UnicodeAttribute(hash_key=True)
    enabled = BooleanAttribute(default=False)
    paused = BooleanAttribute(default=False)
    site_admin_group_id = UnicodeAttribute(null=True)
    # Ours, not TFE's: may a new SCIM user be linked to an existing user SCIM did not make
    # (same username and email)? Off unless a site admin turns it on; never a site admin.
    link_existing_users = BooleanAttribute(null=True)
    version = VersionAttribute(null=True)


class UsersByName(GlobalSecondaryIndex):
    class Meta:
        index_name = "by-user-name"
        projection = AllProjection()

    user_name_lower = UnicodeAttribute(hash_key=True)


class UsersByExternalId(GlobalSecondaryIndex):
    class Meta:
        index_name = "by-external-id"
        projection = AllProjection()

    external_id = UnicodeAttribute(hash_key=True)


class UsersByInstanceUser(GlobalSecondaryIndex):
    class Meta:
        index_name = "by-user-id"
        projection = AllProjection()

    user_id = UnicodeAttribute(hash_key=True)


class UsersDirectory(GlobalSecondaryIndex):
    class Meta:
        index_name = "directory"
        projection = AllProjection()

    directory = UnicodeAttribute(hash_key=True)
    user_name_lower = UnicodeAttribute(range_key=True)


@db.register
class ScimUserModel(db.Model):
    Meta = db.table("scim-users")

    id = UnicodeAttribute(hash_key=True)
    user_name = UnicodeAttribute()
    user_name_lower = UnicodeAttribute()
    external_id = UnicodeAttribute(null=True)
    user_id = UnicodeAttribute()
    active = BooleanAttribute(default=True)
    # name, displayName, emails, title ...: the SCIM attributes kept as sent.
    attributes = JSONAttribute(default=dict)
    group_ids = UnicodeSetAttribute(default=set)
    # Whether SCIM made this user a site admin (and so may take it back).
    granted_site_admin = BooleanAttribute(default=False)
    directory = UnicodeAttribute(default=DIRECTORY)
    created_at = UTCDateTimeAttribute()
    updated_at = UTCDateTimeAttribute()
    by_user_name = UsersByName()
    by_external_id = UsersByExternalId()
    by_user_id = UsersByInstanceUser()
    by_directory = UsersDirectory()


class GroupsByName(GlobalSecondaryIndex):
    class Meta:
        index_name = "by-display-name"
        projection = AllProjection()

    display_name_lower = UnicodeAttribute(hash_key=True)


class GroupsByExternalId(GlobalSecondaryIndex):
    class Meta:
        index_name = "by-external-id"
        projection = AllProjection()

    external_id = UnicodeAttribute(hash_key=True)


class GroupsDirectory(GlobalSecondaryIndex):
    class Meta:
        index_name = "directory"
        projection = AllProjection()

    directory = UnicodeAttribute(hash_key=True)
    display_name_lower = UnicodeAttribute(range_key=True)


@db.register
class ScimGroupModel(db.Model):
    Meta = db.table("scim-groups")

    id = UnicodeAttribute(hash_key=True)
    display_name = UnicodeAttribute()
    display_name_lower = UnicodeAttribute()
    external_id = UnicodeAttribute(null=True)
    member_ids = UnicodeSetAttribute(default=set)
    directory = UnicodeAttribute(default=DIRECTORY)
    created_at = UTCDateTimeAttribute()
    updated_at = UTCDateTimeAttribute()
    by_display_name = GroupsByName()
    by_external_id = GroupsByExternalId()
    by_directory = GroupsDirectory()


class MappingsByGroup(GlobalSecondaryIndex):
    class Meta:
        index_name = "by-group"
        projection = AllProjection()

    group_id = UnicodeAttribute(hash_key=True)


@db.register
class ScimMappingModel(db.Model):
    """A team whose membership follows a SCIM group (``paused``: not for now)."""

    Meta = db.table("scim-mappings")

    team_id = UnicodeAttribute(hash_key=True)
    group_id = UnicodeAttribute()
    paused = BooleanAttribute(default=False)
    created_at = UTCDateTimeAttribute()
    by_group = MappingsByGroup()


# ----- settings --------------------------------------------------------------------------------


def load_settings() -> ScimSettingsModel:
    try:
        return ScimSettingsModel.get(SETTINGS_ID, consistent_read=True)
    except ScimSettingsModel.DoesNotExist:
        return ScimSettingsModel(SETTINGS_ID)


def save_versioned(item: db.Model) -> None:
    """Write an item read earlier; 409 when someone else changed it since."""
    try:
        item.save()
    except PutError as exc:
        if db.conditional_failure(exc):
            raise Conflict("changed concurrently; retry the request") from None
        raise


# ----- users and groups ------------------------------------------------------------------------


def get_user(scim_id: str) -> ScimUserModel | None:
    if not _key(scim_id):
        return None
    try:
        return ScimUserModel.get(scim_id, consistent_read=True)
    except ScimUserModel.DoesNotExist:
        return None


def update_user_if_present(scim_id: str, action: Any) -> None:
    """One update of a SCIM user; nothing when it was deleted meanwhile (never a stub)."""
    try:
        ScimUserModel(scim_id).update(actions=[action], condition=ScimUserModel.id.exists())
    except UpdateError as exc:
        if not db.conditional_failure(exc):
            raise


def get_group(scim_id: str) -> ScimGroupModel | None:
    if not _key(scim_id):
        return None
    try:
        return ScimGroupModel.get(scim_id, consistent_read=True)
    except ScimGroupModel.DoesNotExist:
        return None


def users_by_name(user_name: str) -> list[ScimUserModel]:
    if not _key(user_name):
        return []
    return list(ScimUserModel.by_user_name.query(user_name.lower()))


def users_by_external_id(external_id: str) -> list[ScimUserModel]:
    if not _key(external_id):
        return []
    return list(ScimUserModel.by_external_id.query(external_id))


def user_of_instance_user(user_id: str) -> ScimUserModel | None:
    return next(iter(ScimUserModel.by_user_id.query(user_id)), None)


def all_users() -> list[ScimUserModel]:
    return list(ScimUserModel.by_directory.query(DIRECTORY))


def groups_by_name(display_name: str) -> list[ScimGroupModel]:
    if not _key(display_name):
        return []
    return list(ScimGroupModel.by_display_name.query(display_name.lower()))


def groups_by_external_id(external_id: str) -> list[ScimGroupModel]:
    if not _key(external_id):
        return []
    return list(ScimGroupModel.by_external_id.query(external_id))


def all_groups() -> list[ScimGroupModel]:
    return list(ScimGroupModel.by_directory.query(DIRECTORY))


def users_by_ids(ids: set[str]) -> list[ScimUserModel]:
    keys = sorted(i for i in ids if _key(i))
    return list(ScimUserModel.batch_get(keys)) if keys else []


def groups_by_ids(ids: set[str]) -> list[ScimGroupModel]:
    keys = sorted(i for i in ids if _key(i))
    return list(ScimGroupModel.batch_get(keys)) if keys else []


# ----- mappings --------------------------------------------------------------------------------


def get_mapping(team_id: str) -> ScimMappingModel | None:
    if not _key(team_id):
        return None
    try:
        return ScimMappingModel.get(team_id, consistent_read=True)
    except ScimMappingModel.DoesNotExist:
        return None


def mappings_of_group(group_id: str) -> list[ScimMappingModel]:
    return list(ScimMappingModel.by_group.query(group_id))


def insert_mapping(mapping: ScimMappingModel) -> bool:
    """False when the team is already linked."""
    try:
        mapping.save(condition=ScimMappingModel.team_id.does_not_exist())
    except PutError as exc:
        if db.conditional_failure(exc):
            return False
        raise
    return True


# ----- tokens ----------------------------------------------------------------------------------


def token_by_secret(secret: str) -> TokenModel | None:
    try:
        token = TokenModel.get(scim_token_hash(secret))
    except TokenModel.DoesNotExist:
        return None
    return token if token.kind == TOKEN_KIND else None


def token_by_id(token_id: str) -> TokenModel | None:
    if not _key(token_id):
        return None
    token = next(iter(TokenModel.by_id.query(token_id)), None)
    return token if token is not None and token.kind == TOKEN_KIND else None


def all_tokens() -> list[TokenModel]:
    found = TokenModel.by_owner.query(TOKEN_OWNER, filter_condition=TokenModel.kind == TOKEN_KIND)
    return sorted(found, key=lambda t: t.created_at)
