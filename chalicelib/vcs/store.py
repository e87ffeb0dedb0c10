"""PynamoDB models of VCS connections: OAuth clients and their OAuth tokens.

* ``oauth-clients``: id (``oc-``) -> organization, service provider, URLs, name, the public
  ``key``/``rsa_public_key`` and the sealed ``secret``/``private_key``; the ``by-organization``
  index lists an organization's clients in creation order.
* ``oauth-tokens``: id (``ot-``) -> its client, organization, the sealed token string and
  the sealed SSH key; the ``by-client`` index lists a client's tokens.

Secret values are stored only as ``chalicelib.core.secrets`` envelopes (``seal``), each under
its own purpose (``PURPOSE_*`` below); nothing renders or logs them.
"""

from __future__ import annotations

from pynamodb.attributes import (
    BooleanAttribute,
    JSONAttribute,
    UnicodeAttribute,
    UTCDateTimeAttribute,
)
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex

from chalicelib.core import db

PURPOSE_TOKEN = "vcs/oauth-token-string"
PURPOSE_SSH_KEY = "vcs/ssh-key"
PURPOSE_SECRET = "vcs/oauth-client-secret"
PURPOSE_PRIVATE_KEY = "vcs/oauth-client-private-key"


class ClientsByOrganization(GlobalSecondaryIndex):
    class Meta:
        index_name = "by-organization"
        projection = AllProjection()

    organization = UnicodeAttribute(hash_key=True)
    created_at = UTCDateTimeAttribute(range_key=True)


@db.register
class OAuthClientModel(db.Model):
    Meta = db.table("oauth-clients")

    id = UnicodeAttribute(hash_key=True)
    organization = UnicodeAttribute()
    # The organization's external id: a client outlives nothing of a deleted organization
    # even if one of the same name is created later (see service._current).
    organization_id = UnicodeAttribute()
    service_provider = UnicodeAttribute()
    name = UnicodeAttribute(null=True)
    http_url = UnicodeAttribute()
    api_url = UnicodeAttribute()
    key = UnicodeAttribute(null=True)
    rsa_public_key = UnicodeAttribute(null=True)
    organization_scoped = BooleanAttribute(default=True)
    # Where a provider's OAuth flow would call back; stable per client.
    callback_id = UnicodeAttribute()
    secret = JSONAttribute(null=True)
    private_key = JSONAttribute(null=True)
    created_at = UTCDateTimeAttribute()
    updated_at = UTCDateTimeAttribute()
    by_organization = ClientsByOrganization()


class TokensByClient(GlobalSecondaryIndex):
    class Meta:
        index_name = "by-client"
        projection = AllProjection()

    client_id = UnicodeAttribute(hash_key=True)
    created_at = UTCDateTimeAttribute(range_key=True)


@db.register
class OAuthTokenModel(db.Model):
    Meta = db.table("oauth-tokens")

    id = UnicodeAttribute(hash_key=True)
    client_id = UnicodeAttribute()
    organization = UnicodeAttribute()
    organization_id = UnicodeAttribute()
    token = JSONAttribute()
    ssh_key = JSONAttribute(null=True)
    service_provider_user = UnicodeAttribute(null=True)
    created_at = UTCDateTimeAttribute()
    updated_at = UTCDateTimeAttribute()
    by_client = TokensByClient()


TABLES = ("oauth-clients", "oauth-tokens")
