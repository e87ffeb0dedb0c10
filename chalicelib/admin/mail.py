"""Outbound SMTP: the test message every enabled SMTP settings update sends.

Failures become the statuses the API documents: 401 when the server refuses the
credentials, 504 when it does not answer in time, 500 for any other server error.
Error details name the server and the SMTP reply, never the password.
"""

from __future__ import annotations

import smtplib
import ssl
from dataclasses import dataclass
from email.message import EmailMessage

from chalicelib.core.api.errors import ApiError, GatewayTimeout, Unauthorized
from chalicelib.core.settings import get_settings


class SmtpServerError(ApiError):
    status = 500
    title = "smtp server error"


@dataclass(frozen=True)
class SmtpConfig:
    host: str
    port: int
    sender: str
    auth: str
    username: str | None
    password: str | None

    def __repr__(self) -> str:  # never show the password, even in a traceback
        return f"SmtpConfig(host={self.host!r}, port={self.port}, auth={self.auth!r})"


def _message(config: SmtpConfig, recipient: str) -> EmailMessage:
    message = EmailMessage()
    message["From"] = config.sender
    message["To"] = recipient
    message["Subject"] = "Test message from the Terraform module registry"
    message.set_content(
        "This is a test message sent while saving the SMTP settings of the registry.\n"
        "If you can read it, outgoing mail works.\n"
    )
    return message


def _open(config: SmtpConfig, timeout: float) -> smtplib.SMTP:
    context = ssl.create_default_context()
    if config.port == 465:
        return smtplib.SMTP_SSL(config.host, config.port, timeout=timeout, context=context)
    server = smtplib.SMTP(config.host, config.port, timeout=timeout)
    server.ehlo()
    if server.has_extn("starttls"):
        server.starttls(context=context)
        server.ehlo()
    return server


def send_test_message(config: SmtpConfig, recipient: str) -> None:
    """Deliver one test message or raise the ApiError that describes why not."""
    _deliver(config, _message(config, recipient))


def _invitation(config: SmtpConfig, recipient: str, organization: str, link: str) -> EmailMessage:
    message = EmailMessage()
    message["From"] = config.sender
    message["To"] = recipient
    message["Subject"] = f"You are invited to join {organization} on the Terraform module registry"
    message.set_content(
        f"You have been invited to join the organization {organization}.\n\n"
        f"Accept the invitation here (the link works once, for 7 days):\n{link}\n\n"
        "If you did not expect this, ignore this message.\n"
    )
    return message


def configured() -> SmtpConfig | None:
    """The site's SMTP settings when SMTP is enabled (the password unsealed), else None.
    (Read from the store, as ``service.update_smtp`` saved them: the service imports this
    module.)"""
    from chalicelib.admin import store
    from chalicelib.core import secrets

    item = store.load("smtp")
    values = item.values or {}
    if not values.get("enabled") or not values.get("host"):
        return None
    auth = values.get("auth") or "none"
    sealed = (item.secrets or {}).get("password")
    password = secrets.unseal(sealed, purpose="smtp/password") if sealed else None
    return SmtpConfig(
        host=values["host"],
        port=values["port"],
        sender=values["sender"],
        auth=auth,
        username=values.get("username"),
        password=password if auth != "none" else None,
    )


def send_invitation(recipient: str, organization: str, link: str) -> bool:
    """Mail an invitation link through the site's SMTP settings: False when SMTP is not
    configured (the caller then shows the link to the inviting owner). A delivery failure
    is the ApiError ``send_test_message`` describes; the link is in no error or log."""
    config = configured()
    if config is None:
        return False
    _deliver(config, _invitation(config, recipient, organization, link))
    return True


def send_email_confirmation(recipient: str, link: str) -> bool:
    """Mail the link that confirms a changed email address (``accounts.account``) through
    the site's SMTP settings: False when SMTP is not configured. As ``send_invitation``, the
    link is in no error or log."""
    return _send_link(
        recipient,
        "Confirm your new email address for the Terraform module registry",
        "Someone asked to make this the email address of their account on the Terraform "
        "module registry.\n\n"
        f"Open this link and confirm it with the button there (it works once, for 24 "
        f"hours):\n{link}\n\n"
        "If it was not you, ignore this message: the account keeps its address.\n",
    )


def send_password_reset(recipient: str, link: str) -> bool:
    """Mail a password reset link through the site's SMTP settings: False when SMTP is not
    configured. As ``send_invitation``, the link is in no error or log."""
    return _send_link(
        recipient,
        "Reset your password on the Terraform module registry",
        "Someone (we hope you) asked to reset the password of your account.\n\n"
        f"Choose a new password here (the link works once, for one hour):\n{link}\n\n"
        "If you did not ask for this, ignore this message: your password stays as it is.\n",
    )


def _send_link(recipient: str, subject: str, text: str) -> bool:
    return send_notice([recipient], subject, text)


def _text_message(config: SmtpConfig, recipient: str, subject: str, text: str) -> EmailMessage:
    message = EmailMessage()
    message["From"] = config.sender
    message["To"] = recipient
    message["Subject"] = subject
    message.set_content(text)
    return message


def _deliver(config: SmtpConfig, message: EmailMessage) -> None:
    where = f"{config.host}:{config.port}"
    timeout = get_settings().smtp_timeout
    try:
        server = _open(config, timeout)
        try:
            if config.auth in ("plain", "login"):
                server.user, server.password = config.username or "", config.password or ""
                if config.auth == "plain":
                    server.auth("PLAIN", server.auth_plain)
                else:
                    server.auth("LOGIN", server.auth_login, initial_response_ok=False)
            server.send_message(message)
        finally:
            try:
                server.quit()
            except (smtplib.SMTPException, OSError):
                server.close()
    except smtplib.SMTPAuthenticationError as exc:
        raise Unauthorized(
            f"the SMTP server {where} rejected the credentials ({exc.smtp_code})"
        ) from None
    except (TimeoutError, smtplib.SMTPServerDisconnected) as exc:
        # smtplib reports a reply that never came as a disconnect caused by the timeout
        if not isinstance(exc, TimeoutError) and not isinstance(exc.__context__, TimeoutError):
            raise SmtpServerError(f"the SMTP server {where} closed the connection") from None
        raise GatewayTimeout(
            f"the SMTP server {where} did not answer within {timeout:g}s"
        ) from None
    except smtplib.SMTPResponseException as exc:
        reply = (
            exc.smtp_error.decode("utf-8", "replace") if isinstance(exc.smtp_error, bytes) else ""
        )
        raise SmtpServerError(
            f"the SMTP server {where} answered {exc.smtp_code} {reply}".strip()
        ) from None
    except smtplib.SMTPNotSupportedError:
        raise SmtpServerError(
            f"the SMTP server {where} does not support {config.auth} auth"
        ) from None
    except smtplib.SMTPRecipientsRefused:
        raise SmtpServerError(f"the SMTP server {where} refused the recipient") from None
    except (smtplib.SMTPException, ssl.SSLError, OSError) as exc:
        raise SmtpServerError(f"could not deliver through {where}: {type(exc).__name__}") from None


def send_notice(recipients: list[str], subject: str, text: str) -> bool:
    """Mail a notification (``chalicelib.notifications``) to each recipient, one message
    each (no one sees the others' addresses): False when SMTP is not configured. A
    delivery failure is the ApiError ``send_test_message`` describes, at the first
    recipient that fails."""
    config = configured()
    if config is None:
        return False
    for recipient in recipients:
        _deliver(config, _text_message(config, recipient, subject, text))
    return True
