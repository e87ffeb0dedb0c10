"""What accounts calls but may not import, given once per function by what it declares.

Accounts sits below admin, scim and modules, yet it mails links (invitations, password
resets, email confirmations: through admin's SMTP), shows whether SCIM provisioned a user
(while scim's service says provisioning is on) and refuses an organization named like a
namespace the module cache serves (modules' cache settings say which). It declares what it
needs as typed interfaces (``memberships.Mailer``, ``render.use_scim_probe``'s probe,
``organizations.service.use_reserved_names``'s check); here, above every room, they
are given their implementations. Each entry app declares what it uses (``Uses``, through
``factory.create_app``; ``entry.ingest`` through ``wire``): an app that declares nothing
loads none of it. The implementations load with their first use, not with the cold start.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from chalicelib.core.audit import events
from chalicelib.core.audit import store as audit_store

if TYPE_CHECKING:
    from chalicelib.accounts.memberships import Mailer
    from chalicelib.core.auth import Principal


@dataclass(frozen=True)
class Uses:
    """What an app's handlers reach that accounts cannot give by itself."""

    # Invitations, password resets and email confirmations, mailed by the site's SMTP.
    mail: bool = False
    # Users rendered with ``is-scim-managed`` and its kin while SCIM is on.
    scim: bool = False
    # Organizations created: a name the module cache serves as a namespace is refused.
    namespaces: bool = False


def site_mail() -> Mailer:
    """The site's SMTP settings' mailer (smtplib loads with the first mail)."""
    from chalicelib.admin import mail

    return mail


def scim_enabled() -> bool:
    """Whether SCIM provisioning is on, as scim's service says."""
    from chalicelib.scim import service

    return bool(service.settings().enabled)


def cached_namespace(name: str) -> bool:
    """Whether ``name`` is an upstream namespace the module cache serves (its settings as
    stored now: one consistent read, made only when an organization is created)."""
    from chalicelib.modules.cache import settings

    return settings.reserved(name)


def describe_user(principal: Principal) -> str | None:
    """A user as the audit trail names them: their username (the cached user item)."""
    from chalicelib.accounts.users.service import shown_username

    return shown_username(principal)


def audit_retention_days() -> int:
    """How long the site keeps audit events: its general settings' ``audit-retention-days``
    (the instance's cached copy, which the rate limiter reads on every request anyway)."""
    from chalicelib.admin.store import cached_general_settings

    return int(cached_general_settings()["audit-retention-days"])


def wire(uses: Uses) -> None:
    """Give accounts the implementations ``uses`` declares (those not declared stay as
    they are: ``app.py`` and the entry apps share one process in the tests), and every app
    the audit trail's names of users and the site's retention of its events."""
    events.describe_users_with(describe_user)
    audit_store.keep_events_for(audit_retention_days)
    if uses.mail:
        from chalicelib.accounts import memberships

        memberships.use_mail(site_mail)
    if uses.scim:
        from chalicelib.accounts import render

        render.use_scim_probe(scim_enabled)
    if uses.namespaces:
        from chalicelib.accounts.organizations import service as organizations

        organizations.use_reserved_names(cached_namespace)
