"""Route group ``vcs``: VCS connections (OAuth clients and their OAuth tokens)."""

from chalicelib.core.app import create_app
from chalicelib.vcs.routes import bp

app = create_app("registry-vcs", [bp])
