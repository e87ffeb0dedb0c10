"""Outbound SMS through the provider's messages API (Twilio's REST shape).

``POST {base}/2010-04-01/Accounts/{sid}/Messages.json`` with form fields To, From, Body and
HTTP basic auth (account sid, auth token). The base URL comes from REGISTRY_SMS_API_URL so
tests point it at a local server; the request goes through ``core.outbound``, to that
configured origin (trusted: the operator named it) and nowhere else.
"""

from __future__ import annotations

import base64
import json
import urllib.parse

from chalicelib.core import outbound
from chalicelib.core.api.errors import BadGateway, BadRequest, GatewayTimeout
from chalicelib.core.settings import get_settings

MAX_ANSWER_BYTES = 64 * 1024


def send_test_sms(account_sid: str, auth_token: str, from_number: str, to_number: str) -> None:
    settings = get_settings()
    sid = urllib.parse.quote(account_sid, safe="")
    url = f"{settings.sms_api_url}/2010-04-01/Accounts/{sid}/Messages.json"
    form = urllib.parse.urlencode(
        {"To": to_number, "From": from_number, "Body": "Test message from the module registry."}
    ).encode()
    credentials = base64.b64encode(f"{account_sid}:{auth_token}".encode()).decode()
    headers = {
        "Authorization": f"Basic {credentials}",
        "Content-Type": "application/x-www-form-urlencoded",
        "Accept": "application/json",
    }
    try:
        where = outbound.Destinations.of(trusted=[settings.sms_api_url])
        with outbound.fetch(
            url, where, timeout=settings.sms_timeout, method="POST", headers=headers, body=form
        ) as response:
            answer = response.read_at_most(MAX_ANSWER_BYTES)
    except outbound.TimedOut:
        raise GatewayTimeout("the SMS provider did not answer in time") from None
    except outbound.OutboundError:
        raise BadGateway("could not reach the SMS provider") from None
    if response.status < 400:
        return
    detail = _provider_message(answer)
    if response.status < 500:
        raise BadRequest(f"the SMS provider refused the test message ({response.status}): {detail}")
    raise BadGateway(f"the SMS provider failed ({response.status}): {detail}")


def _provider_message(answer: bytes) -> str:
    try:
        body = json.loads(answer or b"{}")
    except ValueError:
        return "no details"
    message = body.get("message") if isinstance(body, dict) else None
    return str(message)[:300] if message else "no details"
