"""Route group ``scim``: the SCIM 2.0 service provider identity providers call (/scim/v2)
and SCIM's site administration (settings, tokens, groups, team links)."""

from chalicelib.entry.factory import create_app
from chalicelib.scim.admin_routes import bp as admin_routes
from chalicelib.scim.routes import bp as scim_routes

app = create_app("registry-scim", [scim_routes, admin_routes])
