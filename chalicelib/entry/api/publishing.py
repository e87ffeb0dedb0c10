"""Route group ``publishing``: publishing modules from VCS (publish, resync, retry, webhook
secret, commits)."""

from chalicelib.entry.factory import create_app
from chalicelib.modules.publishing.routes import bp

app = create_app("registry-publishing", [bp])
