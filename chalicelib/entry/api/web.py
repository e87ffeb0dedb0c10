"""Route group ``web``: the browser UI (HTML pages, sign-in sessions, static assets)."""

from chalicelib.entry.factory import create_app
from chalicelib.web.login import bp as login_bp
from chalicelib.web.routes import bp
from chalicelib.web.sso import bp as sso_bp

app = create_app("registry-web", [bp, login_bp, sso_bp])
