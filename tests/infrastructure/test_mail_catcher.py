"""The local mail catcher (``infrastructure.mail_catcher``): what it catches, and whose SMTP
settings it may set (its own only: an operator's are never overwritten)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from chalicelib.admin import mail, service
from infrastructure.mail_catcher import SENDER, MailCatcher, adopt_smtp_settings
from tests.conftest import Api
from tests.support.admin_servers import free_port, smtp_server, use_smtp


@pytest.fixture
def catcher() -> Iterator[tuple[MailCatcher, list[str]]]:
    lines: list[str] = []
    running = MailCatcher(
        "127.0.0.1", free_port(), "http://local/app/admin/mail", lambda s, **_: lines.append(s)
    )
    running.start()
    yield running, lines
    running.stop()


def test_a_fresh_site_mails_the_catcher_which_prints_and_keeps_each_message(
    aws: None, catcher: tuple[MailCatcher, list[str]], tmp_path: Path
) -> None:
    running, lines = catcher
    said = adopt_smtp_settings(running, tmp_path)
    assert f"local mail catcher on 127.0.0.1:{running.port}" in said
    values = service.smtp().values
    assert values["enabled"] and values["port"] == running.port and values["sender"] == SENDER
    assert [m.subject for m in running.newest_first()] == [
        "Test message from the Terraform module registry"
    ]

    assert mail.send_password_reset("jane@example.com", "http://local/app/password-reset/s3")
    newest = running.newest_first()[0]
    assert newest.recipients == ("jane@example.com",)
    assert newest.first_link == "http://local/app/password-reset/s3"
    assert lines[-1] == (
        "  mail caught for jane@example.com: 'Reset your password on the Terraform module"
        " registry' link: http://local/app/password-reset/s3"
        " (all caught mail: http://local/app/admin/mail)"
    )

    # A restart (same data dir, same port) changes nothing and sends no second test message.
    version = service.smtp().version
    adopt_smtp_settings(running, tmp_path)
    assert service.smtp().version == version and len(running.newest_first()) == 2


def test_settings_an_operator_saved_are_never_overwritten(
    api: Api, catcher: tuple[MailCatcher, list[str]], tmp_path: Path
) -> None:
    running, _ = catcher
    adopt_smtp_settings(running, tmp_path)  # the catcher's own first ...
    with smtp_server() as (port, mailbox):
        use_smtp(api, port)  # ... then an operator's, through the admin API
        saved = service.smtp()
        said = adopt_smtp_settings(running, tmp_path)
        assert (
            said == f"  mail: sent through 127.0.0.1:{port} (the SMTP settings a site admin saved)"
        )
        assert adopt_smtp_settings(None, tmp_path).startswith("  mail: sent through")
        assert service.smtp().version == saved.version and service.smtp().values["port"] == port
        assert len(mailbox.messages) == 1  # the operator's own test message, nothing more


def test_without_the_catcher_its_own_settings_are_switched_off(
    aws: None, catcher: tuple[MailCatcher, list[str]], tmp_path: Path
) -> None:
    running, _ = catcher
    adopt_smtp_settings(running, tmp_path)
    said = adopt_smtp_settings(None, tmp_path)  # REGISTRY_MAIL_CATCHER=off at the next start
    assert "REGISTRY_MAIL_CATCHER=off" in said
    assert not service.smtp().values["enabled"] and mail.configured() is None
    # Switched on again later: the catcher's settings are still its own.
    adopt_smtp_settings(running, tmp_path)
    assert service.smtp().values["enabled"]


def test_settings_saved_before_the_catcher_kept_a_record_are_an_operators(
    aws: None, catcher: tuple[MailCatcher, list[str]], tmp_path: Path
) -> None:
    running, _ = catcher
    service.update_smtp(None, {"enabled": False, "host": "smtp.example.com", "port": 587})
    said = adopt_smtp_settings(running, tmp_path)  # no record in this data dir
    assert said.startswith("  mail: not sent (SMTP is switched off in the settings")
    assert service.smtp().values["host"] == "smtp.example.com"
    assert running.newest_first() == []
