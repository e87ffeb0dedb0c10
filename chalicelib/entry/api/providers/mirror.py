"""Route group ``mirror``: the provider network mirror (``/api/registry/mirror/v1``: its
pull-through cache of public registries and the admin's seed upload). Its own function: it
calls the upstream and streams large archives, so it has its own timeout, memory and
permissions, and a slow upstream holds only its instances (infrastructure/groups.py)."""

from chalicelib.entry.factory import create_app
from chalicelib.providers.mirror.routes import bp as mirror_routes

app = create_app("registry-mirror", [mirror_routes])
