"""The consumers of a deprecated version, told: who downloaded it lately, and their mail.

The registry knows which consumer last downloaded which version (``modules.downloads``): a
user (their user token), a team (its token) or an organization (its token). When a version
is deprecated, or its revocation nears, each person behind a download of it in the last
``RECENT_DAYS`` days gets one mail: a consuming user, and every member of a consuming team
(``accounts``: each person once, only people who may still read the organization's modules,
never a suspended user, never an address nobody confirmed reaches its owner). An
organization token is nobody to write to.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from chalicelib.accounts.teams import service as teams
from chalicelib.modules.downloads.recent import RECENT_DAYS, recent_consumers
from chalicelib.notifications.triggers import Notice, Trigger


def addresses(organization: str, module_id: str, version: str, moment: datetime) -> list[str]:
    """Whom to mail about ``version`` of ``organization``'s module ``module_id``: one Query
    of the module's downloads, then (when someone downloaded it) the organization, the
    consuming teams and the people (``accounts``: only those who may still read it)."""
    found = recent_consumers(module_id, version, moment, RECENT_DAYS)
    team_ids = [consumer for kind, consumer in found if kind == "team"]
    user_ids = [consumer for kind, consumer in found if kind == "user"]
    if not team_ids and not user_ids:
        return []
    return teams.mail_addresses(organization, team_ids, user_ids)


def mail(notice: Notice) -> tuple[str, str]:
    """(subject, text) of the consumers' mail: the version, why, what to move to, by when,
    the owner's link. The subject carries no text the owner typed (a header is one line)."""
    details: Mapping[str, Any] = notice.details
    what = f"{notice.resource.get('address')} {notice.resource.get('version')}"
    deadline = details.get("revoke-at")
    if notice.trigger == Trigger.MODULE_DEADLINE:
        subject = f"{what} will be revoked on {deadline}"
    else:
        subject = f"{what} is deprecated"
    latest = details.get("latest-version")
    version = notice.resource.get("version")
    lines = [
        f"You, or a team you are on, downloaded {what} in the last {RECENT_DAYS} days.",
        "",
        notice.message,
        "",
    ]
    if details.get("reason"):
        lines.append(f"Why: {details['reason']}")
    if latest and latest != version:
        lines.append(f"Move to: {latest}")
    else:
        lines.append("Move to: no other version is published yet; the owners can tell you more")
    if deadline:
        lines.append(f"By: {deadline} (then the registry stops serving {version})")
    if details.get("link"):
        lines.append(f"From the owners: {details['link']}")
    if notice.url:
        lines.append(f"The version in the registry: {notice.url}")
    return subject[:200], "\n".join(lines).rstrip() + "\n"
