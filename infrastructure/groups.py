"""The route groups: one Lambda function each, with its entry module and its permissions.

Chalice packages every route into one function (``APIHandler``); ``infrastructure.template``
turns this table into extra functions and re-points each route's API Gateway integration at
its group's function, reading the routes from the entry modules so the two cannot drift.
"""

from __future__ import annotations

from dataclasses import dataclass, field

READ = "read"
WRITE = "write"

# What authenticating a request reads (tokens -> users/teams -> organizations, settings).
AUTH_TABLES = {
    "tokens": READ,
    "users": READ,
    "teams": READ,
    "organizations": READ,
    "settings": READ,
}


@dataclass(frozen=True)
class Function:
    """A Lambda function: ``logical_id`` in the template, ``handler`` as Lambda names it."""

    logical_id: str
    handler: str
    tables: dict[str, str] = field(default_factory=dict)
    s3_actions: tuple[str, ...] = ()
    memory: int = 512
    timeout: int = 30

    @property
    def entry_module(self) -> str:
        return self.handler.rsplit(".", 1)[0]


REGISTRY_WRITE = {"registry-modules": WRITE, "registry-module-versions": WRITE}

# APIHandler is the function Chalice generates; it serves the accounts group.
ROUTE_GROUPS: tuple[Function, ...] = (
    Function(
        "APIHandler",
        "chalicelib.entry.accounts.app",
        {
            **AUTH_TABLES,
            "organizations": WRITE,
            "users": WRITE,
            "teams": WRITE,
            "tokens": WRITE,
            **REGISTRY_WRITE,
        },
        s3_actions=("s3:DeleteObject",),
    ),
    Function("MetaFunction", "chalicelib.entry.meta.app", {"settings": READ}, memory=256),
    Function(
        "RegistryFunction",
        "chalicelib.entry.registry.app",
        {**AUTH_TABLES, **REGISTRY_WRITE},
        s3_actions=("s3:PutObject", "s3:DeleteObject"),
    ),
    Function(
        "ProtocolFunction",
        "chalicelib.entry.protocol.app",
        {
            **AUTH_TABLES,
            "registry-modules": READ,
            "registry-module-versions": READ,
            "public-registry-cache": WRITE,
        },
        s3_actions=("s3:GetObject",),
    ),
)

INGEST = Function(
    "Ingest",
    "chalicelib.entry.ingest.ingest",
    REGISTRY_WRITE,
    s3_actions=("s3:GetObject", "s3:PutObject", "s3:DeleteObject"),
    memory=1024,
    timeout=120,
)

# Functions Chalice generates for event handlers in app.py, and where they really live.
EVENT_FUNCTIONS: tuple[Function, ...] = (INGEST,)
