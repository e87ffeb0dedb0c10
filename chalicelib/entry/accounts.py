"""Route group ``accounts``: organizations, users, teams and tokens."""

from chalicelib.accounts.routes import bp
from chalicelib.entry.factory import create_app

app = create_app("registry-accounts", [bp])
