"""Route group ``protocol``: the module registry protocol and the public proxy (hot path)."""

from chalicelib.core.app import create_app
from chalicelib.registry.protocol_routes import bp

app = create_app("registry-protocol", [bp])
