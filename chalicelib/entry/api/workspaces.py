"""Route group ``workspaces``: workspaces, the organization tags that label them, and the
projects that hold them (with their key/value tag bindings)."""

from chalicelib.entry.factory import create_app
from chalicelib.lifecycle.workspace_routes import bp as workspace_lifecycle
from chalicelib.projects.routes import bp as project_routes
from chalicelib.tags.routes import bp as tag_routes
from chalicelib.workspaces.routes import bp as workspace_routes

app = create_app(
    "registry-workspaces", [workspace_routes, workspace_lifecycle, tag_routes, project_routes]
)
