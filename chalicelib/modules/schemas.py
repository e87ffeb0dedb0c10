"""Request bodies of the registry-modules routes: each handler that takes one names its type
(``chalicelib.core.api.http.typed_body``)."""

from __future__ import annotations

from chalicelib.core.api.attributes import (
    Attributes,
    Description,
    Identifier,
    Name,
    Timestamp,
    Url,
    Version,
)
from chalicelib.modules.publishing.schemas import TestConfigAttributes, VcsRepoAttributes


class CreateModule(Attributes):
    name: Name | None = None
    provider: Name | None = None
    namespace: Name | None = None
    registry_name: Name | None = None
    no_code: bool | None = None


class UpdateModule(Attributes):
    no_code: bool | None = None
    test_config: TestConfigAttributes | None = None
    vcs_repo: VcsRepoAttributes | None = None


class CreateVersion(Attributes):
    version: Version | None = None
    commit_sha: Identifier | None = None


class VersionDeprecation(Attributes):
    deprecated_status: Identifier | None = None
    reason: Description | None = None
    link: Url | None = None
    # When the registry revokes the version (ISO 8601 with its zone; ``versions._revoke_at``).
    revoke_at: Timestamp | None = None


class VersionRevocation(Attributes):
    status: Identifier | None = None
    message: Description | None = None
    link: Url | None = None


class ReleaseVersion(Attributes):
    """Why a quarantined version may be served after all (required: checked by the service)."""

    reason: Description | None = None


class UpdateVersion(Attributes):
    deprecation: VersionDeprecation | None = None
    revocation: VersionRevocation | None = None
