"""Route group ``admin``: site-admin settings under /api/v2/admin (the module cache's among
them) and the public JWKS."""

from chalicelib.admin.routes import bp
from chalicelib.entry.factory import create_app
from chalicelib.modules.cache.settings_routes import bp as module_cache_settings

app = create_app("registry-admin", [bp, module_cache_settings])
