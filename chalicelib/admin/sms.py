"""Outbound SMS through the provider's messages API (Twilio's REST shape).

``POST {base}/2010-04-01/Accounts/{sid}/Messages.json`` with form fields To, From, Body and
HTTP basic auth (account sid, auth token). The base URL comes from REGISTRY_SMS_API_URL so
tests point it at a local server.
"""

from __future__ import annotations

import base64
import json
import socket
import urllib.error
import urllib.parse
import urllib.request

from chalicelib.core.api.errors import BadGateway, BadRequest, GatewayTimeout
from chalicelib.core.settings import get_settings


def send_test_sms(account_sid: str, auth_token: str, from_number: str, to_number: str) -> None:
    settings = get_settings()
    sid = urllib.parse.quote(account_sid, safe="")
    url = f"{settings.sms_api_url}/2010-04-01/Accounts/{sid}/Messages.json"
    form = urllib.parse.urlencode(
        {"To": to_number, "From": from_number, "Body": "Test message from the module registry."}
    ).encode()
    credentials = base64.b64encode(f"{account_sid}:{auth_token}".encode()).decode()
    request = urllib.request.Request(
        url,
        data=form,
        method="POST",
        headers={
            "Authorization": f"Basic {credentials}",
            "Content-Type": "application/x-www-form-urlencoded",
            "Accept": "application/json",
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=settings.sms_timeout) as response:
            response.read()
    except urllib.error.HTTPError as exc:
        detail = _provider_message(exc)
        if 400 <= exc.code < 500:
            raise BadRequest(
                f"the SMS provider refused the test message ({exc.code}): {detail}"
            ) from None
        raise BadGateway(f"the SMS provider failed ({exc.code}): {detail}") from None
    except TimeoutError:
        raise GatewayTimeout("the SMS provider did not answer in time") from None
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, TimeoutError | socket.timeout):
            raise GatewayTimeout("the SMS provider did not answer in time") from None
        raise BadGateway(f"could not reach the SMS provider: {type(exc.reason).__name__}") from None


def _provider_message(error: urllib.error.HTTPError) -> str:
    try:
        body = json.loads(error.read() or b"{}")
    except ValueError:
        return "no details"
    message = body.get("message") if isinstance(body, dict) else None
    return str(message)[:300] if message else "no details"
