"""Route group ``protocol``: the module registry protocol and the public proxy, and the
provider registry protocol (what ``terraform init`` asks: the hot path), and the site
admins' routes of the module cache (its list and seed: they fetch as the protocol's cache
does, with its table, objects and outbound rules)."""

from chalicelib.entry.factory import create_app
from chalicelib.modules.cache.routes import bp as module_cache
from chalicelib.modules.protocol.routes import bp
from chalicelib.providers.protocol.routes import bp as provider_protocol
from chalicelib.trust.keys_routes import bp as signing_keys

app = create_app("registry-protocol", [bp, provider_protocol, signing_keys, module_cache])
