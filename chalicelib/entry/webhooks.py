"""Route group ``webhooks``: VCS hosts' push and tag deliveries."""

from chalicelib.core.app import create_app
from chalicelib.registry.webhook_routes import bp

app = create_app("registry-webhooks", [bp])
