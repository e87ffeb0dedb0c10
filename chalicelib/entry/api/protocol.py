"""Route group ``protocol``: the module registry protocol and the public proxy (hot path)."""

from chalicelib.entry.factory import create_app
from chalicelib.modules.protocol.routes import bp

app = create_app("registry-protocol", [bp])
