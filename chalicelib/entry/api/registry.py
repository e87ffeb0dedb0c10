"""Route group ``registry``: the registry-modules JSON:API (create, version, read, delete),
the organization's publishing policy and its notification configurations."""

from chalicelib.entry.factory import create_app
from chalicelib.modules.nocode.routes import bp as nocode_bp
from chalicelib.modules.routes import bp
from chalicelib.modules.scanning.evidence_routes import bp as evidence_bp
from chalicelib.modules.scanning.routes import bp as scanning_bp
from chalicelib.notifications.routes import bp as notifications_bp
from chalicelib.trust.routes import bp as policy_bp

app = create_app(
    "registry-modules", [bp, nocode_bp, policy_bp, evidence_bp, scanning_bp, notifications_bp]
)
