"""Route group ``workspaces``: workspaces and the organization tags that label them."""

from chalicelib.entry.factory import create_app
from chalicelib.tags.routes import bp as tag_routes
from chalicelib.workspaces.routes import bp as workspace_routes

app = create_app("registry-workspaces", [workspace_routes, tag_routes])
