"""The scheduled OIDC key maintenance: 90-day rotation and 30-day trim when they are due."""

from typing import Any, TypedDict

from chalice import Chalice, Rate


class Schedule(TypedDict):
    """``schedule``'s arguments (``app.py`` schedules the same handler)."""

    expression: Rate
    name: str


SCHEDULE: Schedule = {"expression": Rate(1, unit=Rate.HOURS), "name": "oidc_key_maintenance"}


def maintain_keys(event: Any) -> None:
    """Runs hourly; rotates or trims only when the timers in SPEC.md say so."""
    from chalicelib.admin.oidc import run_due_maintenance

    run_due_maintenance()


app = Chalice(app_name="registry-oidc-keys")
oidc_key_maintenance = app.schedule(**SCHEDULE)(maintain_keys)  # the Lambda handler
