"""The one base of every link that leaves the request it was made in.

A reset, confirmation or invitation link goes to a mailbox; a VCS webhook URL to the VCS
host; the SAML endpoints to the identity provider. Whoever receives such a link trusts its
host, so it must name this deployment's configured address, never what the request said
(``Host`` and ``X-Forwarded-Proto`` are chosen by the caller: a reset asked for with
``Host: evil.example`` would otherwise mail the victim a live secret at evil.example).

The address is ``REGISTRY_PUBLIC_URL`` (``core.settings.public_base_url``): the stack
parameter ``InstanceAddress`` on AWS; the local stack sets it to the address it prints when
the operator did not. Without one, no such link is made: ``link_base_url`` raises
``NoPublicAddress`` (503, naming the setting), and the callers refuse before any write or,
for work off the request (a queued reset mail), log it and send nothing.

Answers to the caller itself (pagination links, a module's source address, presigned URLs)
may keep ``RequestContext.base_url``, which falls back to the request's host.
"""

from __future__ import annotations

from chalicelib.core.api.errors import ApiError
from chalicelib.core.settings import get_settings


class NoPublicAddress(ApiError):
    """A link for someone other than the caller was asked for on a deployment without a
    configured public address."""

    status = 503
    title = "no public address"


def link_base_url(what: str = "links") -> str:
    """``REGISTRY_PUBLIC_URL`` without a trailing ``/``; ``NoPublicAddress`` without one
    (``what`` names what could not be made, in its detail)."""
    configured = get_settings().public_base_url
    if not configured:
        raise NoPublicAddress(
            f"this registry cannot make {what}: it has no public address configured (set "
            "REGISTRY_PUBLIC_URL; on AWS, the stack parameter InstanceAddress). A link never "
            "takes its host from a request."
        )
    return configured


def can_make_links() -> bool:
    """Whether ``link_base_url`` has an address to give."""
    return bool(get_settings().public_base_url)
