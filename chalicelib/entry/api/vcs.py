"""Route group ``vcs``: VCS connections (OAuth clients and their OAuth tokens)."""

from chalicelib.entry.factory import create_app
from chalicelib.vcs.routes import bp

app = create_app("registry-vcs", [bp])
