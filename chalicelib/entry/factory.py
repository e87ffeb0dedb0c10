"""Building a Chalice app from domain blueprints, the same way for every route group."""

from __future__ import annotations

import logging
import threading
from typing import Any

from chalice import Blueprint, Chalice

from chalicelib.admin.ratelimit import rate_limit
from chalicelib.core.api.http import install_middleware, install_request_log
from chalicelib.entry import function_url
from chalicelib.entry.wiring import Uses, wire


class RegistryApp(Chalice):
    """Chalice with a per-thread ``current_request``.

    Chalice keeps the request in one attribute of the app; Lambda runs one request per
    process so that is fine there, but the threaded local server (``make run``) would let
    parallel requests read each other's request. Blueprints read it through the app.
    """

    _requests = threading.local()
    uses = Uses()  # what ``create_app`` wired for this app's handlers

    @property
    def current_request(self) -> Any:
        return getattr(self._requests, "request", None)

    @current_request.setter
    def current_request(self, value: Any) -> None:
        self._requests.request = value

    def __call__(self, event: Any, context: Any) -> Any:
        """REST's proxy events as Chalice reads them; a function URL's (payload 2.0)
        rewritten to one and its answer back (``entry.function_url``)."""
        if not function_url.is_url_event(event):
            return super().__call__(event, context)
        rest = function_url.rest_event(event, self.routes)
        if rest is None:
            return dict(function_url.NOT_FOUND)
        return function_url.url_response(super().__call__(rest, context))

    def _register_route(self, name: str, user_handler: Any, kwargs: Any, **unused: Any) -> None:
        """Chalice pops ``methods`` (and more) out of a blueprint's recorded arguments as it
        registers a route, so a blueprint registered in a second app (``app.py`` and a
        function's entry app, in one process: the route-walking test) would get every route
        as a GET: register from a copy."""
        copied = {**kwargs, "kwargs": dict(kwargs["kwargs"])}
        super()._register_route(name, user_handler, copied, **unused)


def create_app(name: str, blueprints: list[Blueprint], uses: Uses | None = None) -> Chalice:
    """The app of ``blueprints``, with what its handlers reach wired in (``uses``: mail, the
    SCIM status; see ``entry.wiring``)."""
    app = RegistryApp(app_name=name)
    app.uses = uses or Uses()
    wire(app.uses)
    app.log.setLevel(logging.INFO)
    logging.getLogger("registry").setLevel(logging.INFO)
    # JSON:API clients send their own media type; Chalice must pass bodies through as-is.
    app.api.binary_types = [t for t in app.api.binary_types if t != "application/json"]
    # Outermost: one log line per request, rate-limited ones included (core.observe).
    install_request_log(app)
    # Next: a request over the API rate limit never reaches its handler.
    app.register_middleware(rate_limit, "http")
    install_middleware(app)
    for blueprint in blueprints:
        app.register_blueprint(blueprint)
    return app
