"""AWS Signature Version 4 checks in front of the local moto server, made as S3 makes them.

moto serves whatever reaches its port: unsigned, tampered and expired requests alike, and an
anonymous listing of the archive bucket. ``SigV4Check`` is a WSGI middleware that refuses a
request unless it is signed with the local stack's credentials, in one of the two ways AWS
accepts:

* a presigned URL (``X-Amz-Algorithm``, ``X-Amz-Credential``, ``X-Amz-Date``,
  ``X-Amz-Expires``, ``X-Amz-SignedHeaders``, ``X-Amz-Signature`` in the query string), as
  ``links.upload`` and ``X-Terraform-Get`` are: the payload is ``UNSIGNED-PAYLOAD``; the URL is
  refused once ``X-Amz-Date`` + ``X-Amz-Expires`` has passed;
* an ``Authorization: AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=...``
  header, as the app's own boto3 clients send: the payload hash is ``x-amz-content-sha256``
  (checked against the body when it is a digest) or the body's SHA-256 (DynamoDB, SQS, KMS);
  ``X-Amz-Date`` may be at most 15 minutes away from now.

The canonical request is rebuilt from the request as it arrived: its method, its path (S3: the
decoded path encoded once; other services: normalised and encoded again), every query
parameter but the signature (decoded, re-encoded and sorted, so a client that re-encodes the
query string, as go-getter does, still matches), the signed headers with the values the client
sent (``host`` is the host and port it connected to) and the payload hash. The signature is
recomputed with the secret of the credential's access key and compared in constant time. So a
changed method, path, bucket, expiry, date, credential, signed header or any other parameter
fails, as on S3.

One tolerance: the registry appends go-getter's ``archive=tar.gz`` hint to the presigned
download URL after signing; go-getter removes it before fetching, other clients (curl,
requests) send it. When the signature does not match with it, it is tried without it (the only
parameter treated so). Not checked: the chunk signatures of ``STREAMING-AWS4-HMAC-SHA256-PAYLOAD``
uploads (the seed signature is) and POST-policy uploads (refused as unsigned).

Refusals are 403s with S3's XML error document (JSON for the JSON-protocol services), and no
body for HEAD, as S3 answers.
"""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import posixpath
import secrets
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlsplit
from xml.sax.saxutils import escape

ALGORITHM = "AWS4-HMAC-SHA256"
UNSIGNED_PAYLOAD = "UNSIGNED-PAYLOAD"
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
MAX_EXPIRES = 7 * 24 * 3600  # S3's limit for a presigned URL: a week
MAX_SKEW = timedelta(minutes=15)  # S3's limit for a header-signed request's date
QUERY_AUTH = (
    "X-Amz-Algorithm",
    "X-Amz-Credential",
    "X-Amz-Date",
    "X-Amz-Expires",
    "X-Amz-SignedHeaders",
    "X-Amz-Signature",
)
GO_GETTER_HINT = "archive"
ENVIRON_SERVICE = "registry.signed_service"  # set for the layers behind the check

StartResponse = Callable[..., Any]
WsgiApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


class Refused(Exception):
    """The request is not signed as it must be; renders as S3 does."""

    def __init__(self, code: str, message: str, status: int = 403, **details: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.status = status
        self.details = details


@dataclass(frozen=True)
class Signed:
    """What a valid signature vouches for."""

    access_key: str
    service: str
    region: str
    presigned: bool


def _aws_time(value: str) -> datetime:
    return datetime.strptime(value, "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)


def _hmac(key: bytes, message: str) -> bytes:
    return hmac.new(key, message.encode(), hashlib.sha256).digest()


def signature(secret: str, scope: str, amz_date: str, canonical_request: str) -> str:
    """SigV4: HMAC-SHA256 of the string to sign with the key derived from secret and scope."""
    date, region, service, terminator = scope.split("/")
    key = _hmac(("AWS4" + secret).encode(), date)
    for part in (region, service, terminator):
        key = _hmac(key, part)
    return hmac.new(
        key, string_to_sign(scope, amz_date, canonical_request).encode(), "sha256"
    ).hexdigest()


def string_to_sign(scope: str, amz_date: str, canonical_request: str) -> str:
    digest = hashlib.sha256(canonical_request.encode()).hexdigest()
    return f"{ALGORITHM}\n{amz_date}\n{scope}\n{digest}"


def _encode(value: str) -> str:
    return quote(value, safe="-_.~")


def canonical_path(raw_path: str, service: str) -> str:
    """S3 signs the object key encoded once, as is; other services a normalised path,
    encoded again."""
    if service == "s3":
        return quote(unquote(raw_path or "/"), safe="/~")
    path = posixpath.normpath(raw_path or "/")
    if raw_path.endswith("/") and path != "/":
        path += "/"
    return quote(path.replace("//", "/"), safe="/~")


def canonical_query(pairs: Iterable[tuple[str, str]]) -> str:
    return "&".join(f"{k}={v}" for k, v in sorted((_encode(k), _encode(v)) for k, v in pairs))


def canonical_request(
    method: str,
    path: str,
    query: Iterable[tuple[str, str]],
    headers: Mapping[str, str],
    signed_headers: list[str],
    payload_hash: str,
) -> str:
    lines = [f"{name}:{' '.join(headers.get(name, '').split())}" for name in signed_headers]
    return "\n".join(
        [
            method,
            path,
            canonical_query(query),
            "\n".join(lines) + "\n",
            ";".join(signed_headers),
            payload_hash,
        ]
    )


def _environ_header(environ: Mapping[str, Any], name: str) -> str | None:
    key = name.upper().replace("-", "_")
    if key not in ("CONTENT_TYPE", "CONTENT_LENGTH"):
        key = "HTTP_" + key
    value = environ.get(key)
    return None if value is None else str(value)


def _raw_path(environ: Mapping[str, Any]) -> str:
    raw = str(environ.get("RAW_URI") or environ.get("REQUEST_URI") or "")
    if raw.startswith(("http://", "https://")):
        raw = urlsplit(raw).path
    raw = raw.split("?", 1)[0]
    if not raw:  # not werkzeug's server: rebuild from the decoded path
        raw = quote(str(environ.get("PATH_INFO") or "/"), safe="/~!$&'()*+,;=:@%")
    return raw


def _read_body(environ: dict[str, Any]) -> bytes:
    """The request body, put back for the application behind."""
    stream = environ["wsgi.input"]
    if environ.get("wsgi.input_terminated"):
        body = stream.read()
    else:
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        body = stream.read(length) if length > 0 else b""
    environ["wsgi.input"] = io.BytesIO(body)
    return body


def _drain(environ: dict[str, Any], limit: int = 256 * 1024 * 1024) -> None:
    """Read and drop a refused request's body: the server closes the connection after the
    answer, and closing with unread data makes the kernel reset the connection, so a client
    still uploading would see a reset instead of the 403."""
    stream = environ["wsgi.input"]
    if environ.get("wsgi.input_terminated"):
        remaining = limit
    else:
        try:
            remaining = min(int(environ.get("CONTENT_LENGTH") or 0), limit)
        except ValueError:
            return
    try:
        while remaining > 0:
            chunk = stream.read(min(remaining, 1024 * 1024))
            if not chunk:
                return
            remaining -= len(chunk)
    except OSError:
        return


class Verifier:
    """Checks SigV4 signatures made with one of ``credentials`` (access key -> secret)."""

    def __init__(
        self, credentials: Mapping[str, str], now: Callable[[], datetime] | None = None
    ) -> None:
        self.credentials = dict(credentials)
        self.now = now or (lambda: datetime.now(UTC))

    def verify(self, environ: dict[str, Any]) -> Signed:
        query = parse_qsl(
            str(environ.get("QUERY_STRING") or ""), keep_blank_values=True, errors="replace"
        )
        names = {name for name, _ in query}
        authorization = _environ_header(environ, "authorization")
        if authorization is not None and authorization.startswith("AWS4-HMAC-SHA256"):
            if "X-Amz-Signature" in names:
                raise Refused(
                    "InvalidArgument",
                    "Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter,"
                    " Signature query string parameter or the Authorization header should be"
                    " specified",
                    400,
                )
            return self._verify_header(environ, authorization, query)
        if authorization:
            raise Refused("AccessDenied", "Unsupported Authorization Type")
        if "X-Amz-Algorithm" in names or "X-Amz-Signature" in names:
            return self._verify_query(environ, query)
        raise Refused("AccessDenied", "Access Denied")

    # ----- the two forms ----------------------------------------------------------------

    def _verify_query(self, environ: dict[str, Any], query: list[tuple[str, str]]) -> Signed:
        params: dict[str, str] = {}
        for name, value in query:
            if name in QUERY_AUTH:
                if name in params:
                    raise Refused("AuthorizationQueryParametersError", f"{name} appears twice")
                params[name] = value
        missing = [name for name in QUERY_AUTH if name not in params]
        if missing:
            raise Refused(
                "AuthorizationQueryParametersError",
                "Query-string authentication version 4 requires the X-Amz-Algorithm,"
                " X-Amz-Credential, X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders,"
                " and X-Amz-Expires parameters.",
            )
        if params["X-Amz-Algorithm"] != ALGORITHM:
            raise Refused(
                "AuthorizationQueryParametersError",
                'X-Amz-Algorithm only supports "AWS4-HMAC-SHA256"',
            )
        access_key, scope, service, region = self._credential(params["X-Amz-Credential"])
        amz_date = params["X-Amz-Date"]
        signed_at = self._date(amz_date, scope)
        try:
            expires = int(params["X-Amz-Expires"])
        except ValueError:
            expires = -1
        if not 0 < expires <= MAX_EXPIRES:
            raise Refused(
                "AuthorizationQueryParametersError",
                "X-Amz-Expires must be a number of seconds from 1 to 604800 (a week)",
            )
        now = self.now()
        if signed_at - now > MAX_SKEW:
            raise Refused("AccessDenied", "Request is not valid yet")
        if now > signed_at + timedelta(seconds=expires):
            raise Refused(
                "AccessDenied",
                "Request has expired",
                403,
                **{
                    "X-Amz-Expires": str(expires),
                    "Expires": (signed_at + timedelta(seconds=expires)).strftime(
                        "%Y-%m-%dT%H:%M:%SZ"
                    ),
                    "ServerTime": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
                },
            )
        signed_headers = self._signed_headers(params["X-Amz-SignedHeaders"])
        unsigned = [(k, v) for k, v in query if k != "X-Amz-Signature"]
        payload = UNSIGNED_PAYLOAD if service == "s3" else self._body_hash(environ)
        attempts = [unsigned]
        if any(k == GO_GETTER_HINT for k, _ in unsigned):
            attempts.append([(k, v) for k, v in unsigned if k != GO_GETTER_HINT])
        self._check(
            environ,
            access_key,
            scope,
            amz_date,
            service,
            attempts,
            signed_headers,
            payload,
            params["X-Amz-Signature"],
        )
        return Signed(access_key, service, region, presigned=True)

    def _verify_header(
        self, environ: dict[str, Any], authorization: str, query: list[tuple[str, str]]
    ) -> Signed:
        fields: dict[str, str] = {}
        for part in authorization[len(ALGORITHM) :].split(","):
            name, _, value = part.strip().partition("=")
            fields[name] = value
        if not {"Credential", "SignedHeaders", "Signature"} <= fields.keys():
            raise Refused(
                "AuthorizationHeaderMalformed",
                "The authorization header is malformed; it must carry Credential,"
                " SignedHeaders and Signature.",
                400,
            )
        access_key, scope, service, region = self._credential(fields["Credential"])
        amz_date = _environ_header(environ, "x-amz-date")
        if not amz_date:
            raise Refused(
                "AccessDenied", "AWS authentication requires a valid Date or x-amz-date header"
            )
        signed_at = self._date(amz_date, scope)
        now = self.now()
        if abs(now - signed_at) > MAX_SKEW:
            raise Refused(
                "RequestTimeTooSkewed",
                "The difference between the request time and the current time is too large.",
                RequestTime=amz_date,
                ServerTime=now.strftime("%Y-%m-%dT%H:%M:%SZ"),
                MaxAllowedSkewMilliseconds="900000",
            )
        signed_headers = self._signed_headers(fields["SignedHeaders"])
        declared = _environ_header(environ, "x-amz-content-sha256")
        if declared is None:
            if service == "s3":
                raise Refused(
                    "InvalidRequest",
                    "Missing required header for this request: x-amz-content-sha256",
                    400,
                )
            payload = self._body_hash(environ)
        else:
            payload = declared
            if len(declared) == 64 and all(c in "0123456789abcdef" for c in declared):
                actual = self._body_hash(environ)
                if not hmac.compare_digest(actual, declared):
                    raise Refused(
                        "XAmzContentSHA256Mismatch",
                        "The provided 'x-amz-content-sha256' header does not match what was"
                        " computed.",
                        400,
                        ClientComputedContentSHA256=declared,
                        S3ComputedContentSHA256=actual,
                    )
        self._check(
            environ,
            access_key,
            scope,
            amz_date,
            service,
            [query],
            signed_headers,
            payload,
            fields["Signature"],
        )
        return Signed(access_key, service, region, presigned=False)

    # ----- shared steps -----------------------------------------------------------------

    def _credential(self, credential: str) -> tuple[str, str, str, str]:
        parts = credential.split("/")
        if len(parts) != 5 or parts[4] != "aws4_request" or not all(parts):
            raise Refused(
                "AuthorizationQueryParametersError",
                "Error parsing the X-Amz-Credential parameter; the Credential is mal-formed;"
                ' expecting "<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request".',
            )
        access_key = parts[0]
        if access_key not in self.credentials:
            raise Refused(
                "InvalidAccessKeyId",
                "The AWS Access Key Id you provided does not exist in our records.",
                AWSAccessKeyId=access_key,
            )
        return access_key, "/".join(parts[1:]), parts[3], parts[2]

    @staticmethod
    def _date(amz_date: str, scope: str) -> datetime:
        try:
            signed_at = _aws_time(amz_date)
        except ValueError:
            raise Refused(
                "AuthorizationQueryParametersError",
                "X-Amz-Date must be in the ISO8601 Long Format \"yyyyMMdd'T'HHmmss'Z'\"",
            ) from None
        if scope.split("/")[0] != amz_date[:8]:
            raise Refused(
                "SignatureDoesNotMatch",
                "The date of the credential scope is not the date of the request.",
            )
        return signed_at

    @staticmethod
    def _signed_headers(value: str) -> list[str]:
        names = value.split(";")
        if "host" not in names or names != sorted(names) or not all(names):
            raise Refused(
                "AccessDenied",
                "There were headers present in the request which were not signed"
                if "host" not in names
                else "SignedHeaders must be sorted lowercase header names including host",
            )
        return names

    @staticmethod
    def _body_hash(environ: dict[str, Any]) -> str:
        return hashlib.sha256(_read_body(environ)).hexdigest()

    def _check(
        self,
        environ: dict[str, Any],
        access_key: str,
        scope: str,
        amz_date: str,
        service: str,
        queries: list[list[tuple[str, str]]],
        signed_headers: list[str],
        payload: str,
        provided: str,
    ) -> None:
        headers = {}
        for name in signed_headers:
            value = _environ_header(environ, name)
            if value is not None:
                headers[name] = value
        method = str(environ.get("REQUEST_METHOD", "GET")).upper()
        path = canonical_path(_raw_path(environ), service)
        secret = self.credentials[access_key]
        first = ""
        for query in queries:
            request = canonical_request(method, path, query, headers, signed_headers, payload)
            expected = signature(secret, scope, amz_date, request)
            if hmac.compare_digest(expected.encode(), provided.encode()):
                return
            first = first or request
        raise Refused(
            "SignatureDoesNotMatch",
            "The request signature we calculated does not match the signature you provided."
            " Check your key and signing method.",
            AWSAccessKeyId=access_key,
            StringToSign=string_to_sign(scope, amz_date, first),
            SignatureProvided=provided,
            CanonicalRequest=first,
        )


def error_response(refused: Refused, environ: Mapping[str, Any]) -> tuple[str, list, bytes]:
    request_id = secrets.token_hex(8).upper()
    if environ.get("HTTP_X_AMZ_TARGET"):  # DynamoDB, SQS (JSON), KMS
        content_type = "application/x-amz-json-1.0"
        body = json.dumps({"__type": refused.code, "message": refused.message}).encode()
    else:
        content_type = "application/xml"
        details = "".join(f"<{k}>{escape(v)}</{k}>" for k, v in refused.details.items())
        body = (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            f"<Error><Code>{escape(refused.code)}</Code><Message>{escape(refused.message)}"
            f"</Message>{details}<RequestId>{request_id}</RequestId>"
            f"<HostId>{secrets.token_urlsafe(24)}</HostId></Error>"
        ).encode()
    if environ.get("REQUEST_METHOD") == "HEAD":
        body = b""
    reason = {400: "Bad Request", 403: "Forbidden"}.get(refused.status, "Error")
    headers = [
        ("Content-Type", content_type),
        ("Content-Length", str(len(body))),
        ("x-amz-request-id", request_id),
    ]
    return f"{refused.status} {reason}", headers, body


class SigV4Check:
    """WSGI middleware: only correctly signed requests reach ``app``.

    CORS preflights (OPTIONS) pass unsigned, as S3 answers them before authentication."""

    def __init__(self, app: WsgiApp, verifier: Verifier) -> None:
        self.app = app
        self.verifier = verifier

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        if environ.get("REQUEST_METHOD") == "OPTIONS":
            return self.app(environ, start_response)
        try:
            signed = self.verifier.verify(environ)
        except Refused as refused:
            _drain(environ)
            status, headers, body = error_response(refused, environ)
            start_response(status, headers)
            return [body]
        environ[ENVIRON_SERVICE] = signed.service
        return self.app(environ, start_response)
