"""Route group ``accounts``: organizations, users, teams and tokens."""

from chalicelib.accounts.routes import bp
from chalicelib.core.app import create_app

app = create_app("registry-accounts", [bp])
