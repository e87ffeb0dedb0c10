"""Building a Chalice app from domain blueprints, the same way for every route group."""

from __future__ import annotations

import logging

from chalice import Blueprint, Chalice

from chalicelib.core.http import install_middleware


def create_app(name: str, blueprints: list[Blueprint]) -> Chalice:
    app = Chalice(app_name=name)
    app.log.setLevel(logging.INFO)
    logging.getLogger("registry").setLevel(logging.INFO)
    # JSON:API clients send their own media type; Chalice must pass bodies through as-is.
    app.api.binary_types = [t for t in app.api.binary_types if t != "application/json"]
    install_middleware(app)
    for blueprint in blueprints:
        app.register_blueprint(blueprint)
    return app
