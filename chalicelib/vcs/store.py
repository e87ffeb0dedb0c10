"""PynamoDB models of VCS connections: OAuth clients and their OAuth tokens.

* ``oauth-clients``: id (``oc-``) -> organization, service provider, URLs, name, the public
  ``key``/``rsa_public_key`` and the sealed ``secret``/``private_key``; the ``by-organization``
  index lists an organization's clients in creation order.
* ``oauth-tokens``: id (``ot-``) -> its client, organization, the sealed token string and
  the sealed SSH key; the ``by-client`` index lists a client's tokens.

Writes that carry conditions or span both tables are the functions at the end: they say
what happened, and the service turns that into API errors.

Every write of a person's change carries its audit event (``core.audit``) in the same
transaction: the change and its event are written together or not at all.

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
from pynamodb.exceptions import TransactWriteError
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex
from pynamodb.transactions import TransactWrite

from chalicelib.core.audit import trail
from chalicelib.core.audit.events import Event
from chalicelib.core.data import db

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


# ----- reads --------------------------------------------------------------------------------


def get_client(client_id: str) -> OAuthClientModel | None:
    try:
        return OAuthClientModel.get(client_id, consistent_read=True)
    except OAuthClientModel.DoesNotExist:
        return None


def get_token(token_id: str) -> OAuthTokenModel | None:
    try:
        return OAuthTokenModel.get(token_id, consistent_read=True)
    except OAuthTokenModel.DoesNotExist:
        return None


def clients_of_organization(organization: str) -> list[OAuthClientModel]:
    """The clients filed under the organization's name, in creation order (those of a deleted
    organization of the same name too: the service tells them apart)."""
    return list(OAuthClientModel.by_organization.query(organization))


def tokens_of_client(client_id: str) -> list[OAuthTokenModel]:
    return list(OAuthTokenModel.by_client.query(client_id))


# ----- conditional and transactional writes ---------------------------------------------------


def create_client(client: OAuthClientModel, token: OAuthTokenModel | None, event: Event) -> None:
    """Write a new client and, when given, its first token, with the event: all or none, and
    neither id may exist already (TransactWriteError otherwise)."""
    with TransactWrite(connection=db.connection()) as tx:
        tx.save(client, condition=OAuthClientModel.id.does_not_exist())
        if token is not None:
            tx.save(token, condition=OAuthTokenModel.id.does_not_exist())
        trail.record_in(tx, event)


def update_client(
    client: OAuthClientModel,
    event: Event,
    token: OAuthTokenModel | None = None,
    *,
    new_token: bool = False,
) -> None:
    """Write a changed client and, when given, a changed (or, with ``new_token``, an added)
    token of it in one transaction. The client, and a changed token, must still exist: when
    one was deleted meanwhile nothing is written (TransactWriteError)."""
    with TransactWrite(connection=db.connection()) as tx:
        tx.save(client, condition=OAuthClientModel.id.exists())
        if token is not None and new_token:
            tx.save(token)
        elif token is not None:
            tx.save(token, condition=OAuthTokenModel.id.exists())
        trail.record_in(tx, event)


def delete_client(client: OAuthClientModel, tokens: list[OAuthTokenModel], event: Event) -> bool:
    """Delete a client and its tokens in one transaction. False, with nothing deleted, when
    the transaction failed (the client was deleted meanwhile, say)."""
    try:
        with TransactWrite(connection=db.connection()) as tx:
            tx.delete(client, condition=OAuthClientModel.id.exists())
            for token in tokens:
                tx.delete(token)
            trail.record_in(tx, event)
    except TransactWriteError:
        return False
    return True


def update_token(token: OAuthTokenModel, event: Event) -> None:
    """Write a changed token back with its event; it must still exist (TransactWriteError
    otherwise, and nothing written)."""
    with TransactWrite(connection=db.connection()) as tx:
        tx.save(token, condition=OAuthTokenModel.id.exists())
        trail.record_in(tx, event)


def delete_token(token: OAuthTokenModel, event: Event) -> bool:
    """Delete a token with its event; False (nothing written) when it was gone already."""
    try:
        with TransactWrite(connection=db.connection()) as tx:
            tx.delete(token, condition=OAuthTokenModel.id.exists())
            trail.record_in(tx, event)
    except TransactWriteError:
        return False
    return True
