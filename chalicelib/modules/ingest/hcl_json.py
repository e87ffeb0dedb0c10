"""The JSON syntax of Terraform and OpenTofu files (``.tf.json``, ``.tofu.json``): nesting
bounded before decoding, numbers kept finite, each file's declarations handed to a
``declarations.Collector``."""

from __future__ import annotations

import json
import math
import re
from itertools import accumulate
from typing import Any

from chalicelib.modules.ingest.declarations import Collector, HclError, decode


def _json_blocks(value: Any, labels: int) -> list[tuple[list[str], dict[str, Any]]]:
    """Flatten Terraform JSON block nesting: ``{label: {label: body}}``, arrays allowed."""
    if isinstance(value, list):
        return [item for v in value for item in _json_blocks(v, labels)]
    if not isinstance(value, dict):
        return []
    if labels == 0:
        return [([], value)]
    result = []
    for key, inner in value.items():
        if key == "//":
            continue
        for rest, body in _json_blocks(inner, labels - 1):
            result.append(([key, *rest], body))
    return result


def _json_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_BRACKET_STEP = [1 if b in b"[{" else -1 for b in range(256)]


def _json_depth(src: bytes) -> int:
    """How deep arrays and objects nest, counted without recursion (strings skipped)."""
    brackets = _JSON_STRING.sub(b"", src).translate(None, _NOT_BRACKETS)
    return max(accumulate(map(_BRACKET_STEP.__getitem__, brackets)), default=0)


def _json_number(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:20]} is out of range")
    return value


def _json_constant(name: str) -> None:
    raise ValueError(f"{name} is not valid JSON")


def collect(path: str, content: bytes, out: Collector, max_depth: int) -> None:
    src = decode(path, content)
    depth = _json_depth(src)
    if depth > max_depth:
        raise HclError(f"{path}: JSON nested {depth} levels deep, over the limit of {max_depth}")
    try:
        doc = json.loads(
            src.decode("utf-8"), parse_float=_json_number, parse_constant=_json_constant
        )
    except json.JSONDecodeError as exc:
        raise HclError(f"{path}:{exc.lineno}: invalid JSON: {exc.msg}") from None
    except ValueError as exc:  # numbers out of range, integers over Python's digit limit
        raise HclError(f"{path}: invalid JSON: {str(exc)[:100]}") from None
    if not isinstance(doc, dict):
        raise HclError(f"{path}:1: a Terraform JSON file must contain an object")

    for (name,), body in _json_blocks(doc.get("variable"), 1):
        fields: dict[str, Any] = {}
        if "type" in body:
            fields["type"] = body["type"] if isinstance(body["type"], str) else ""
        if "description" in body:
            fields["description"] = _json_str(body["description"]) or ""
        if "default" in body:
            fields["default"] = json.dumps(body["default"], ensure_ascii=False)
        out.variable(name, fields)
    for (name,), body in _json_blocks(doc.get("output"), 1):
        fields = {}
        if "description" in body:
            fields["description"] = _json_str(body["description"]) or ""
        if "sensitive" in body:
            fields["sensitive"] = body["sensitive"] is True
        out.output(name, fields)
    for (name,), body in _json_blocks(doc.get("module"), 1):
        fields = {k: body[k] for k in ("source", "version") if isinstance(body.get(k), str)}
        out.module(name, fields)
    for kind in ("resource", "data"):
        for (rtype, name), body in _json_blocks(doc.get(kind), 2):
            provider = _json_str(body.get("provider"))
            out.resource(rtype, name, provider, managed=kind == "resource")
    for (name,), body in _json_blocks(doc.get("provider"), 1):
        out.provider_block(name, _json_str(body.get("version")))
    for _, body in _json_blocks(doc.get("terraform"), 0):
        out.required_core(_json_str(body.get("required_version")))
        required = body.get("required_providers")
        for entry in required if isinstance(required, list) else [required]:
            if not isinstance(entry, dict):
                continue
            for name, spec in entry.items():
                if name == "//":
                    continue
                if isinstance(spec, str):
                    out.required_provider(name, None, spec)
                elif isinstance(spec, dict):
                    out.required_provider(
                        name, _json_str(spec.get("source")), _json_str(spec.get("version"))
                    )
