"""Route group ``meta``: /api/v2/ping and the discovery document. Nothing else is imported."""

from chalicelib.core.app import create_app
from chalicelib.core.meta_routes import bp

app = create_app("registry-meta", [bp])
