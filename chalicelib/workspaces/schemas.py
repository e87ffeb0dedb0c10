"""A workspace's request body (the type of its handlers' body parameter)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from chalicelib.core.api.attributes import (
    Attributes,
    Description,
    Identifier,
    Name,
    Path,
    Url,
    Version,
)
from chalicelib.workspaces.service import (
    MAX_TAG_NAME_LENGTH,
    MAX_TAG_NAMES,
    MAX_TRIGGER_PATH_LENGTH,
    MAX_TRIGGER_PATHS,
)

TriggerPaths = Annotated[
    list[Annotated[str, Field(max_length=MAX_TRIGGER_PATH_LENGTH)]],
    Field(max_length=MAX_TRIGGER_PATHS),
]
TagNames = Annotated[
    list[Annotated[str, Field(max_length=MAX_TAG_NAME_LENGTH)]], Field(max_length=MAX_TAG_NAMES)
]


class WorkspaceBody(Attributes):
    name: Name | None = None
    description: Description | None = None
    auto_apply: bool | None = None
    allow_destroy_plan: bool | None = None
    assessments_enabled: bool | None = None
    execution_mode: Identifier | None = None
    operations: bool | None = None
    file_triggers_enabled: bool | None = None
    global_remote_state: bool | None = None
    queue_all_runs: bool | None = None
    speculative_enabled: bool | None = None
    structured_run_output_enabled: bool | None = None
    terraform_version: Version | None = None
    working_directory: Path | None = None
    source_name: Name | None = None
    source_url: Url | None = None
    trigger_prefixes: TriggerPaths | None = None
    trigger_patterns: TriggerPaths | None = None
    tag_names: TagNames | None = None
