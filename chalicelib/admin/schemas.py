"""Request attribute models of the admin settings (types and single-value rules).

Every field is optional: an omitted attribute, or one sent as ``null`` (go-tfe does that for
unset pointers), leaves the stored value unchanged. Rules spanning several attributes
("required when enabled") live in the service, which sees the merged result.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, AliasChoices, Field

from chalicelib.admin.limits import MAX_MODULE_CONSUMERS
from chalicelib.core.api.attributes import Attributes, Identifier, Secret, Text
from chalicelib.core.api.names import kebab

# Go-style durations: one or more decimal numbers each followed by a unit ("2h", "1.5h", "1h30m").
_DURATION = re.compile(r"^(?:\d+(?:\.\d+)?(?:ns|us|µs|ms|s|m|h))+\Z")


def _duration(value: str) -> str:
    if not _DURATION.match(value) or not re.search(r"[1-9]", value):
        raise ValueError("must be a positive decimal number with a unit suffix, e.g. '2h' or '30m'")
    return value


Duration = Annotated[Identifier, AfterValidator(_duration)]
# A setting's short value (a host, a username, a password): as long as a secret may be.
Short = Secret


def changes(model: Attributes) -> dict[str, Any]:
    """The attributes a request sets, kebab-named; ``null`` counts as not sent."""
    return {kebab(k): v for k, v in model.model_dump().items() if v is not None}


class GeneralSettings(Attributes):
    limit_user_organization_creation: bool | None = None
    api_rate_limiting_enabled: bool | None = None
    api_rate_limit: Annotated[int, Field(ge=30, le=1_000_000)] | None = None
    send_passing_statuses_for_untriggered_speculative_plans: bool | None = None
    allow_speculative_plans_on_pull_requests_from_forks: bool | None = None
    default_remote_state_access: bool | None = None
    plan_timeout: Duration | None = None
    apply_timeout: Duration | None = None
    terraform_build_worker_plan_timeout: Duration | None = None
    terraform_build_worker_apply_timeout: Duration | None = None
    # How many days audit events are kept (their TTL): at least the 400 the registry always
    # keeps, at most ten years (chalicelib.core.audit.store).
    audit_retention_days: Annotated[int, Field(ge=400, le=3653)] | None = None


class CostEstimationSettings(Attributes):
    enabled: bool | None = None
    cloud_a_access_key_id: Short | None = None
    cloud_a_secret_key: Short | None = None
    cloud_b_credentials: Text | None = None
    cloud_c_client_id: Short | None = None
    cloud_c_client_secret: Short | None = None
    cloud_c_subscription_id: Short | None = None
    cloud_c_tenant_id: Short | None = None
    aws_access_key_id: Short | None = None
    aws_secret_key: Short | None = None
    gcp_credentials: Text | None = None
    azure_client_id: Short | None = None
    azure_client_secret: Short | None = None
    azure_subscription_id: Short | None = None
    azure_tenant_id: Short | None = None


class SamlSettings(Attributes):
    """Certificates and the private key are free text (TFE stores them as given); the
    service checks what must be set once SAML is enabled."""

    enabled: bool | None = None
    debug: bool | None = None
    team_management_enabled: bool | None = None
    authn_requests_signed: bool | None = None
    want_assertions_signed: bool | None = None
    idp_cert: Text | None = None
    slo_endpoint_url: Short | None = None
    sso_endpoint_url: Short | None = None
    attr_username: Short | None = None
    attr_groups: Short | None = None
    attr_site_admin: Short | None = None
    site_admin_role: Short | None = None
    sso_api_token_session_timeout: Annotated[int, Field(ge=60, le=10 * 365 * 86400)] | None = None
    certificate: Text | None = None
    private_key: Text | None = None
    signature_signing_method: Literal["SHA1", "SHA256"] | None = None
    signature_digest_method: Literal["SHA1", "SHA256"] | None = None
    provider_type: Literal["okta", "entra", "saml", "unknown"] | None = None


class SmtpSettings(Attributes):
    enabled: bool | None = None
    host: Short | None = None
    port: Annotated[int, Field(ge=1, le=65535)] | None = None
    sender: Short | None = None
    auth: Literal["none", "plain", "login"] | None = None
    username: Short | None = None
    password: Short | None = None
    test_email_address: Short | None = None


class SmsSettings(Attributes):
    enabled: bool | None = None
    account_sid: Short | None = None
    auth_token: Short | None = None
    from_number: Short | None = None


class SmsVerify(Attributes):
    test_number: Short | None = None


class CustomizationSettings(Attributes):
    support_email_address: Short | None = None
    login_help: Text | None = None
    footer: Text | None = None
    error: Text | None = None
    new_user: Text | None = None


class DataRetentionPolicy(Attributes):
    delete_older_than_n_days: Annotated[
        int,
        Field(
            ge=1,
            le=36_500,
            validation_alias=AliasChoices(
                "delete-older-than-n-days", "delete_older_than_n_days", "deleteOlderThanNDays"
            ),
        ),
    ]


class AdminOrganization(Attributes):
    """What a site admin sets on an organization (go-tfe's AdminOrganizationUpdateOptions,
    and the module sharing attribute of the self-hosted edition)."""

    access_beta_tools: bool | None = None
    is_disabled: bool | None = None
    global_module_sharing: bool | None = None
    terraform_build_worker_apply_timeout: Duration | None = None
    terraform_build_worker_plan_timeout: Duration | None = None
    # The same two timeouts under the names go-tfe's AdminOrganization also has.
    apply_timeout: Duration | None = None
    plan_timeout: Duration | None = None
    terraform_worker_sudo_enabled: bool | None = None
    workspace_limit: Annotated[int, Field(ge=0, le=1_000_000)] | None = None


class ModulePartnerships(Attributes):
    """TFE's deprecated Admin Module Sharing API (terrasnek's ``admin_module_sharing``): the
    consumers named by their ``external-id``."""

    module_consuming_organization_ids: Annotated[
        list[Annotated[str, Field(min_length=1, max_length=100)]],
        Field(max_length=MAX_MODULE_CONSUMERS),
    ]
