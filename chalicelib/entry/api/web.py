"""Route group ``web``: the browser UI (HTML pages, sign-in sessions, static assets)."""

from chalicelib.entry.factory import create_app
from chalicelib.web.login import bp as login_bp
from chalicelib.web.routes import bp

app = create_app("registry-web", [bp, login_bp])
