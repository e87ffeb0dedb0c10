"""Route group ``admin``: site-admin settings under /api/v2/admin (the module cache's among
them), the public JWKS, and air-gapped bundles' jobs (``chalicelib.bundles.routes``)."""

from chalicelib.admin.routes import bp
from chalicelib.bundles.routes import bp as bundle_routes
from chalicelib.entry.factory import create_app
from chalicelib.modules.cache.settings_routes import bp as module_cache_settings

app = create_app("registry-admin", [bp, module_cache_settings, bundle_routes])
