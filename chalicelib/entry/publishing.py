"""Route group ``publishing``: publishing modules from VCS (publish, resync, retry, webhook
secret, commits)."""

from chalicelib.core.app import create_app
from chalicelib.registry.publishing_routes import bp

app = create_app("registry-publishing", [bp])
