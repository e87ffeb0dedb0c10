"""Route group ``providers``: the private provider registry's API (GPG keys, providers,
versions and platforms). The network mirror is its own function (``mirror``)."""

from chalicelib.entry.factory import create_app
from chalicelib.providers.gpg_routes import bp as gpg_routes
from chalicelib.providers.routes import bp as provider_routes

app = create_app("registry-providers", [provider_routes, gpg_routes])
