"""Request bodies of the registry-modules routes, in a module of their own: the routes name
them by path (``Body("chalicelib.modules.schemas:...")``), so pydantic loads with the first
request that sends one and the function's reads never pay for it."""

from __future__ import annotations

from chalicelib.core.api.attributes import Attributes
from chalicelib.modules.publishing.schemas import TestConfigAttributes, VcsRepoAttributes


class CreateModule(Attributes):
    name: str | None = None
    provider: str | None = None
    namespace: str | None = None
    registry_name: str | None = None
    no_code: bool | None = None


class UpdateModule(Attributes):
    no_code: bool | None = None
    test_config: TestConfigAttributes | None = None
    vcs_repo: VcsRepoAttributes | None = None


class CreateVersion(Attributes):
    version: str | None = None
    commit_sha: str | None = None


class VersionDeprecation(Attributes):
    deprecated_status: str | None = None
    reason: str | None = None
    link: str | None = None


class VersionRevocation(Attributes):
    status: str | None = None
    message: str | None = None
    link: str | None = None


class UpdateVersion(Attributes):
    deprecation: VersionDeprecation | None = None
    revocation: VersionRevocation | None = None
