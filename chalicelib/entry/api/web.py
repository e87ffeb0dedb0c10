"""Route group ``web``: the browser UI (HTML pages, sign-in sessions, static assets)."""

from chalicelib.accounts import memberships
from chalicelib.entry.factory import create_app
from chalicelib.web.account_routes import bp as account_bp
from chalicelib.web.login import bp as login_bp
from chalicelib.web.people import bp as people_bp
from chalicelib.web.providers import bp as providers_bp
from chalicelib.web.publishing import bp as publishing_bp
from chalicelib.web.routes import bp
from chalicelib.web.siteadmin.keys_routes import bp as siteadmin_keys_bp
from chalicelib.web.siteadmin.people_routes import bp as siteadmin_people_bp
from chalicelib.web.siteadmin.settings_routes import bp as siteadmin_settings_bp
from chalicelib.web.sso import bp as sso_bp

# Password reset links go out through the site's SMTP settings (accounts may not import
# admin).
memberships.use_mail("chalicelib.admin.mail")

app = create_app(
    "registry-web",
    [bp, account_bp, login_bp, sso_bp, people_bp, publishing_bp, providers_bp]
    + [siteadmin_people_bp, siteadmin_settings_bp, siteadmin_keys_bp],
)
