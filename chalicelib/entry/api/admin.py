"""Route group ``admin``: site-admin settings under /api/v2/admin and the public JWKS."""

from chalicelib.admin.routes import bp
from chalicelib.entry.factory import create_app

app = create_app("registry-admin", [bp])
