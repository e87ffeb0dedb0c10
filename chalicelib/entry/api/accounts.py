"""Route group ``accounts``: organizations, users, teams and tokens, and their site
administration (``/api/v2/admin/users``, ``/api/v2/admin/organizations``)."""

from chalicelib.accounts import memberships, render
from chalicelib.accounts.routes import bp
from chalicelib.accounts.teams.routes import bp as teams
from chalicelib.admin.people_routes import bp as admin_people
from chalicelib.entry.factory import create_app
from chalicelib.lifecycle.admin_routes import bp as admin_organization_lifecycle
from chalicelib.lifecycle.organization_routes import bp as organization_lifecycle

# Invitations, password resets and email confirmations go out through the site's SMTP
# settings (accounts may not import admin).
memberships.use_mail("chalicelib.admin.mail")
# Users show ``is-scim-managed`` while SCIM is on (accounts may not import scim).
render.use_scim_probe("chalicelib.scim.store:load_settings")

app = create_app(
    "registry-accounts",
    [bp, teams, organization_lifecycle, admin_people, admin_organization_lifecycle],
)
