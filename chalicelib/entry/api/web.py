"""Route group ``web``: the browser UI's everyday pages (browsing modules and providers,
sign-in by password, token or SSO, ``terraform login``, the account page, static assets).

The rarer, heavier pages (site administration, people management, publishing) are the
``webadmin`` group's, so a cold start here loads none of their services.
"""

from chalicelib.entry.factory import create_app
from chalicelib.entry.wiring import Uses
from chalicelib.web.account_routes import bp as account_bp
from chalicelib.web.login import bp as login_bp
from chalicelib.web.people.account import bp as account_page_bp
from chalicelib.web.providers import bp as providers_bp
from chalicelib.web.routes import bp
from chalicelib.web.sso import bp as sso_bp

# Password reset and email confirmation links are mailed.
app = create_app(
    "registry-web",
    [bp, account_bp, account_page_bp, login_bp, sso_bp, providers_bp],
    Uses(mail=True),
)
