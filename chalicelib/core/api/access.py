"""What a route needs of its caller, declared on the route and decided before its handler runs.

Every route says who may call it (``route(..., auth=Bearer)``, the web's ``page(..., auth=...)``)
and the wrapper admits the caller before the handler runs, so no handler can forget it. The
kinds are few:

* ``Public``: anyone (ping, discovery, the OpenAPI document, the JWKS, sign-in pages).
* ``Bearer``: any valid API token (401 otherwise); the decision on the resource is then the
  service's (``chalicelib.accounts.authorization.authorize``): 404 for a resource the caller
  may not see, as if it did not exist.
* ``SiteAdmin`` (``chalicelib.accounts.authorization``): a site admin's user token; 404 for
  anyone else, and 404 on the hosted edition before the token is read.
* ``Scim`` (``chalicelib.scim.service``, beside the SCIM tokens' rules): a SCIM token; 404 on
  the hosted edition.
* ``Signed``: the request carries its own proof, checked by the route's service before anything
  else (a VCS webhook's signature over its body).

The same declaration gives the OpenAPI document its ``security`` (``scheme``) and the 401 it
lists. A kind lives in the room that can decide it (core cannot ask who is a site admin).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from chalicelib.core import observe

if TYPE_CHECKING:
    from chalicelib.core.auth import Principal


@dataclass(frozen=True)
class Access:
    """One kind of caller a route may declare.

    ``admit(request)`` runs before the handler: the principal calling (None when the kind
    needs none), or it raises the refusal (401, or 404 where the thing must not be seen to
    exist). ``scheme`` is the OpenAPI security scheme a caller uses (None: no credential)."""

    name: str
    admit: Callable[[Any], Principal | None]
    scheme: str | None = None
    description: str = ""

    def __repr__(self) -> str:
        return self.name


def _nobody(request: Any) -> None:
    return None


def _any_token(request: Any) -> Principal:
    # Imported on first use: public routes (ping, discovery) never load PynamoDB.
    from chalicelib.core.auth import request_principal

    principal = request_principal(request)
    observe.note_principal(principal.kind, principal.id)
    return principal


Public = Access("public", _nobody, description="anyone")
Bearer = Access(
    "bearer",
    _any_token,
    scheme="bearerAuth",
    description="any valid API token; the service decides on the resource (404 if not allowed)",
)
Signed = Access(
    "signed",
    _nobody,
    description="the request's own signature, checked by the service before anything else",
)


def user_token(request: Any) -> Principal:
    """``Bearer``'s check, for the kinds of other rooms built on it (``SiteAdmin``)."""
    return _any_token(request)
