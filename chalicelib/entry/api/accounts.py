"""Route group ``accounts``: organizations, users, teams and tokens."""

from chalicelib.accounts import memberships
from chalicelib.accounts.routes import bp
from chalicelib.entry.factory import create_app
from chalicelib.lifecycle.organization_routes import bp as organization_lifecycle

# Invitations go out through the site's SMTP settings (accounts may not import admin).
memberships.use_mailer("chalicelib.admin.mail:send_invitation")

app = create_app("registry-accounts", [bp, organization_lifecycle])
