"""Route group ``admin``: site-admin settings under /api/v2/admin, the public JWKS, and
air-gapped bundles' jobs (``chalicelib.bundles.routes``)."""

from chalicelib.admin.routes import bp
from chalicelib.bundles.routes import bp as bundle_routes
from chalicelib.entry.factory import create_app

app = create_app("registry-admin", [bp, bundle_routes])
