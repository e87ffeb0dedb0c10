"""Route group ``accounts``: organizations, users, teams and tokens."""

from chalicelib.accounts.routes import bp
from chalicelib.entry.factory import create_app
from chalicelib.lifecycle.organization_routes import bp as organization_lifecycle

app = create_app("registry-accounts", [bp, organization_lifecycle])
