"""Route group ``webadmin``: the browser UI's rarer, heavier pages: site administration,
people management (members, teams, invitations, the organization's token), publishing
(modules, versions, VCS connections) and the audit trail's pages. The everyday pages are the
``web`` group's.
"""

from chalicelib.entry.factory import create_app
from chalicelib.entry.wiring import Uses
from chalicelib.web.audit.pages import bp as audit_bp
from chalicelib.web.people import members, teams  # noqa: F401 - register their pages on bp
from chalicelib.web.people.common import bp as people_bp
from chalicelib.web.publishing import bp as publishing_bp
from chalicelib.web.siteadmin.cache_routes import bp as siteadmin_cache_bp
from chalicelib.web.siteadmin.keys_routes import bp as siteadmin_keys_bp
from chalicelib.web.siteadmin.people_routes import bp as siteadmin_people_bp
from chalicelib.web.siteadmin.settings_routes import bp as siteadmin_settings_bp

# Invitations are mailed.
app = create_app(
    "registry-webadmin",
    [people_bp, publishing_bp, siteadmin_people_bp, siteadmin_settings_bp, siteadmin_keys_bp]
    + [audit_bp]
    + [siteadmin_cache_bp],
    Uses(mail=True),
)
