"""Route group ``meta``: /api/v2/ping and the discovery document. Nothing else is imported."""

from chalicelib.entry.factory import create_app
from chalicelib.meta.routes import bp

app = create_app("registry-meta", [bp])
