"""The scheduled OIDC key maintenance: 90-day rotation and 30-day trim when they are due."""

from chalice import Chalice, Rate

app = Chalice(app_name="registry-oidc-keys")


@app.schedule(Rate(1, unit=Rate.HOURS))
def oidc_key_maintenance(event):
    """Runs hourly; rotates or trims only when the timers in SPEC.md say so."""
    from chalicelib.admin.oidc import run_due_maintenance

    run_due_maintenance()
