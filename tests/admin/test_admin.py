"""Site-admin settings, secrets at rest, OIDC keys and API rate limiting (fast layer)."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from chalicelib.core.settings import get_settings
from tests.conftest import Api, Clock, Reply
from tests.support.admin_servers import (
    SMTP_PASSWORD,
    SMTP_USER,
    self_signed_certificate,
    silent_server,
    sms_provider,
    smtp_server,
)

ADMIN = "/api/v2/admin"
SINGLETONS = (
    "general-settings",
    "cost-estimation-settings",
    "saml-settings",
    "smtp-settings",
    "sms-settings",
    "twilio-settings",
    "customization-settings",
)
ACTIONS = (
    "saml-settings/actions/revoke-old-certificate",
    "oidc-settings/actions/rotate-key",
    "oidc-settings/actions/trim-key",
    "sms-settings/verify",
    "twilio-settings/verify",
    "data-retention-policy-settings",
)
SECRETS = (
    SMTP_PASSWORD,
    "aws-secret-never-shown",
    "azure-secret-never-shown",
    '{"type": "service_account", "private_key": "gcp-never-shown"}',
    "sms-auth-token-never-shown",
)


def body(**attributes: Any) -> dict[str, Any]:
    """What go-tfe sends for admin singletons: an empty type."""
    return {"data": {"type": "", "attributes": attributes}}


@pytest.fixture(autouse=True)
def fresh_settings_cache() -> Iterator[None]:
    """Each test has fresh tables: the per-instance settings cache must not outlive them."""
    from chalicelib.admin import store

    store.forget_cached_settings()
    yield
    store.forget_cached_settings()


class Recorder(Api):
    """An Api that remembers every response body, to look for leaked secrets."""

    seen: list[bytes]

    def call(self, *args: Any, **kw: Any) -> Reply:
        reply = super().call(*args, **kw)
        self.seen.append(reply.body)
        return reply


@pytest.fixture
def admin(api: Api, caplog: pytest.LogCaptureFixture) -> Iterator[Recorder]:
    recorder = Recorder(api.client, api.token)
    recorder.seen = []
    caplog.set_level(logging.INFO)
    yield recorder
    everything = b"\n".join(recorder.seen).decode("utf-8", "replace") + caplog.text
    for secret in SECRETS:
        assert secret not in everything
        assert json.dumps(secret)[1:-1] not in everything


@pytest.fixture
def setting(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Change REGISTRY_* environment settings for one test."""

    def set_(**values: str) -> None:
        for name, value in values.items():
            monkeypatch.setenv(name, value)
        get_settings.cache_clear()

    yield set_
    monkeypatch.undo()
    get_settings.cache_clear()


def settings_item(area: str) -> dict[str, Any]:
    """The raw DynamoDB item of a settings area, as stored."""
    from chalicelib.core.data.aws import client

    table = get_settings().table_name("settings")
    return client("dynamodb").get_item(TableName=table, Key={"id": {"S": area}}).get("Item", {})


def new_user_client(api: Api, name: str) -> Api:
    from chalicelib.accounts.users.service import create_user
    from chalicelib.core.auth import mint_token

    user = create_user(name, f"{name}@x.io")
    return api.as_(mint_token("user", user.id)[1])


# ----- access ----------------------------------------------------------------------------------


def test_admin_endpoints_are_404_for_everyone_but_site_admins(api: Api) -> None:
    bob = new_user_client(api, "bob")
    for path in SINGLETONS:
        assert api.get(f"{ADMIN}/{path}").status == 200, path
        assert bob.get(f"{ADMIN}/{path}").status == 404, path
        assert bob.patch(f"{ADMIN}/{path}", body(enabled=True)).status == 404, path
        assert api.as_(None).get(f"{ADMIN}/{path}").status == 401, path
    for path in ACTIONS:
        assert bob.post(f"{ADMIN}/{path}", body()).status == 404, path
    assert bob.delete(f"{ADMIN}/data-retention-policy-settings").status == 404
    assert bob.get(f"{ADMIN}/data-retention-policy-settings").status == 404
    assert api.as_("not-a-token").get(f"{ADMIN}/general-settings").status == 401
    # nothing changed behind the 404s
    assert api.get(f"{ADMIN}/smtp-settings").data["attributes"]["enabled"] is False


def test_hosted_edition_answers_404_on_every_admin_path(api: Api, hosted: None) -> None:
    for path in SINGLETONS:
        for client in (api, api.as_(None)):
            reply = client.get(f"{ADMIN}/{path}")
            assert reply.status == 404, path
            assert reply.error["status"] == "404"
        assert api.patch(f"{ADMIN}/{path}", body()).status == 404
    for path in ACTIONS:
        assert api.post(f"{ADMIN}/{path}", body()).status == 404, path
    assert api.get("/.well-known/jwks").status == 200  # public keys stay published


# ----- general settings ------------------------------------------------------------------------


def test_general_settings_defaults_update_and_deprecated_aliases(
    rate_limited: None, admin: Recorder
) -> None:
    attributes = admin.get(f"{ADMIN}/general-settings").data["attributes"]
    assert attributes["api-rate-limit"] == 30
    assert attributes["api-rate-limiting-enabled"] is True
    assert attributes["limit-user-organization-creation"] is True
    assert attributes["plan-timeout"] == "2h" and attributes["apply-timeout"] == "24h"
    assert attributes["terraform-build-worker-plan-timeout"] == "2h"

    # go-tfe: empty type, null for the timeouts it does not set
    reply = admin.patch(
        f"{ADMIN}/general-settings",
        body(**{"api-rate-limit": 50, "plan-timeout": None, "apply-timeout": None}),
    )
    assert reply.status == 200, reply.json
    assert reply.data["type"] == "general-settings" and reply.data["id"] == "general"
    assert reply.data["attributes"]["api-rate-limit"] == 50
    assert reply.data["attributes"]["plan-timeout"] == "2h"

    # pytfe: real type, snake_case; the deprecated name sets the new one
    reply = admin.patch(
        f"{ADMIN}/general-settings",
        {
            "data": {
                "type": "general-settings",
                "attributes": {
                    "plan_timeout": "30m",
                    "terraform-build-worker-apply-timeout": "1.5h",
                },
            }
        },
    )
    assert reply.status == 200, reply.json
    assert reply.data["attributes"]["plan-timeout"] == "30m"
    assert reply.data["attributes"]["apply-timeout"] == "1.5h"
    assert reply.data["attributes"]["terraform-build-worker-apply-timeout"] == "1.5h"
    assert admin.get(f"{ADMIN}/general-settings").data["attributes"]["api-rate-limit"] == 50


GENERAL_422 = [
    ({"api-rate-limit": 29}, "api-rate-limit"),
    ({"api-rate-limit": "50"}, "api-rate-limit"),
    ({"api-rate-limit": 50.5}, "api-rate-limit"),
    ({"api-rate-limiting-enabled": "false"}, "api-rate-limiting-enabled"),
    ({"limit-user-organization-creation": 0}, "limit-user-organization-creation"),
    ({"plan-timeout": "2 hours"}, "plan-timeout"),
    ({"apply-timeout": "0h"}, "apply-timeout"),
    ({"apply-timeout": 3600}, "apply-timeout"),
    ({"terraform-build-worker-plan-timeout": "soon"}, "terraform-build-worker-plan-timeout"),
]


def test_general_settings_422_changes_nothing(admin: Recorder) -> None:
    before = admin.get(f"{ADMIN}/general-settings").data
    for attributes, pointer in GENERAL_422:
        # a valid attribute beside the bad one must not be applied either
        update = body(**{"api-rate-limit": 99, "plan-timeout": "1h", **attributes})
        reply = admin.patch(f"{ADMIN}/general-settings", update)
        assert reply.status == 422, (attributes, reply.json)
        assert reply.error["source"]["pointer"] == f"/data/attributes/{pointer}"
        assert admin.get(f"{ADMIN}/general-settings").data == before


def test_malformed_documents_are_422(admin: Recorder) -> None:
    assert admin.patch(f"{ADMIN}/general-settings", {"data": []}).status == 422
    reply = admin.patch(f"{ADMIN}/general-settings", {"data": {"attributes": ["x"]}})
    assert reply.status == 422 and reply.error["source"]["pointer"] == "/data/attributes"
    assert admin.patch(f"{ADMIN}/general-settings", raw="{not json").status == 400


def test_limit_user_organization_creation_is_enforced(admin: Recorder) -> None:
    bob = new_user_client(admin, "bob")
    create = {"data": {"type": "organizations", "attributes": {"name": "b", "email": "b@x.io"}}}
    assert bob.post("/api/v2/organizations", create).status == 404
    reply = admin.patch(
        f"{ADMIN}/general-settings", body(**{"limit-user-organization-creation": False})
    )
    assert reply.status == 200
    assert bob.post("/api/v2/organizations", create).status == 201


# ----- cost estimation -------------------------------------------------------------------------


def test_cost_estimation_aliases_write_only_secrets_and_complete_sets(admin: Recorder) -> None:
    path = f"{ADMIN}/cost-estimation-settings"
    initial = admin.get(path).data["attributes"]
    assert initial["enabled"] is False and initial["aws-enabled"] is False

    # half a set is not enough to enable
    reply = admin.patch(path, body(enabled=True, **{"aws-access-key-id": "AKIAEXAMPLE"}))
    assert reply.status == 422 and reply.error["source"]["pointer"] == "/data/attributes/enabled"
    assert admin.get(path).data["attributes"] == initial

    reply = admin.patch(
        path,
        body(
            enabled=True,
            **{"aws-access-key-id": "AKIAEXAMPLE", "cloud-a-secret-key": "aws-secret-never-shown"},
        ),
    )
    assert reply.status == 200, reply.json
    attributes = reply.data["attributes"]
    assert attributes["enabled"] is True
    assert attributes["aws-access-key-id"] == attributes["cloud-a-access-key-id"] == "AKIAEXAMPLE"
    assert attributes["aws-secret-key"] is None and attributes["cloud-a-secret-key"] is None
    assert attributes["aws-enabled"] is attributes["cloud-a-enabled"] is True
    assert attributes["gcp-enabled"] is False and attributes["azure-enabled"] is False

    gcp = '{"type": "service_account", "private_key": "gcp-never-shown"}'
    azure = {
        "azure-client-id": "cid",
        "cloud-c-client-secret": "azure-secret-never-shown",
        "azure-subscription-id": "sub",
        "cloud-c-tenant-id": "tenant",
    }
    reply = admin.patch(path, body(**{"gcp-credentials": gcp}, **azure))
    assert reply.status == 200, reply.json
    attributes = reply.data["attributes"]
    assert attributes["gcp-enabled"] is True and attributes["azure-enabled"] is True
    assert attributes["gcp-credentials"] is None and attributes["cloud-c-client-secret"] is None
    assert attributes["azure-tenant-id"] == "tenant"

    # clearing the only other sets: still enabled thanks to GCP
    reply = admin.patch(path, body(**{"aws-secret-key": "", "azure-client-secret": ""}))
    assert reply.status == 200
    assert reply.data["attributes"]["aws-enabled"] is False
    # ... and clearing GCP too would leave none
    before = admin.get(path).data
    reply = admin.patch(path, body(**{"cloud-b-credentials": ""}))
    assert reply.status == 422
    assert admin.get(path).data == before

    reply = admin.patch(path, body(**{"gcp-credentials": "not json"}))
    assert reply.status == 422
    assert reply.error["source"]["pointer"] == "/data/attributes/gcp-credentials"
    reply = admin.patch(path, body(**{"aws-secret-key": 12}))
    assert reply.status == 422
    assert admin.get(path).data == before

    stored = json.dumps(settings_item("cost-estimation"))
    assert "gcp-never-shown" not in stored and "aws-secret-never-shown" not in stored


# ----- SAML ------------------------------------------------------------------------------------


def test_saml_rules_certificate_rotation_and_revocation(admin: Recorder) -> None:
    path = f"{ADMIN}/saml-settings"
    attributes = admin.get(path).data["attributes"]
    assert attributes["enabled"] is False
    assert (
        attributes["attr-username"] == "Username" and attributes["site-admin-role"] == "site-admins"
    )
    assert attributes["sso-api-token-session-timeout"] == 1209600
    assert attributes["acs-consumer-url"].endswith("/users/saml/auth")
    assert attributes["metadata-url"].endswith("/users/saml/metadata")
    assert attributes["acs-consumer-url"].startswith("http")
    assert attributes["old-idp-cert"] is None and attributes["private-key"] is None
    before = admin.get(path).data

    # enabling needs every required attribute
    reply = admin.patch(path, body(enabled=True))
    assert reply.status == 422 and reply.error["source"]["pointer"] == "/data/attributes/idp-cert"
    reply = admin.patch(path, body(enabled=True, **{"idp-cert": "  "}))
    assert reply.status == 422 and reply.error["source"]["pointer"] == "/data/attributes/idp-cert"
    assert "must not be empty" in reply.error["detail"]
    reply = admin.patch(path, body(**{"sso-endpoint-url": "http://idp.example.test/sso"}))
    assert reply.status == 422
    assert admin.patch(path, body(**{"signature-digest-method": "MD5"})).status == 422
    assert admin.patch(path, body(**{"sso-api-token-session-timeout": "60"})).status == 422
    assert admin.get(path).data == before

    first, second = self_signed_certificate("one"), self_signed_certificate("two")
    enable = {
        "enabled": True,
        "idp-cert": first,
        "sso-endpoint-url": "https://idp.example.test/sso",
        "slo-endpoint-url": "https://idp.example.test/slo",
    }
    reply = admin.patch(path, {"data": {"type": "saml-settings", "attributes": enable}})
    assert reply.status == 200, reply.json
    assert reply.data["attributes"]["idp-cert"] == first
    assert reply.data["attributes"]["old-idp-cert"] is None

    reply = admin.patch(path, body(**{"idp-cert": second, "debug": True}))
    assert reply.status == 200
    assert reply.data["attributes"]["idp-cert"] == second
    assert reply.data["attributes"]["old-idp-cert"] == first
    assert reply.data["attributes"]["debug"] is True
    assert reply.data["attributes"]["enabled"] is True  # omitted attributes keep their values

    revoked = admin.post(f"{path}/actions/revoke-old-certificate")
    assert revoked.status == 200
    assert revoked.data["attributes"]["old-idp-cert"] is None
    assert revoked.data["attributes"]["idp-cert"] == second

    # signed requests need the SP certificate and private key; the key is write-only
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    assert admin.patch(path, body(**{"authn-requests-signed": True})).status == 422
    reply = admin.patch(
        path,
        body(**{"authn-requests-signed": True, "certificate": first, "private-key": pem}),
    )
    assert reply.status == 200, reply.json
    assert reply.data["attributes"]["private-key"] is None
    assert reply.data["attributes"]["certificate"] == first
    assert "PRIVATE KEY" not in b"".join(admin.seen).decode()
    assert "PRIVATE KEY" not in json.dumps(settings_item("saml"))


SAML = f"{ADMIN}/saml-settings"
# Every attribute go-tfe's AdminSAMLSetting models (v1.109.0), besides the two site URLs.
SAML_FRESH = {
    "enabled": False,
    "debug": False,
    "authn-requests-signed": False,
    "want-assertions-signed": False,
    "team-management-enabled": False,
    "old-idp-cert": None,
    "idp-cert": None,
    "slo-endpoint-url": None,
    "sso-endpoint-url": None,
    "attr-username": "Username",
    "attr-groups": "MemberOf",
    "attr-site-admin": "SiteAdmin",
    "site-admin-role": "site-admins",
    "sso-api-token-session-timeout": 1209600,
    "certificate": None,
    "private-key": None,
    "signature-signing-method": "SHA256",
    "signature-digest-method": "SHA256",
    "provider-type": "unknown",
}
GO_TFE_KEY = "testPrivateKey"


def saml_key_is_sealed(plaintext: str) -> None:
    """The stored item holds the key only sealed (and it unseals to ``plaintext``)."""
    from chalicelib.core import secrets

    item = settings_item("saml")
    assert plaintext not in json.dumps(item)
    sealed = json.loads(item["secrets"]["S"])["key"]
    assert secrets.unseal(sealed, purpose="saml/key") == plaintext


def test_saml_fresh_instance_serves_every_go_tfe_attribute(admin: Recorder) -> None:
    reply = admin.get(SAML)
    assert reply.status == 200
    assert reply.data["id"] == "saml" and reply.data["type"] == "saml-settings"
    attributes = dict(reply.data["attributes"])
    acs, metadata = attributes.pop("acs-consumer-url"), attributes.pop("metadata-url")
    assert acs.endswith("/users/saml/auth") and metadata.endswith("/users/saml/metadata")
    assert attributes == SAML_FRESH
    for name, value in attributes.items():  # exact JSON types: bools are bools, not 0/1
        assert type(value) is type(SAML_FRESH[name]), name
    revoked = admin.post(f"{SAML}/actions/revoke-old-certificate")
    assert revoked.status == 200 and revoked.data["attributes"]["old-idp-cert"] is None


def test_saml_go_tfe_update_sequence(admin: Recorder) -> None:
    """go-tfe's TestAdminSettings_SAML_Read/Update/RevokeIdpCert, request for request."""
    assert admin.get(SAML).status == 200

    reply = admin.patch(SAML, body(enabled=False, debug=False))
    assert reply.status == 200, reply.json
    attributes = reply.data["attributes"]
    assert attributes["enabled"] is False and attributes["debug"] is False
    assert attributes["private-key"] is None

    # "with certificate defined": placeholder certificates are stored as given
    reply = admin.patch(
        SAML,
        body(
            **{
                "certificate": "testCert",
                "private-key": GO_TFE_KEY,
                "idp-cert": "testCert",
                "slo-endpoint-url": "https://example.com/slo",
                "sso-endpoint-url": "https://example.com/sso",
                "signature-signing-method": "SHA1",
                "signature-digest-method": "SHA1",
            }
        ),
    )
    assert reply.status == 200, reply.json
    attributes = reply.data["attributes"]
    assert attributes["certificate"] == "testCert" and attributes["idp-cert"] == "testCert"
    assert attributes["private-key"] is None
    assert attributes["signature-signing-method"] == "SHA1"
    assert attributes["signature-digest-method"] == "SHA1"

    # "with team management enabled": enabling works with what the previous step stored
    reply = admin.patch(
        SAML,
        body(
            **{
                "enabled": True,
                "team-management-enabled": True,
                "certificate": "testCert",
                "private-key": GO_TFE_KEY,
                "signature-signing-method": "SHA1",
                "signature-digest-method": "SHA1",
            }
        ),
    )
    assert reply.status == 200, reply.json
    attributes = reply.data["attributes"]
    assert attributes["team-management-enabled"] is True and attributes["enabled"] is True
    assert attributes["old-idp-cert"] is None  # the same idp-cert is no rotation
    before = admin.get(SAML).data

    # "with invalid signature digest/signing method"
    for name in ("signature-digest-method", "signature-signing-method"):
        reply = admin.patch(SAML, body(**{"authn-requests-signed": True, name: "SHA1234"}))
        assert reply.status == 422
        assert reply.error["source"]["pointer"] == f"/data/attributes/{name}"
    assert admin.get(SAML).data == before

    # TestAdminSettings_SAML_RevokeIdpCert (SAML is enabled now)
    reply = admin.post(f"{SAML}/actions/revoke-old-certificate")
    assert reply.status == 200
    assert reply.data["attributes"]["idp-cert"] == "testCert"

    # signed requests with the placeholder certificate and key go through as well
    reply = admin.patch(SAML, body(**{"authn-requests-signed": True, "provider-type": "okta"}))
    assert reply.status == 200, reply.json
    assert reply.data["attributes"]["authn-requests-signed"] is True
    assert reply.data["attributes"]["provider-type"] == "okta"

    assert GO_TFE_KEY not in b"\n".join(admin.seen).decode()
    saml_key_is_sealed(GO_TFE_KEY)


def test_saml_terrasnek_sequence(admin: Recorder) -> None:
    """terrasnek's test_admin_settings_saml (run twice: its suite reuses an instance)."""
    payload = {
        "data": {
            "attributes": {
                "enabled": True,
                "debug": False,
                "idp-cert": "NEW-CERTIFICATE",
                "slo-endpoint-url": "https://example.com/slo",
                "sso-endpoint-url": "https://example.com/sso",
                "attr-username": "Username",
                "attr-groups": "MemberOf",
                "attr-site-admin": "SiteAdmin",
                "site-admin-role": "site-admins",
                "sso-api-token-session-timeout": 1209600,
            }
        }
    }
    for _ in range(2):
        assert admin.get(SAML).data["type"] == "saml-settings"
        payload["data"]["attributes"]["enabled"] = True
        reply = admin.patch(SAML, payload)
        assert reply.status == 200, reply.json
        assert reply.data["attributes"]["enabled"] is True
        assert reply.data["attributes"]["idp-cert"] == "NEW-CERTIFICATE"
        assert reply.data["attributes"]["old-idp-cert"] is None
        payload["data"]["attributes"]["enabled"] = False
        reply = admin.patch(SAML, payload)
        assert reply.status == 200, reply.json
        assert reply.data["attributes"]["enabled"] is False


def test_saml_signature_methods_and_provider_types(admin: Recorder) -> None:
    for signing in ("SHA1", "SHA256"):
        for digest in ("SHA1", "SHA256"):
            update = {"signature-signing-method": signing, "signature-digest-method": digest}
            reply = admin.patch(SAML, body(**update))
            assert reply.status == 200, reply.json
            assert {name: reply.data["attributes"][name] for name in update} == update
            assert {name: admin.get(SAML).data["attributes"][name] for name in update} == update
    for provider in ("okta", "entra", "saml", "unknown"):
        reply = admin.patch(SAML, body(**{"provider-type": provider}))
        assert reply.status == 200, reply.json
        assert reply.data["attributes"]["provider-type"] == provider
    for name in ("authn-requests-signed", "want-assertions-signed", "team-management-enabled"):
        reply = admin.patch(SAML, body(**{name: True}))
        assert reply.status == 200 and reply.data["attributes"][name] is True
    # null (go-tfe's unset pointer) leaves a value as it is
    reply = admin.patch(SAML, body(**{"provider-type": None, "signature-digest-method": None}))
    assert reply.status == 200
    assert reply.data["attributes"]["provider-type"] == "unknown"
    assert reply.data["attributes"]["signature-digest-method"] == "SHA256"


def test_saml_private_key_is_write_only_and_sealed(admin: Recorder) -> None:
    key = "-----BEGIN PRIVATE KEY-----\nnot-a-real-key-never-shown\n-----END PRIVATE KEY-----"
    reply = admin.patch(SAML, body(**{"private-key": key, "certificate": "SP-CERT"}))
    assert reply.status == 200 and reply.data["attributes"]["private-key"] is None
    assert "has-private-key" not in reply.data["attributes"]  # go-tfe models no such field
    saml_key_is_sealed(key)
    replaced = "another-placeholder-key"
    assert admin.patch(SAML, body(**{"private-key": replaced})).status == 200
    saml_key_is_sealed(replaced)
    assert admin.patch(SAML, body(**{"private-key": ""})).status == 200
    assert "key" not in json.loads(settings_item("saml")["secrets"]["S"])
    everything = b"\n".join(admin.seen).decode()
    assert "never-shown" not in everything and replaced not in everything


def test_saml_placeholder_idp_certificates_rotate_and_revoke(admin: Recorder) -> None:
    enable = {
        "enabled": True,
        "idp-cert": "testCert",
        "sso-endpoint-url": "https://example.com/sso",
        "slo-endpoint-url": "https://example.com/slo",
    }
    assert admin.patch(SAML, body(**enable)).status == 200
    reply = admin.patch(SAML, body(**{"idp-cert": "NEW-CERTIFICATE"}))
    assert reply.status == 200
    assert reply.data["attributes"]["idp-cert"] == "NEW-CERTIFICATE"
    assert reply.data["attributes"]["old-idp-cert"] == "testCert"
    revoked = admin.post(f"{SAML}/actions/revoke-old-certificate")
    assert revoked.status == 200
    assert revoked.data["attributes"]["old-idp-cert"] is None
    assert revoked.data["attributes"]["idp-cert"] == "NEW-CERTIFICATE"
    assert admin.get(SAML).data["attributes"]["old-idp-cert"] is None


SAML_422 = [
    ({"signature-signing-method": "SHA512"}, "signature-signing-method"),
    ({"signature-signing-method": "sha256"}, "signature-signing-method"),
    ({"signature-signing-method": 256}, "signature-signing-method"),
    ({"signature-digest-method": "MD5"}, "signature-digest-method"),
    ({"signature-digest-method": True}, "signature-digest-method"),
    ({"provider-type": "OKTA"}, "provider-type"),
    ({"provider-type": "azure"}, "provider-type"),
    ({"provider-type": 1}, "provider-type"),
    ({"authn-requests-signed": "yes"}, "authn-requests-signed"),
    ({"want-assertions-signed": 1}, "want-assertions-signed"),
    ({"team-management-enabled": "true"}, "team-management-enabled"),
    ({"debug": "false"}, "debug"),
    ({"enabled": 0}, "enabled"),
    ({"idp-cert": 5}, "idp-cert"),
    ({"certificate": ["testCert"]}, "certificate"),
    ({"private-key": {"pem": "x"}}, "private-key"),
    ({"sso-api-token-session-timeout": "60"}, "sso-api-token-session-timeout"),
    ({"sso-api-token-session-timeout": True}, "sso-api-token-session-timeout"),
    ({"sso-api-token-session-timeout": 59}, "sso-api-token-session-timeout"),
    ({"slo-endpoint-url": "ftp://example.com/slo"}, "slo-endpoint-url"),
    # SAML is enabled below: certificates must stay non-empty, signing needs cert and key
    ({"idp-cert": ""}, "idp-cert"),
    ({"certificate": " "}, "certificate"),
    ({"authn-requests-signed": True}, "certificate"),
    ({"authn-requests-signed": True, "certificate": "testCert"}, "private-key"),
    ({"authn-requests-signed": True, "certificate": "c", "private-key": ""}, "private-key"),
    # one bad attribute among good ones: nothing of the request is written
    ({"debug": True, "idp-cert": "NEW-CERTIFICATE", "provider-type": "bogus"}, "provider-type"),
    ({"private-key": "k", "signature-digest-method": "SHA384"}, "signature-digest-method"),
]


def test_saml_bad_values_are_422_with_a_pointer_and_change_nothing(admin: Recorder) -> None:
    enable = {
        "enabled": True,
        "idp-cert": "testCert",
        "sso-endpoint-url": "https://example.com/sso",
        "slo-endpoint-url": "https://example.com/slo",
    }
    assert admin.patch(SAML, body(**enable)).status == 200
    before, stored = admin.get(SAML).data, settings_item("saml")
    for attributes, pointer in SAML_422:
        reply = admin.patch(SAML, body(**attributes))
        assert reply.status == 422, (attributes, reply.status, reply.json)
        assert reply.error["source"]["pointer"] == f"/data/attributes/{pointer}", attributes
        assert reply.error["detail"]
        # snake_case names (pytfe) are checked the same way
        snake = {name.replace("-", "_"): value for name, value in attributes.items()}
        assert admin.patch(SAML, body(**snake)).status == 422, attributes
    assert admin.get(SAML).data == before
    assert settings_item("saml") == stored


# ----- SMTP ------------------------------------------------------------------------------------


def smtp_update(port: int, **extra: Any) -> dict[str, Any]:
    return body(
        enabled=True,
        host="127.0.0.1",
        port=port,
        sender="registry@example.test",
        **{"test-email-address": "ops@example.test"},
        **extra,
    )


def test_smtp_update_delivers_a_test_message(admin: Recorder) -> None:
    with smtp_server() as (port, mailbox):
        for mechanism in ("plain", "login"):
            reply = admin.patch(
                f"{ADMIN}/smtp-settings",
                smtp_update(port, auth=mechanism, username=SMTP_USER, password=SMTP_PASSWORD),
            )
            assert reply.status == 200, reply.json
            assert mailbox.logins[-1] == mechanism.upper()
            assert mailbox.envelopes[-1] == ("registry@example.test", ["ops@example.test"])
            assert mailbox.messages[-1]["Subject"].startswith("Test message")
            assert reply.data["attributes"] == {
                "enabled": True,
                "host": "127.0.0.1",
                "port": port,
                "sender": "registry@example.test",
                "auth": mechanism,
                "username": SMTP_USER,
            }
        # the stored, sealed password is used again for the next update's test message
        reply = admin.patch(f"{ADMIN}/smtp-settings", body(**{"test-email-address": "b@x.io"}))
        assert reply.status == 200, reply.json
        assert len(mailbox.messages) == 3 and mailbox.logins == ["PLAIN", "LOGIN", "LOGIN"]
        assert mailbox.envelopes[-1][1] == ["b@x.io"]
    assert SMTP_PASSWORD not in json.dumps(settings_item("smtp"))


def test_smtp_without_auth_and_disabled_updates(admin: Recorder) -> None:
    with smtp_server() as (port, mailbox):
        reply = admin.patch(f"{ADMIN}/smtp-settings", smtp_update(port, auth="none"))
        assert reply.status == 200, reply.json
        assert len(mailbox.messages) == 1 and mailbox.logins == []
    # go-tfe's test: a disabled configuration with an unreachable host is saved without a test
    reply = admin.patch(
        f"{ADMIN}/smtp-settings",
        body(enabled=False, host="123", port=123, **{"test-email-address": "a@b.io"}),
    )
    assert reply.status == 200, reply.json
    assert reply.data["attributes"]["auth"] == "none"
    assert reply.data["attributes"]["host"] == "123"


def test_smtp_bad_credentials_401_changes_nothing(admin: Recorder) -> None:
    before = admin.get(f"{ADMIN}/smtp-settings").data
    with smtp_server(accept_credentials=False) as (port, mailbox):
        reply = admin.patch(
            f"{ADMIN}/smtp-settings",
            smtp_update(port, auth="login", username=SMTP_USER, password=SMTP_PASSWORD),
        )
    assert reply.status == 401, reply.json
    assert reply.error["status"] == "401" and "credentials" in reply.error["detail"]
    assert mailbox.messages == []
    assert admin.get(f"{ADMIN}/smtp-settings").data == before
    assert settings_item("smtp") == {}


def test_smtp_server_error_is_500(admin: Recorder) -> None:
    with smtp_server() as (port, mailbox):
        mailbox.reject_data = True
        reply = admin.patch(f"{ADMIN}/smtp-settings", smtp_update(port, auth="none"))
    assert reply.status == 500, reply.json
    assert "554" in reply.error["detail"]
    assert admin.get(f"{ADMIN}/smtp-settings").data["attributes"]["enabled"] is False


def test_smtp_silent_server_is_504(admin: Recorder, setting: Any) -> None:
    setting(REGISTRY_SMTP_TIMEOUT="0.3")
    with silent_server() as port:
        started = time.monotonic()
        reply = admin.patch(f"{ADMIN}/smtp-settings", smtp_update(port, auth="none"))
        # The setting, not the 10 s default, bounded the wait (a margin for a loaded machine).
        assert time.monotonic() - started < 10
    assert reply.status == 504, reply.json
    assert "did not answer within 0.3s" in reply.error["detail"]
    assert admin.get(f"{ADMIN}/smtp-settings").data["attributes"]["enabled"] is False


SMTP_422 = [
    ({"port": "25"}, "port"),
    ({"port": 70000}, "port"),
    ({"auth": "cram-md5"}, "auth"),
    ({"host": "changed", "port": True}, "port"),
    ({"sender": "not-an-address"}, "sender"),
    ({"enabled": True, "host": "127.0.0.1", "port": 25}, "sender"),
    (
        {"enabled": True, "host": "h", "port": 25, "sender": "a@b.io"},
        "test-email-address",
    ),
    (
        {
            "enabled": True,
            "host": "h",
            "port": 25,
            "sender": "a@b.io",
            "auth": "plain",
            "username": "u",
            "test-email-address": "t@b.io",
        },
        "password",
    ),
    ({"password": 1234}, "password"),
]


def test_smtp_422_changes_nothing(admin: Recorder) -> None:
    before = admin.get(f"{ADMIN}/smtp-settings").data
    for attributes, pointer in SMTP_422:
        reply = admin.patch(f"{ADMIN}/smtp-settings", body(**{"auth": "login", **attributes}))
        assert reply.status == 422, (attributes, reply.json)
        assert reply.error["source"]["pointer"] == f"/data/attributes/{pointer}"
        assert admin.get(f"{ADMIN}/smtp-settings").data == before
    assert settings_item("smtp") == {}


# ----- SMS -------------------------------------------------------------------------------------


def test_sms_settings_and_verify_through_the_provider(admin: Recorder, setting: Any) -> None:
    token = "sms-auth-token-never-shown"
    with sms_provider("AC123", token) as provider:
        setting(REGISTRY_SMS_API_URL=provider.url)
        path = f"{ADMIN}/sms-settings"
        assert admin.post(f"{path}/verify", body(**{"test-number": "+15550100"})).status == 400
        reply = admin.patch(
            path,
            body(enabled=True, **{"account-sid": "AC123", "from-number": "+15550199"}),
        )
        assert reply.status == 422
        assert reply.error["source"]["pointer"] == "/data/attributes/auth-token"
        reply = admin.patch(
            path,
            body(
                enabled=True,
                **{"account-sid": "AC123", "from-number": "+15550199", "auth-token": token},
            ),
        )
        assert reply.status == 200, reply.json
        assert reply.data["type"] == "sms-settings"
        assert reply.data["attributes"] == {
            "enabled": True,
            "account-sid": "AC123",
            "from-number": "+15550199",
        }
        twilio = admin.get(f"{ADMIN}/twilio-settings")
        assert twilio.data["type"] == "twilio-settings"
        assert twilio.data["attributes"] == reply.data["attributes"]

        # docs: POST; go-tfe: PATCH with a null test number when unset
        missing = admin.patch(f"{ADMIN}/twilio-settings/verify", body(**{"test-number": None}))
        assert missing.status == 400, missing.json
        assert provider.sent == []
        sent = admin.post(f"{path}/verify", body(**{"test-number": "+15550100"}))
        assert sent.status == 200, sent.json
        assert sent.body == b""
        sent = admin.patch(f"{ADMIN}/twilio-settings/verify", body(**{"test-number": "+15550101"}))
        assert sent.status == 200
        assert [(m["To"], m["From"]) for m in provider.sent] == [
            ("+15550100", "+15550199"),
            ("+15550101", "+15550199"),
        ]

        # a wrong token at the provider is the settings' fault: 400
        assert admin.patch(path, body(**{"auth-token": "wrong"})).status == 200
        refused = admin.post(f"{path}/verify", body(**{"test-number": "+15550100"}))
        assert refused.status == 400 and "401" in refused.error["detail"]

        assert admin.patch(path, body(enabled=False)).status == 200
        disabled = admin.post(f"{path}/verify", body(**{"test-number": "+15550100"}))
        assert disabled.status == 400 and "disabled" in disabled.error["detail"]
        assert len(provider.sent) == 2
        assert admin.patch(path, body(**{"from-number": "call me"})).status == 422
    assert token not in json.dumps(settings_item("sms"))


# ----- customization ---------------------------------------------------------------------------


def test_customization_html_is_escaped(admin: Recorder) -> None:
    path = f"{ADMIN}/customization-settings"
    defaults = admin.get(path).data["attributes"]
    assert defaults["footer"] == "" and "@" in defaults["support-email-address"]
    html = '<a href="https://help.example.test/?a=1&b=2">Help</a>'
    reply = admin.patch(path, body(footer=html, **{"login-help": "<b>hi</b>"}))
    assert reply.status == 200
    raw = reply.body.decode()
    assert "<" not in raw and ">" not in raw and "&" not in raw
    assert "\\u003ca href" in raw and "\\u0026b=2" in raw
    assert reply.data["attributes"]["footer"] == html  # plain JSON escaping: decodes back
    assert admin.get(path).data["attributes"]["login-help"] == "<b>hi</b>"
    before = admin.get(path).data
    assert admin.patch(path, body(footer=["x"])).status == 422
    assert admin.patch(path, body(**{"support-email-address": "nobody"})).status == 422
    assert admin.get(path).data == before


# ----- data retention policy -------------------------------------------------------------------


def test_data_retention_policy_lifecycle(admin: Recorder) -> None:
    path = f"{ADMIN}/data-retention-policy-settings"
    assert admin.get(path).status == 404
    created = admin.post(
        path,
        {
            "data": {
                "type": "data-retention-policy-delete-olders",
                "attributes": {"deleteOlderThanNDays": 60},
            }
        },
    )
    assert created.status == 201, created.json
    policy = created.data
    assert policy["type"] == "data-retention-policy-delete-olders"
    assert policy["id"].startswith("drp-")
    assert policy["attributes"] == {"delete-older-than-n-days": 60}
    assert policy["relationships"] == {"target": {"data": None}}

    updated = admin.post(path, body(**{"delete-older-than-n-days": 30}))
    assert updated.status == 200
    assert updated.data["id"] == policy["id"]
    assert admin.get(path).data["attributes"]["delete-older-than-n-days"] == 30

    for bad in (
        {"data": {"type": "data-retention-policy-dont-deletes", "attributes": {}}},
        body(),
        body(**{"delete-older-than-n-days": "30"}),
        body(**{"delete-older-than-n-days": 0}),
    ):
        assert admin.post(path, bad).status == 422
    assert admin.get(path).data["attributes"]["delete-older-than-n-days"] == 30

    assert admin.delete(path).status == 204
    assert admin.get(path).status == 404


# ----- OIDC keys -------------------------------------------------------------------------------


def kids(api: Api) -> list[str]:
    reply = api.as_(None).get("/.well-known/jwks")
    assert reply.status == 200
    keys = reply.json["keys"]
    assert all(k["kty"] == "RSA" and k["alg"] == "RS256" and k["n"] and k["e"] for k in keys)
    assert all("d" not in k and "p" not in k for k in keys)  # public halves only
    return [k["kid"] for k in keys]


def test_oidc_rotate_and_trim_change_the_jwks(admin: Recorder) -> None:
    from chalicelib.admin import oidc

    [first] = kids(admin)
    timers = oidc.timers()
    assert admin.post(f"{ADMIN}/oidc-settings/actions/rotate-key").status == 204
    after_rotate = kids(admin)
    assert len(after_rotate) == 2 and after_rotate[1] == first and after_rotate[0] != first
    rotated_timers = oidc.timers()
    assert rotated_timers["next-rotation-at"] > timers["next-rotation-at"]
    assert rotated_timers["next-trim-at"] == timers["next-trim-at"]

    assert admin.post(f"{ADMIN}/oidc-settings/actions/trim-key", body()).status == 204
    assert kids(admin) == [after_rotate[0]]
    trimmed_timers = oidc.timers()
    assert trimmed_timers["next-rotation-at"] == rotated_timers["next-rotation-at"]
    assert trimmed_timers["next-trim-at"] != rotated_timers["next-trim-at"]
    stored = json.dumps(settings_item("oidc"))
    assert "PRIVATE KEY" not in stored


def test_scheduled_key_maintenance(api: Api) -> None:
    from chalicelib.admin import oidc
    from chalicelib.core.data.ids import now

    [first] = kids(api)
    assert oidc.run_due_maintenance(now() + timedelta(days=89)) == []
    day90 = now() + timedelta(days=90, minutes=1)
    assert oidc.run_due_maintenance(day90) == ["rotated"]
    rotated = kids(api)
    assert len(rotated) == 2 and rotated[1] == first
    assert oidc.run_due_maintenance(day90 + timedelta(days=29)) == []
    assert oidc.run_due_maintenance(day90 + timedelta(days=30, minutes=1)) == ["trimmed"]
    assert kids(api) == [rotated[0]]
    assert oidc.run_due_maintenance(day90 + timedelta(days=31)) == []


def test_the_scheduled_function_rotates_when_due(api: Api) -> None:
    from chalicelib.admin import store

    [first] = kids(api)
    item = store.load("oidc")
    item.values = {**item.values, "next-rotation-at": "2000-01-01T00:00:00.000Z"}
    store.save(item, store.settings_event(None, "oidc", ["next-rotation-at"]))
    event = api.client.events.generate_cw_event(
        source="aws.events", detail_type="Scheduled Event", detail={}, resources=[]
    )
    api.client.lambda_.invoke("oidc_key_maintenance", event)
    after = kids(api)
    assert len(after) == 2 and after[1] == first
    assert store.load("oidc").values["next-rotation-at"] > "2001"


# ----- rate limiting ---------------------------------------------------------------------------


def burst(api: Api, count: int) -> list[Reply]:
    return [api.get("/api/v2/ping") for _ in range(count)]


def test_rate_limit_429_headers_and_recovery(rate_limited: Clock, api: Api) -> None:
    reply = api.patch(f"{ADMIN}/general-settings", body(**{"api-rate-limit": 30}))
    assert reply.status == 200
    assert reply.headers["X-RateLimit-Limit"] == "30"
    rate_limited.advance(1)  # a fresh window, a quarter of a second in
    replies = burst(api, 31)
    statuses = [r.status for r in replies]
    assert statuses[:30] == [204] * 30 and statuses[30] == 429, statuses
    assert [r.headers["X-RateLimit-Remaining"] for r in replies[:3]] == ["29", "28", "27"]
    limited = replies[30]
    assert limited.error == {
        "status": "429",
        "title": "too many requests",
        "detail": "You have exceeded the API's rate limit.",
    }
    assert limited.headers["Retry-After"] == "1"
    assert limited.headers["X-RateLimit-Limit"] == "30"
    assert limited.headers["X-RateLimit-Remaining"] == "0"
    assert limited.headers["X-RateLimit-Reset"] == "0.750"  # the window's last 3/4 second

    # another client (no token: keyed by source IP) is not affected
    assert api.as_(None).get("/api/v2/ping").status == 204
    rate_limited.advance(0.75)
    recovered = api.get("/api/v2/ping")
    assert recovered.status == 204
    assert recovered.headers["X-RateLimit-Remaining"] == "29"


def test_rate_limit_follows_the_setting_and_can_be_switched_off(
    rate_limited: Clock, api: Api
) -> None:
    from chalicelib.admin import store

    assert api.patch(f"{ADMIN}/general-settings", body(**{"api-rate-limit": 40})).status == 200
    rate_limited.advance(1)
    statuses = [r.status for r in burst(api, 41)]
    assert statuses.count(204) == 40 and statuses[-1] == 429
    rate_limited.advance(1)
    reply = api.patch(f"{ADMIN}/general-settings", body(**{"api-rate-limiting-enabled": False}))
    assert reply.status == 200
    replies = burst(api, 45)
    assert {r.status for r in replies} == {204}
    assert "X-RateLimit-Limit" not in replies[0].headers
    # another instance learns of the change within the cache time
    store.forget_cached_settings()
    assert "X-RateLimit-Limit" not in api.get("/api/v2/ping").headers


def test_deployments_can_default_rate_limiting_to_off(api: Api, setting: Any) -> None:
    setting(REGISTRY_RATE_LIMITING="off")
    reply = api.get(f"{ADMIN}/general-settings")
    assert reply.data["attributes"]["api-rate-limiting-enabled"] is False
    assert "X-RateLimit-Limit" not in reply.headers
    assert api.patch(f"{ADMIN}/general-settings", body(**{"plan-timeout": "1h"})).status == 200
    reply = api.patch(f"{ADMIN}/general-settings", body(**{"api-rate-limiting-enabled": True}))
    assert reply.data["attributes"]["api-rate-limiting-enabled"] is True
    assert api.get("/api/v2/ping").headers["X-RateLimit-Limit"] == "30"


@pytest.fixture
def dynamodb_calls() -> Iterator[list[str]]:
    """Every DynamoDB operation PynamoDB sends while the test runs, in order."""
    from pynamodb.connection.base import Connection

    calls: list[str] = []
    original = Connection._make_api_call

    def counting(self: Any, operation: str, kwargs: Any) -> Any:
        calls.append(operation)
        return original(self, operation, kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Connection, "_make_api_call", counting)
        yield calls


def counter_hits() -> dict[str, int]:
    """The shared counters in DynamoDB: hits per client (the window left out)."""
    from chalicelib.admin.store import RateLimitModel

    return {item.key.rsplit("#", 1)[0]: int(item.hits) for item in RateLimitModel.scan()}


def test_clients_under_the_share_cost_no_dynamodb_write(
    rate_limited: Clock, api: Api, dynamodb_calls: list[str]
) -> None:
    """A client under a third of the limit on an instance is counted in memory only: no call
    for an anonymous ping, no UpdateItem for an authenticated request. Past the share, one
    UpdateItem records the requests let through and reserves a batch (ADD 20 of 30); the
    batch is spent without writing, the next one is reserved the same way, and the requests
    refused past the limit write nothing."""
    assert api.patch(f"{ADMIN}/general-settings", body(**{"api-rate-limit": 30})).status == 200
    rate_limited.advance(1)
    api.get("/api/v2/ping")  # warm the per-instance settings cache (a GetItem)
    rate_limited.advance(1)
    dynamodb_calls.clear()
    assert {r.status for r in burst(api.as_(None), 10)} == {204}
    assert dynamodb_calls == []  # not even a read: the settings are cached
    assert {api.get("/api/v2/organizations").status for _ in range(10)} == {200}
    assert "UpdateItem" not in dynamodb_calls
    assert counter_hits() == {}

    dynamodb_calls.clear()
    replies = burst(api, 21)  # the token's 11th to 31st requests in this second
    assert [r.status for r in replies] == [204] * 20 + [429]
    assert [r.headers["X-RateLimit-Remaining"] for r in replies] == [
        str(n) for n in range(19, -1, -1)
    ] + ["0"]
    assert dynamodb_calls.count("UpdateItem") == 2  # ADD 20 (10 + a batch of 10), ADD 10
    assert [counter_hits()[key] for key in counter_hits() if key.startswith("token:")] == [30]
    dynamodb_calls.clear()
    assert burst(api, 5)[-1].status == 429
    assert "UpdateItem" not in dynamodb_calls  # the window is known full on this instance


@pytest.mark.parametrize("instances", [2, 4])
def test_a_burst_across_instances_is_refused_within_the_tolerance(
    rate_limited: Clock, api: Api, monkeypatch: pytest.MonkeyPatch, instances: int
) -> None:
    """One client's burst spread over k instances in turn: the shared counter never passes
    the limit, and what is let through stays within L + (k - 1) * S (the module's stated
    tolerance), however long the burst."""
    from chalicelib.admin import ratelimit

    limit = 30
    assert api.patch(f"{ADMIN}/general-settings", body(**{"api-rate-limit": limit})).status == 200
    rate_limited.advance(1)
    counts = [ratelimit.LocalCounts() for _ in range(instances)]
    statuses = []
    for n in range(40 * instances):
        monkeypatch.setattr(ratelimit, "instance_counts", counts[n % instances])
        statuses.append(api.get("/api/v2/ping").status)
    admitted = statuses.count(204)
    assert statuses.count(429) == len(statuses) - admitted
    assert limit <= admitted <= limit + (instances - 1) * ratelimit.share_of(limit), admitted
    assert max(counter_hits().values()) <= limit
    assert statuses[-instances:] == [429] * instances  # every instance refuses in the end
    rate_limited.advance(1)  # the next second starts afresh everywhere
    assert {api.get("/api/v2/ping").status for _ in range(instances)} == {204}


def test_an_unreachable_counter_lets_requests_through(
    rate_limited: Clock, api: Api, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The counter's table missing (a real error from DynamoDB): past the share the
    requests are let through and the failure logged; a storage hiccup is no outage."""
    from chalicelib.admin.store import RateLimitModel

    assert api.patch(f"{ADMIN}/general-settings", body(**{"api-rate-limit": 30})).status == 200
    rate_limited.advance(1)
    monkeypatch.setattr(RateLimitModel.Meta, "table_name", "no-such-table")
    with caplog.at_level(logging.ERROR, logger="registry.ratelimit"):
        statuses = [r.status for r in burst(api, 40)]
    assert statuses == [204] * 40
    assert any("let through" in r.getMessage() for r in caplog.records)


def test_made_up_tokens_are_counted_against_their_address(rate_limited: Clock, api: Api) -> None:
    """Keying on whatever bearer token arrives would give every made-up token a fresh counter
    (and a new item): unverified callers share their source address's counter."""
    from chalicelib.admin.store import RateLimitModel

    assert api.patch(f"{ADMIN}/general-settings", body(**{"api-rate-limit": 30})).status == 200
    rate_limited.advance(1)
    replies = [api.as_(f"made-up-{i}").get("/api/v2/organizations") for i in range(31)]
    assert [r.status for r in replies[:30]] == [401] * 30
    assert replies[30].status == 429
    windows = {item.key.rsplit("#", 1)[0] for item in RateLimitModel.scan()}
    # One counter for the address; the admin's (real) token stayed under its share: no
    # counter written for it.
    assert len([key for key in windows if key.startswith("ip:")]) == 1
    assert [key for key in windows if key.startswith("token:")] == []
    # A real token keeps its own counter, unaffected by the flood from that address.
    assert api.get("/api/v2/organizations").status == 200
