"""Route group ``registry``: the registry-modules JSON:API (create, version, read, delete)."""

from chalicelib.entry.factory import create_app
from chalicelib.modules.nocode.routes import bp as nocode_bp
from chalicelib.modules.routes import bp
from chalicelib.modules.scanning.routes import bp as scanning_bp

app = create_app("registry-modules", [bp, nocode_bp, scanning_bp])
