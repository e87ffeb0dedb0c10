"""Request bodies of VCS publishing (``vcs-repo`` and friends), in a module of their own so
the registry routes can parse a PATCH's ``vcs-repo`` without importing the VCS machinery."""

from __future__ import annotations

from chalicelib.core.api.attributes import Attributes, Identifier, Name, Path, Version


class VcsRepoAttributes(Attributes):
    identifier: Path | None = None
    oauth_token_id: Identifier | None = None
    github_app_installation_id: Identifier | None = None
    display_identifier: Path | None = None
    organization_name: Name | None = None
    branch: Name | None = None
    tags: bool | None = None
    tag_prefix: Name | None = None
    source_directory: Path | None = None
    ingress_submodules: bool | None = None


class TestConfigAttributes(Attributes):
    tests_enabled: bool | None = None


class PublishAttributes(Attributes):
    name: Name | None = None
    provider: Name | None = None
    no_code: bool | None = None
    initial_version: Version | None = None
    test_config: TestConfigAttributes | None = None
    vcs_repo: VcsRepoAttributes | None = None
