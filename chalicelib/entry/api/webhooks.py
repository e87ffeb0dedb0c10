"""Route group ``webhooks``: VCS hosts' push and tag deliveries."""

from chalicelib.entry.factory import create_app
from chalicelib.modules.publishing.webhook_routes import bp

app = create_app("registry-webhooks", [bp])
