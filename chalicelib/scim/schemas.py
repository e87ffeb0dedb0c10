"""Request attribute models of the SCIM admin API (types and single-value rules)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from chalicelib.core.api.attributes import Attributes, Description, Timestamp

ScimId = Annotated[str, Field(min_length=1, max_length=256)]


class ScimSettings(Attributes):
    """Every attribute optional; ``site-admin-group-scim-id: null`` unlinks the group (the
    route tells "null" from "not sent")."""

    enabled: bool | None = None
    paused: bool | None = None
    site_admin_group_scim_id: ScimId | None = None
    link_existing_users: bool | None = None


class ScimTokenCreate(Attributes):
    description: Description | None = None
    expired_at: Timestamp | None = None


class ScimGroupMappingCreate(Attributes):
    scim_group_id: ScimId


class ScimGroupMappingUpdate(Attributes):
    scim_sync_paused: bool
