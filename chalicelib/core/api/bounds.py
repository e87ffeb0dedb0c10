"""How long a string a request may carry: one bound per kind of value.

DynamoDB refuses a sort key over 1,024 bytes, a partition key over 2,048 and an item over
400 KB, and its refusal reached the client as a 500 (a module version of 1,006 characters, a
token description of 500 KB). So every string a request carries has a bound, checked before
anything is read or written, and a longer one is a 422 naming the field (or the query
parameter); the OpenAPI document shows each bound as a ``maxLength``.

The kinds, and where each is checked:

* request bodies: the shared constrained types of ``chalicelib.core.api.attributes``
  (``Name``, ``Version``, ``Email``, ``Url``, ``Description``, ...), used by every room's
  ``schemas.py``;
* query parameters: each declared ``Param`` (``openapi.Param``, default ``QUERY``), and any
  other value at most ``QUERY_ANY``: checked by the route wrapper before the handler;
* path parameters: at most ``PATH_PARAMETER`` bytes (no resource is named by a longer one:
  a longer one is a 404 before the handler), and versions by ``semver.parse``;
* web forms: every field at most ``FORM_FIELD`` characters (the one form reader).

Values that end up in keys (names, versions, ids, emails, path parameters) are bounded in
UTF-8 bytes too (a multi-byte character counts its bytes: DynamoDB's limits are in bytes;
the document shows ``x-max-bytes`` beside ``maxLength``); free text is bounded in
characters, at most four bytes each, far below an item's 400 KB.

Request bodies are validated by the route wrapper before the handler runs, on the routes it
authenticates; the admin routes that authenticate themselves validate at their handler's
first line (until their authorization is declared on the route).
"""

from __future__ import annotations

# Names: organizations, teams, workspaces, projects, modules, providers, namespaces,
# usernames, OAuth clients, tags. Bytes.
NAME = 255
# Semantic versions, version pins and constraints (``artifacts.semver`` holds to it).
VERSION = 128
# Resource ids, GPG key ids, hashes, commit SHAs, external ids. Bytes.
IDENTIFIER = 255
# RFC 5321's longest forward path. Bytes.
EMAIL = 254
# An ISO 8601 timestamp (``2026-11-28T07:00:00.000000+00:00``), generously.
TIMESTAMP = 64
# URLs (a VCS host's, a deprecation's link).
URL = 2_048
# A path in a repository or workspace (working and source directories).
PATH = 1_024
# A short text a person writes: descriptions, reasons, messages.
DESCRIPTION = 1_000
# Longer free text (the site's login help and footer).
TEXT = 10_000
# Passwords, access tokens, client secrets.
SECRET = 1_000
# PEM keys and certificates, SSH keys.
KEY = 16_384
# A query parameter's value (searches, filters), unless the route declares another bound.
QUERY = 1_000
# Any query parameter value, declared or not (a web page's ``next`` is up to 4 KB).
QUERY_ANY = 8_192
# A path parameter, in bytes.
PATH_PARAMETER = 512
# A field of a web form.
FORM_FIELD = 20_000
# Fields in a web form.
FORM_FIELDS = 200


def utf8_length(value: str) -> int:
    """``value``'s length in UTF-8 bytes (what DynamoDB counts); lone surrogates count 3."""
    return len(value.encode("utf-8", "surrogatepass"))
