"""Route group ``accounts``: organizations, users, teams and tokens, and their site
administration (``/api/v2/admin/users``, ``/api/v2/admin/organizations``), and the audit
trail (the organization's, and the site admins' ``/api/v2/admin/audit-trail``)."""

from chalicelib.accounts.routes import bp
from chalicelib.accounts.teams.routes import bp as teams
from chalicelib.admin.people_routes import bp as admin_people
from chalicelib.audit.routes import bp as audit_trail
from chalicelib.entry.factory import create_app
from chalicelib.entry.wiring import Uses
from chalicelib.lifecycle.admin_routes import bp as admin_organization_lifecycle
from chalicelib.lifecycle.organization_routes import bp as organization_lifecycle

# Invitations, password resets and email confirmations are mailed; users show
# ``is-scim-managed`` while SCIM is on; an organization cannot take a namespace the module
# cache serves.
app = create_app(
    "registry-accounts",
    [bp, teams, organization_lifecycle, admin_people, admin_organization_lifecycle, audit_trail],
    Uses(mail=True, scim=True, namespaces=True),
)
