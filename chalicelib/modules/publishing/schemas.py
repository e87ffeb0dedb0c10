"""Request bodies of VCS publishing (``vcs-repo`` and friends), in a module of their own so
the registry routes can parse a PATCH's ``vcs-repo`` without importing the VCS machinery, and
the publishing routes name them by path (pydantic loads with the first body)."""

from __future__ import annotations

from chalicelib.core.api.attributes import Attributes


class VcsRepoAttributes(Attributes):
    identifier: str | None = None
    oauth_token_id: str | None = None
    github_app_installation_id: str | None = None
    display_identifier: str | None = None
    organization_name: str | None = None
    branch: str | None = None
    tags: bool | None = None
    tag_prefix: str | None = None
    source_directory: str | None = None
    ingress_submodules: bool | None = None


class TestConfigAttributes(Attributes):
    tests_enabled: bool | None = None


class PublishAttributes(Attributes):
    name: str | None = None
    provider: str | None = None
    no_code: bool | None = None
    initial_version: str | None = None
    test_config: TestConfigAttributes | None = None
    vcs_repo: VcsRepoAttributes | None = None
