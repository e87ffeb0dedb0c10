"""Projects and key/value tag bindings with pytfe 1.5.0, unchanged, against the real local stack.

Every call goes through pytfe's own request building and response parsing. One pytfe quirk is
tolerated, not emulated: ``workspaces.list_effective_tag_bindings`` reads ``links`` from the
binding's ``attributes``, where TFE never puts them, so its ``links`` are always ``{}``;
``projects.list_effective_tag_bindings`` reads them from the resource, as TFE sends them, and
the inherited-from link is checked over raw HTTP.
"""

from __future__ import annotations

import pytest

pytest.importorskip("pytfe")

from pytfe import TFEClient, TFEConfig
from pytfe.errors import TFEError
from pytfe.models import OrganizationCreateOptions
from pytfe.models.common import TagBinding
from pytfe.models.project import (
    Project,
    ProjectAddTagBindingsOptions,
    ProjectCreateOptions,
    ProjectListOptions,
    ProjectUpdateOptions,
)
from pytfe.models.workspace import (
    WorkspaceAddTagBindingsOptions,
    WorkspaceCreateOptions,
    WorkspaceListOptions,
)

from tests.e2e.conftest import ADMIN_TOKEN, Stack

pytestmark = pytest.mark.e2e

ORG = "bindings-co"


def test_projects_and_tag_bindings_through_pytfe(stack: Stack) -> None:
    config = TFEConfig(
        address=stack.url, token=ADMIN_TOKEN, max_retries=1, timeout=15, ca_bundle=None
    )
    client = TFEClient(config)
    client.organizations.create(OrganizationCreateOptions(name=ORG, email="ops@bindings.io"))
    try:
        # a project with tag bindings
        project = client.projects.create(
            ORG,
            ProjectCreateOptions(
                name="Platform",
                description="shared services",
                tag_bindings=[
                    TagBinding(key="env", value="prod"),
                    TagBinding(key="owner", value="ops"),
                ],
            ),
        )
        assert project.id.startswith("prj-") and project.name == "Platform"
        assert project.description == "shared services" and project.workspace_count == 0
        assert project.organization is not None and project.organization.id == ORG
        bindings = client.projects.list_tag_bindings(project.id)
        assert {(b.key, b.value) for b in bindings} == {("env", "prod"), ("owner", "ops")}
        names = [p.name for p in client.projects.list(ORG)]
        assert sorted(names) == ["Default Project", "Platform"]
        found = list(client.projects.list(ORG, ProjectListOptions(query="plat")))
        assert [p.id for p in found] == [project.id]

        # a workspace in it, with its own bindings (one overriding the project's)
        workspace = client.workspaces.create(
            ORG,
            WorkspaceCreateOptions(
                name="web",
                project=Project(id=project.id),
                tag_bindings=[
                    TagBinding(key="team", value="web"),
                    TagBinding(key="env", value="dev"),
                ],
            ),
        )
        assert workspace.project is not None and workspace.project.id == project.id
        other = client.workspaces.create(
            ORG, WorkspaceCreateOptions(name="db", project=Project(id=project.id))
        )
        assert client.projects.read(project.id).workspace_count == 2

        own = list(client.workspaces.list_tag_bindings(workspace.id))
        assert {(b.key, b.value) for b in own} == {("team", "web"), ("env", "dev")}
        effective = list(client.workspaces.list_effective_tag_bindings(workspace.id))
        assert {(b.key, b.value) for b in effective} == {
            ("team", "web"),
            ("env", "dev"),
            ("owner", "ops"),
        }
        raw = stack.session().get(stack.api(f"/workspaces/{workspace.id}/effective-tag-bindings"))
        inherited = [b for b in raw.json()["data"] if "links" in b]
        assert [(b["attributes"]["key"], b["links"]["inherited-from"]) for b in inherited] == [
            ("owner", f"/api/v2/projects/{project.id}")
        ]

        # add bindings: adds and updates, never removes; the whole set comes back
        added = list(
            client.workspaces.add_tag_bindings(
                workspace.id,
                WorkspaceAddTagBindingsOptions(
                    tag_bindings=[
                        TagBinding(key="tier", value="1"),
                        TagBinding(key="team", value="edge"),
                    ]
                ),
            )
        )
        assert {(b.key, b.value) for b in added} == {
            ("team", "edge"),
            ("env", "dev"),
            ("tier", "1"),
        }
        on_project = client.projects.add_tag_bindings(
            project.id,
            ProjectAddTagBindingsOptions(tag_bindings=[TagBinding(key="cost", value="42")]),
        )
        assert {b.key for b in on_project} == {"env", "owner", "cost"}
        project_effective = list(client.projects.list_effective_tag_bindings(project.id))
        assert {b.key for b in project_effective} == {"env", "owner", "cost"}
        assert all(b.links == {} for b in project_effective)  # a project inherits nothing

        # filter the workspace list by tagged key/value (effective bindings)
        def tagged(*pairs: tuple[str, str | None]) -> list[str]:
            options = WorkspaceListOptions(
                tag_bindings=[TagBinding(key=k, value=v) for k, v in pairs]
            )
            return sorted(w.name for w in client.workspaces.list(ORG, options))

        assert tagged(("env", "prod")) == ["db"]  # web's own env=dev wins over the project's
        assert tagged(("env", "dev")) == ["web"]
        assert tagged(("cost", "42")) == ["db", "web"]
        assert tagged(("tier", None)) == ["web"]
        assert tagged(("owner", "ops"), ("team", "edge")) == ["web"]

        # project updates: a rename, then clearing its bindings (pytfe's delete_tag_bindings)
        renamed = client.projects.update(project.id, ProjectUpdateOptions(name="Platform Core"))
        assert renamed.name == "Platform Core"
        client.projects.delete_tag_bindings(project.id)
        assert client.projects.list_tag_bindings(project.id) == []
        assert tagged(("cost", None)) == []
        client.workspaces.delete_all_tag_bindings(workspace.id)
        assert list(client.workspaces.list_tag_bindings(workspace.id)) == []

        # delete: refused while workspaces remain, then gone
        with pytest.raises(TFEError):
            client.projects.delete(project.id)
        client.workspaces.delete_by_id(workspace.id)
        client.workspaces.delete_by_id(other.id)
        client.projects.delete(project.id)
        assert [p.name for p in client.projects.list(ORG)] == ["Default Project"]
    finally:
        client.organizations.delete(ORG)
