"""The AWS resources the registry needs, defined once for CloudFormation and for moto.

``provision()`` creates them against whatever endpoint boto3 is configured for (the local
runner and the end-to-end tests point it at moto); the CloudFormation template is generated
from the same table definitions and names.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

# Importing the stores registers every model with db.MODELS.
from chalicelib.accounts.invitations import store as _invitations_store  # noqa: F401
from chalicelib.accounts.organizations import store as _organizations_store  # noqa: F401
from chalicelib.accounts.teams import store as _teams_store  # noqa: F401
from chalicelib.accounts.users import store as _users_store  # noqa: F401
from chalicelib.admin import store as _admin_store  # noqa: F401
from chalicelib.core import auth as _auth  # noqa: F401
from chalicelib.core import secrets
from chalicelib.core.data import db
from chalicelib.core.data import lists as _lists  # noqa: F401 - the kept counts
from chalicelib.core.data.aws import client
from chalicelib.core.settings import get_settings
from chalicelib.modules import store as _registry_store  # noqa: F401
from chalicelib.modules.cache import settings as _module_cache_settings  # noqa: F401
from chalicelib.modules.cache import store as _module_cache_store  # noqa: F401
from chalicelib.modules.downloads import store as _downloads_store  # noqa: F401
from chalicelib.modules.keys import UPLOAD_PREFIX
from chalicelib.modules.nocode import store as _nocode_store  # noqa: F401
from chalicelib.modules.protocol import store as _public_cache  # noqa: F401
from chalicelib.notifications import store as _notifications_store  # noqa: F401
from chalicelib.projects import store as _projects_store  # noqa: F401
from chalicelib.providers import store as _providers_store  # noqa: F401
from chalicelib.providers.keys import UPLOAD_PREFIX as PROVIDERS
from chalicelib.providers.mirror import store as _mirror_store  # noqa: F401
from chalicelib.saml import store as _saml_store  # noqa: F401
from chalicelib.scim import store as _scim_store  # noqa: F401
from chalicelib.tags import store as _tags_store  # noqa: F401
from chalicelib.trust import provenance
from chalicelib.trust import store as _policies_store  # noqa: F401
from chalicelib.vcs import store as _vcs_store  # noqa: F401
from chalicelib.web import store as _web_store  # noqa: F401 - sessions, login codes
from chalicelib.workspaces import store as _workspaces_store  # noqa: F401

DLQ_SUFFIX = "-dlq"
MAX_RECEIVES = 5


def queue_policy(queue_arn: str, bucket: str) -> dict[str, Any]:
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "s3.amazonaws.com"},
                "Action": "sqs:SendMessage",
                "Resource": queue_arn,
                "Condition": {"ArnLike": {"aws:SourceArn": f"arn:aws:s3:::{bucket}"}},
            }
        ],
    }


def notification_configuration(queue_arn: str) -> dict[str, Any]:
    return {
        "QueueConfigurations": [
            {
                "QueueArn": queue_arn,
                "Events": ["s3:ObjectCreated:*"],
                "Filter": {
                    "Key": {
                        "FilterRules": [
                            {"Name": "prefix", "Value": UPLOAD_PREFIX},
                            {"Name": "suffix", "Value": ".tar.gz"},
                        ]
                    }
                },
            },
            {
                # A provider version's SHA256SUMS and signature, a platform's archive.
                "QueueArn": queue_arn,
                "Events": ["s3:ObjectCreated:*"],
                "Filter": {"Key": {"FilterRules": [{"Name": "prefix", "Value": PROVIDERS}]}},
            },
        ]
    }


def provision() -> str:
    """Create tables, KMS key, bucket, the ingest, scan, notifications and transfers queues
    with their dead-letter queues, bucket -> ingest queue wiring.

    Idempotent. Returns the ingest queue URL.
    """
    settings = get_settings()
    db.create_tables()
    secrets.ensure_key()  # the KMS key (and alias) that seals secrets at rest
    provenance.ensure_signing_key()  # the KMS key (and alias) that signs provenance
    s3 = client("s3")
    with contextlib.suppress(s3.exceptions.BucketAlreadyOwnedByYou):
        s3.create_bucket(Bucket=settings.bucket)
    queue_url = _queue_with_dead_letters(settings.ingest_queue)
    _queue_with_dead_letters(settings.scan_queue)  # scan jobs (artifacts.queue.request_scan)
    # Notices' deliveries and consumers' mail (chalicelib.notifications.fanout and worker).
    _queue_with_dead_letters(settings.notify_queue)
    # Bundle jobs and the module cache's fetches (chalicelib.artifacts.queue.transfer).
    _queue_with_dead_letters(settings.transfers_queue)
    queue_arn = _queue_arn(queue_url)
    client("sqs").set_queue_attributes(
        QueueUrl=queue_url,
        Attributes={"Policy": json.dumps(queue_policy(queue_arn, settings.bucket))},
    )
    s3.put_bucket_notification_configuration(
        Bucket=settings.bucket, NotificationConfiguration=notification_configuration(queue_arn)
    )
    provision_audit_export()
    return queue_url


def provision_audit_export() -> None:
    """Where the audit events are exported, when the settings name it: the bucket, with
    Object Lock (governance mode, each object kept the events' retention; the template's
    bucket may be in compliance mode), and the log group. Idempotent."""
    settings = get_settings()
    if settings.audit_bucket and not _bucket_exists(settings.audit_bucket):
        s3 = client("s3")
        s3.create_bucket(Bucket=settings.audit_bucket, ObjectLockEnabledForBucket=True)
        s3.put_object_lock_configuration(
            Bucket=settings.audit_bucket,
            ObjectLockConfiguration=audit_object_lock("GOVERNANCE", settings),
        )
    if settings.audit_log_group:
        logs = client("logs")
        with contextlib.suppress(logs.exceptions.ResourceAlreadyExistsException):
            logs.create_log_group(logGroupName=settings.audit_log_group)


def _bucket_exists(name: str) -> bool:
    """Whether the bucket is there (us-east-1 answers a second CreateBucket with a 200)."""
    from botocore.exceptions import ClientError

    try:
        client("s3").head_bucket(Bucket=name)
    except ClientError:
        return False
    return True


def audit_object_lock(mode: str, settings: Any) -> dict[str, Any]:
    """The audit bucket's Object Lock: every object kept ``mode`` for the events' retention."""
    return {
        "ObjectLockEnabled": "Enabled",
        "Rule": {"DefaultRetention": {"Mode": mode, "Days": settings.audit_retention_days}},
    }


def _queue_with_dead_letters(name: str) -> str:
    """The queue ``name`` (its URL), whose messages go to ``name-dlq`` after MAX_RECEIVES."""
    sqs = client("sqs")
    dlq_arn = _queue_arn(sqs.create_queue(QueueName=name + DLQ_SUFFIX)["QueueUrl"])
    return sqs.create_queue(
        QueueName=name,
        Attributes={
            "VisibilityTimeout": "120",
            "RedrivePolicy": json.dumps(
                {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": str(MAX_RECEIVES)}
            ),
        },
    )["QueueUrl"]


def upload_cors(origins: list[str]) -> dict[str, Any]:
    """The archive bucket's CORS rule: the web UI's upload page PUTs archives straight to
    their presigned links, from the UI's own origins only (the template's rule for AWS is
    ``template.UPLOAD_CORS``)."""
    return {
        "CORSRules": [
            {
                "ID": "web-ui-uploads",
                "AllowedMethods": ["PUT"],
                "AllowedOrigins": origins,
                "AllowedHeaders": ["Content-Type"],
                "MaxAgeSeconds": 3600,
            }
        ]
    }


def allow_browser_uploads(origins: list[str]) -> None:
    """Set the bucket's CORS rule (idempotent: the local stack sets it at every start, as
    its port may change)."""
    client("s3").put_bucket_cors(
        Bucket=get_settings().bucket, CORSConfiguration=upload_cors(origins)
    )


def _queue_arn(url: str) -> str:
    attributes = client("sqs").get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])
    return attributes["Attributes"]["QueueArn"]
