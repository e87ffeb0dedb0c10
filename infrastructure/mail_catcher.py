"""The local stack's mail catcher: an SMTP server in ``make run``'s process that keeps what the
registry mails (invitations, resets, confirmations, test messages) instead of delivering it.

``make run`` starts it on 127.0.0.1 (MAIL_PORT, default a free port) and points the site's
SMTP settings at it when no one else configured them (``adopt_smtp_settings``: settings an
operator saved are never overwritten). Each message caught prints one console line (to,
subject, the first link) and is listed, with its text, on ``/app/admin/mail`` for site
admins. That page is registered on the runner's app only (``install``): no deployed function
serves it (``tests/infrastructure/test_infrastructure.py`` checks the route groups).

Links in mail are secrets of their recipient (an invitation, a password reset). Printing them
is deliberate here: this is the operator's own machine, the console is theirs, and no mail
leaves it. Set REGISTRY_MAIL_CATCHER=off to run without the catcher.
"""

from __future__ import annotations

import json
import re
import threading
from collections import deque
from dataclasses import dataclass
from datetime import UTC, datetime
from email import message_from_bytes, policy
from email.message import EmailMessage
from pathlib import Path
from typing import Any

from chalice import Blueprint, Response

from chalicelib.web.siteadmin.common import ADMIN, site_admin
from chalicelib.web.view import SiteAdminPage, WebCtx, html_response, page, site_text, templates

PAGE = ADMIN + "/mail"
KEPT = 200  # the newest messages the page lists (older ones are forgotten, in memory only)
MAX_MESSAGE_BYTES = 1024 * 1024
# The sender of the settings the catcher saves; with the settings' version in the data dir's
# marker file, it tells the catcher's own settings from an operator's.
SENDER = "registry@mail-catcher.localhost"
MARKER = "mail-catcher.json"
_LINK = re.compile(r"https?://[^\s<>\"']+")


@dataclass(frozen=True)
class Caught:
    """One message as the catcher received it."""

    received: datetime
    sender: str
    recipients: tuple[str, ...]
    subject: str
    text: str

    @property
    def first_link(self) -> str | None:
        found = _LINK.search(self.text)
        return found.group(0) if found else None

    def console_line(self, page_url: str) -> str:
        # The link is printed on purpose: see the module's docstring (the operator's console).
        link = self.first_link
        return (
            f"  mail caught for {', '.join(self.recipients)}: {self.subject!r}"
            + (f" link: {link}" if link else "")
            + f" (all caught mail: {page_url})"
        )


def _text_of(raw: bytes) -> tuple[str, str]:
    """(subject, plain text) of a raw message."""
    message = message_from_bytes(raw, policy=policy.default)
    subject = " ".join(str(message.get("Subject", "")).split())  # unfolded
    assert isinstance(message, EmailMessage)
    body = message.get_body(preferencelist=("plain", "html"))
    text = body.get_content() if body is not None else ""
    return subject, str(text)


class MailCatcher:
    """An aiosmtpd server on ``host``:``port`` keeping the last ``KEPT`` messages."""

    def __init__(
        self, host: str = "127.0.0.1", port: int = 0, page_url: str = PAGE, echo: Any = print
    ) -> None:
        from aiosmtpd.controller import Controller

        self.messages: deque[Caught] = deque(maxlen=KEPT)
        self.lock = threading.Lock()
        self.echo = echo
        self.page_url = page_url
        catcher = self

        class Handler:
            async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802
                catcher.keep(envelope.mail_from, list(envelope.rcpt_tos), envelope.content)
                return "250 OK: caught (not delivered)"

        self.controller = Controller(
            Handler(), hostname=host, port=port, data_size_limit=MAX_MESSAGE_BYTES
        )

    def start(self) -> None:
        self.controller.start()

    def stop(self) -> None:
        self.controller.stop()

    @property
    def host(self) -> str:
        return str(self.controller.hostname)

    @property
    def port(self) -> int:
        return int(self.controller.port)

    def keep(self, sender: str, recipients: list[str], raw: bytes) -> None:
        subject, text = _text_of(raw)
        caught = Caught(datetime.now(UTC), sender, tuple(recipients), subject, text)
        with self.lock:
            self.messages.appendleft(caught)
        self.echo(caught.console_line(self.page_url), flush=True)

    def newest_first(self) -> list[Caught]:
        with self.lock:
            return list(self.messages)


# ----- the site's SMTP settings ----------------------------------------------------------------


def _marker(directory: Path | None) -> Path | None:
    return directory / MARKER if directory is not None else None


def _ours(item: Any, directory: Path | None) -> bool:
    """Whether the stored SMTP settings are the catcher's own, untouched since it saved them:
    none saved yet, or the version it recorded (an operator's save changes the version)."""
    if item.version is None:
        return True
    marker = _marker(directory)
    if marker is None or not marker.exists():
        return False
    try:
        recorded = json.loads(marker.read_text())
    except (OSError, ValueError):
        return False
    return bool(recorded.get("version") == item.version and item.values.get("sender") == SENDER)


def adopt_smtp_settings(catcher: MailCatcher | None, directory: Path | None) -> str:
    """Point the site's SMTP settings at ``catcher`` unless someone else configured them
    (never overwritten); with no catcher, switch off the catcher's own settings left from an
    earlier run. Returns the console line that says where mail goes."""
    from chalicelib.admin import service

    item = service.smtp()
    mine = _ours(item, directory)
    values = item.values or {}
    if not mine:
        if values.get("enabled") and values.get("host"):
            where = f"{values['host']}:{values['port']}"
            return f"  mail: sent through {where} (the SMTP settings a site admin saved)"
        return "  mail: not sent (SMTP is switched off in the settings a site admin saved)"
    if catcher is None:
        if values.get("enabled"):
            item = service.update_smtp(None, {"enabled": False})
            _record(item, directory)
        return "  mail: not sent (REGISTRY_MAIL_CATCHER=off): invitation links show in the UI"
    wanted = {"enabled": True, "host": catcher.host, "port": catcher.port, "sender": SENDER}
    if any(values.get(name) != value for name, value in wanted.items()):
        # The settings' own check sends a test message: the catcher shows it.
        item = service.update_smtp(
            None,
            {**wanted, "auth": "none", "test-email-address": "operator@mail-catcher.localhost"},
        )
        _record(item, directory)
    return (
        f"  mail: caught by the local mail catcher on {catcher.host}:{catcher.port}, "
        f"never delivered; listed at {catcher.page_url} (site admins)"
    )


def _record(item: Any, directory: Path | None) -> None:
    marker = _marker(directory)
    if marker is not None:
        marker.write_text(json.dumps({"version": item.version}) + "\n")


# ----- the site admins' page (registered by ``install`` on the local runner's app only) --------

bp = Blueprint(__name__)
_running: list[MailCatcher] = []
_TEMPLATE = Path(__file__).resolve().parent / "templates" / "mail_catcher.html"


@page(bp, PAGE, auth=SiteAdminPage)
def caught_mail(ctx: WebCtx) -> Response:
    """The mail the local mail catcher caught, newest first (``make run`` only)."""
    site_admin(ctx)
    catcher = _running[0]
    body = (
        templates()
        .from_string(_TEMPLATE.read_text(encoding="utf-8"))
        .render(
            principal=ctx.principal,
            csrf_token=ctx.csrf(),
            current_path=ctx.path,
            site=site_text(),
            messages=catcher.newest_first(),
            kept=KEPT,
            where=f"{catcher.host}:{catcher.port}",
        )
    )
    return html_response(body, 200, ctx.request)


def install(app: Any, catcher: MailCatcher) -> None:
    """Serve ``/app/admin/mail`` from ``app`` (the local runner's) for ``catcher``'s mail."""
    _running[:] = [catcher]
    app.register_blueprint(bp)
    templates().globals["mail_catcher_page"] = PAGE
