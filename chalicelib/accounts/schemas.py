"""Request bodies of the accounts routes: each handler that takes one names its type
(``chalicelib.core.api.http.typed_body``)."""

from __future__ import annotations

from chalicelib.core.api.attributes import (
    Attributes,
    Description,
    Email,
    Identifier,
    Name,
    Secret,
    Timestamp,
)


class OrganizationAttributes(Attributes):
    name: Name | None = None
    email: Email | None = None


class TeamAccess(Attributes):
    manage_modules: bool | None = None
    manage_workspaces: bool | None = None
    manage_policies: bool | None = None
    manage_providers: bool | None = None
    manage_vcs_settings: bool | None = None
    manage_membership: bool | None = None
    manage_projects: bool | None = None
    read_workspaces: bool | None = None
    read_projects: bool | None = None

    def flags(self) -> dict[str, bool]:
        return {k: v for k, v in self.model_dump().items() if v is not None}


class TeamAttributes(Attributes):
    name: Name | None = None
    visibility: Identifier | None = None
    organization_access: TeamAccess | None = None

    def flags(self) -> dict[str, bool]:
        return self.organization_access.flags() if self.organization_access else {}


class TokenAttributes(Attributes):
    description: Description | None = None
    expired_at: Timestamp | None = None


class MembershipAttributes(Attributes):
    email: Email | None = None


class AccountAttributes(Attributes):
    """``PATCH /account/update``: the caller's new username and email address."""

    username: Name | None = None
    email: Email | None = None


class PasswordAttributes(Attributes):
    """``PATCH /account/password`` (kebab names, or TFE's documented snake ones)."""

    current_password: Secret | None = None
    password: Secret | None = None
    password_confirmation: Secret | None = None
