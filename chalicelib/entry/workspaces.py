"""Route group ``workspaces``: workspaces and the organization tags that label them."""

from chalicelib.accounts.workspaces.routes import bp as workspace_routes
from chalicelib.core.app import create_app
from chalicelib.tags.routes import bp as tag_routes

app = create_app("registry-workspaces", [workspace_routes, tag_routes])
