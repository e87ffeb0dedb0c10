"""A browser over Chalice's test client, for the web UI's in-process tests: a cookie jar
(Secure cookies included, as Chromium keeps them for localhost), forms, the CSRF token."""

from __future__ import annotations

import re
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import urlencode

HOST = "registry.test"


class Browser:
    """Keeps cookies between requests, as a browser does (Secure cookies included)."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.cookies: dict[str, str] = {}
        self.last_set_cookies: list[str] = []

    def request(
        self,
        method: str,
        path: str,
        form: dict[str, str | list[str]] | None = None,
        headers: dict[str, str] | None = None,
    ) -> Any:
        headers = {"Host": HOST, **(headers or {})}
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        body = None
        if form is not None:
            headers["Content-Type"] = "application/x-www-form-urlencoded"
            body = urlencode(form, doseq=True)  # a list: repeated fields (checkboxes)
        response = getattr(self.client.http, method.lower())(path, headers=headers, body=body)
        raw = response.headers.get("set-cookie") or response.headers.get("Set-Cookie")
        self.last_set_cookies = []
        if raw:
            values = raw if isinstance(raw, list) else re.split(r",\s*(?=\w+=)", raw)
            for value in values:
                self.last_set_cookies.append(value)
                jar: SimpleCookie = SimpleCookie()
                jar.load(value)
                for name, morsel in jar.items():
                    if morsel["max-age"] == "0":
                        self.cookies.pop(name, None)
                    else:
                        self.cookies[name] = morsel.value
        response.text = response.body.decode() if isinstance(response.body, bytes) else ""
        return response

    def get(self, path: str) -> Any:
        return self.request("GET", path)

    def post(
        self, path: str, form: dict[str, str | list[str]], headers: dict[str, str] | None = None
    ) -> Any:
        return self.request("POST", path, form, headers)

    def csrf(self, path: str = "/app/sign-in") -> str:
        page = self.get(path)
        match = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
        assert match, page.text
        return match.group(1)

    def sign_in(self, token: str, next_: str = "") -> Any:
        return self.post("/app/sign-in", {"token": token, "csrf_token": self.csrf(), "next": next_})
