"""A handler's request body comes from its signature (``chalicelib.core.api.http.typed_body``):
``body: Annotated[Model, JsonApi("type")]`` is parsed into the model before the handler runs,
once the caller is admitted, and recorded for the OpenAPI document; the routes' models load
with a body's first request, not with the function."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any

import pytest
from chalice import Chalice, Response
from chalice.test import Client

from chalicelib.core.api import openapi
from chalicelib.core.api.access import Access
from chalicelib.core.api.attributes import Attributes, Name
from chalicelib.core.api.errors import Unauthorized
from chalicelib.core.api.http import Ctx, route, typed_body
from chalicelib.core.api.openapi import Body, JsonApi

PATH = "/api/v2/things/{thing_id}"
HEADERS = {"Content-Type": "application/vnd.api+json"}


class Thing(Attributes):
    name: Name
    size: int | None = None


ThingBody = Annotated[Thing, JsonApi("things")]


def _caller(request: Any) -> Any:
    """A stand-in principal for anyone who says who they are; others are refused."""
    if request.headers.get("authorization") != "Bearer ok":
        raise Unauthorized("who are you?")
    return object()


Caller = Access("caller", _caller)


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Any:
    """A Chalice app with one typed route; what the handler received, in ``api.received``.
    The route's OpenAPI record goes to a throwaway ``SPECS``."""
    monkeypatch.setattr(openapi, "SPECS", {})
    app = Chalice("typed-bodies")
    received: list[tuple[str, Thing]] = []

    @route(app, PATH, ("PATCH",), auth=Caller)
    def update_thing(ctx: Ctx, thing_id: str, body: ThingBody) -> Response:
        received.append((thing_id, body))
        return Response(body={"name": body.name}, status_code=200)

    parsed: list[Any] = []
    real_parse = Body.parse

    def counting_parse(self: Body, document: Any) -> Any:
        parsed.append(document)
        return real_parse(self, document)

    monkeypatch.setattr(Body, "parse", counting_parse)
    with Client(app) as client:
        yield type("Api", (), {"client": client, "received": received, "parsed": parsed})


def _patch(api: Any, document: Any, token: str = "ok") -> Any:
    body = document if isinstance(document, str) else json.dumps(document)
    headers = {**HEADERS, "Authorization": f"Bearer {token}"}
    return api.client.http.patch("/api/v2/things/t-1", headers=headers, body=body)


def test_the_handler_receives_the_model(api: Any) -> None:
    reply = _patch(api, {"data": {"type": "things", "attributes": {"name": "a", "size": 3}}})
    assert reply.status_code == 200
    [(thing_id, body)] = api.received
    assert thing_id == "t-1"
    assert isinstance(body, Thing) and (body.name, body.size) == ("a", 3)


@pytest.mark.parametrize(
    "document",
    [
        {"data": {"type": "other-things", "attributes": {"name": "a"}}},  # the wrong type
        {"data": {"attributes": {"name": "a"}}},  # no type (strict)
        {"data": {"type": "things", "attributes": {"name": "a", "size": "3"}}},  # a string
        {"data": {"type": "things", "attributes": {"size": 3}}},  # no name
        {"data": {"type": "things", "attributes": {"name": "x" * 1000}}},  # past its bound
    ],
)
def test_a_wrong_body_is_refused_before_the_handler(api: Any, document: Any) -> None:
    reply = _patch(api, document)
    assert reply.status_code == 422
    assert api.received == []


def test_a_refused_callers_body_is_never_parsed(api: Any) -> None:
    for document in ("{not json", {"data": {"type": "things", "attributes": {"name": "a"}}}):
        reply = _patch(api, document, token="wrong")
        assert reply.status_code == 401
        assert "errors" in json.loads(reply.body)
    assert api.parsed == [] and api.received == []


def test_the_document_records_the_model_from_the_signature(api: Any) -> None:
    spec = openapi.SPECS[(PATH, "PATCH")]
    assert spec.body == Body(Thing, JsonApi("things"))


def test_a_parameter_neither_in_the_path_nor_a_typed_body_is_refused() -> None:
    def show(ctx: Ctx, thing_id: str, body: Thing) -> Response:  # no JsonApi marker
        return Response(body="")

    def two(ctx: Ctx, body: ThingBody, other: ThingBody) -> Response:
        return Response(body="")

    found = typed_body(show, PATH)
    assert found is not None
    with pytest.raises(AssertionError, match="Annotated"):
        found[1]()
    with pytest.raises(AssertionError, match="one body"):
        typed_body(two, PATH)


ENTRY = Path(__file__).resolve().parents[2] / "chalicelib" / "entry" / "api"
APPS = sorted(
    ".".join(p.relative_to(ENTRY).with_suffix("").parts)
    for p in ENTRY.rglob("*.py")
    if p.name != "__init__.py"
)


def test_no_function_loads_pydantic_before_a_body_comes() -> None:
    """The routes import their models for type checking only (``body_models()`` loads them
    with a body's first request): pydantic is 40 to 60 ms of a cold start."""
    code = (
        "import importlib, sys\n"
        f"for app in {APPS!r}:\n"
        "    importlib.import_module('chalicelib.entry.api.' + app)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'pydantic'))"
    )
    root = ENTRY.parent.parent.parent
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"
