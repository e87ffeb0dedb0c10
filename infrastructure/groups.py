"""The route groups: one Lambda function each, with its entry module and its permissions.

Chalice packages every route into one function (``APIHandler``); ``infrastructure.template``
turns this table into extra functions and re-points each route's API Gateway integration at
its group's function, reading the routes from the entry modules so the two cannot drift.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from chalicelib.modules.cache.store import PREFIX as MODULE_CACHE_OBJECTS
from chalicelib.providers.keys import PROVENANCE_PREFIX as PROVIDER_PROVENANCE
from chalicelib.providers.keys import UPLOAD_PREFIX as PROVIDER_OBJECTS
from chalicelib.providers.mirror.store import PREFIX as MIRROR_OBJECTS

READ = "read"
WRITE = "write"
# Add items, never delete them: the audit trail's events (chalicelib.audit: PutItem, and the
# UpdateItem that creates an event inside a change's transaction; no DeleteItem).
APPEND = "append"

# Where each kind of object lives in the bucket; a role's S3 actions are granted per prefix.
# Modules: uploads, archives and metadata (chalicelib.modules.keys); providers: a version's
# SHA256SUMS, signature and platform archives (chalicelib.providers.keys); the mirror's cache
# of public providers' archives (chalicelib.providers.mirror.store).
MODULE_OBJECTS = "v1/"
# Air-gapped bundles: their jobs' state and the bundles themselves (chalicelib.bundles.jobs).
BUNDLE_OBJECTS = "bundles/"
GET, PUT, DELETE = "s3:GetObject", "s3:PutObject", "s3:DeleteObject"

# What every API request touches: the rate limiter's counter (one conditional UpdateItem)
# and the general settings that configure it.
EVERY_REQUEST = {"rate-limits": WRITE, "settings": READ}
# What authenticating a request reads (tokens -> users/teams -> organizations).
AUTH_TABLES = {**EVERY_REQUEST, "tokens": READ, "users": READ, "teams": READ, "organizations": READ}
# Creating and deleting modules keeps their organization's count (chalicelib.core.data.lists);
# every change of a module's versions keeps its entry in the registry protocol's list;
# deleting a version or a module deletes its download counts.
REGISTRY_TABLES = {
    "registry-modules": WRITE,
    "registry-module-versions": WRITE,
    "list-counts": WRITE,
    "registry-protocol-list": WRITE,
    "module-downloads": WRITE,
}
# No-code modules: the registry function serves them (and deletes them with their modules);
# deleting an organization deletes its no-code modules too.
NO_CODE_TABLES = {"no-code-modules": WRITE}
# Projects count their workspaces and lend them tag bindings: every function that writes
# workspaces writes projects too (the organization delete cascade included).
WORKSPACE_TABLES = {
    "workspaces": WRITE,
    "workspace-names": WRITE,
    "tags": WRITE,
    "tag-ids": WRITE,
    "tag-workspaces": WRITE,
    "projects": WRITE,
    "project-names": WRITE,
    # Creating and deleting tags keeps their organization's count (chalicelib.core.data.lists).
    "list-counts": WRITE,
}
PROVIDER_TABLES = {
    "gpg-keys": WRITE,
    "registry-providers": WRITE,
    "registry-provider-versions": WRITE,
    "registry-provider-platforms": WRITE,
}
VCS_TABLES = {"oauth-clients": WRITE, "oauth-tokens": WRITE}
# Publishing from VCS reads a connection (and checks its organization still exists).
VCS_READ = {"oauth-clients": READ, "oauth-tokens": READ, "organizations": READ}


@dataclass(frozen=True)
class Function:
    """A Lambda function: ``logical_id`` in the template, ``handler`` as Lambda names it."""

    logical_id: str
    handler: str
    tables: dict[str, str] = field(default_factory=dict)
    # Bucket prefix -> the S3 actions allowed on the objects under it.
    s3: dict[str, tuple[str, ...]] = field(default_factory=dict)
    memory: int = 512
    timeout: int = 30
    # /tmp in MB (Lambda's default is 512).
    ephemeral_storage: int = 512
    # Puts VCS publishing jobs on the ingest queue (chalicelib.artifacts.queue).
    sends_jobs: bool = False
    # Signs provenance with the signing key (kms:Sign; chalicelib.trust.provenance).
    signs: bool = False
    # Serves the signing keys' public halves (kms:GetPublicKey).
    reads_public_keys: bool = False
    # Puts scan jobs on the scan queue (chalicelib.artifacts.queue.request_scan).
    sends_scans: bool = False
    # Puts notices on the notifications queue (chalicelib.notifications.fanout.enqueue).
    sends_notices: bool = False
    # Puts jobs on the transfers queue (chalicelib.artifacts.queue.transfer).
    sends_transfers: bool = False
    # The table (short name) whose DynamoDB Stream invokes the function, if any.
    stream: str | None = None
    # A stack parameter capping the function's concurrent instances (its reserved
    # concurrency), if it has one; 0, its default, is no cap.
    concurrency_parameter: str | None = None
    # Served by a Lambda function URL too (template.function_url_resources), besides the
    # REST API: no API Gateway request (chalicelib.entry.function_url).
    url: bool = False

    @property
    def entry_module(self) -> str:
        return self.handler.rsplit(".", 1)[0]


ROUTE_GROUPS: tuple[Function, ...] = (
    # APIHandler is the function Chalice generates; it serves the accounts group. Deleting an
    # organization cascades into its modules, providers (and their files: DeleteObject) and
    # GPG keys, VCS connections, workspaces and tags.
    Function(
        "APIHandler",
        "chalicelib.entry.api.accounts.app",
        {
            **AUTH_TABLES,
            "organizations": WRITE,
            "users": WRITE,
            "teams": WRITE,
            "tokens": WRITE,
            # Invitations and the memberships they became.
            "organization-memberships": WRITE,
            # Creating an organization: is its name a namespace the module cache serves?
            "module-cache-settings": READ,
            **REGISTRY_TABLES,
            **NO_CODE_TABLES,
            **PROVIDER_TABLES,
            **WORKSPACE_TABLES,
            **VCS_TABLES,
            "registry-policies": WRITE,
            # Deleting an organization deletes its notification configurations.
            "notification-configurations": WRITE,
            # The audit trail's API (chalicelib.audit.routes) reads it; every change records
            # its event (chalicelib.core.audit), never a delete.
            "audit-events": APPEND,
        },
        s3={MODULE_OBJECTS: (DELETE,), PROVIDER_OBJECTS: (DELETE,), PROVIDER_PROVENANCE: (DELETE,)},
        sends_jobs=True,  # removing deleted VCS modules' webhooks at the VCS host
    ),
    Function("MetaFunction", "chalicelib.entry.api.meta.app", EVERY_REQUEST, memory=256),
    Function(
        "RegistryFunction",
        "chalicelib.entry.api.registry.app",
        # The organization's publishing policy (chalicelib.trust.routes): read and changed here.
        {
            **AUTH_TABLES,
            **REGISTRY_TABLES,
            **NO_CODE_TABLES,
            **VCS_READ,
            "registry-policies": WRITE,
            # The organization's notification configurations (chalicelib.notifications.routes;
            # their kept count is in list-counts); an email one's users are read to check
            # they are members, and mailed on verify (the SMTP settings: settings, READ).
            "notification-configurations": WRITE,
            # The policy's changes, releases and lifecycle changes, and the notification
            # configurations' changes, record their events.
            "audit-events": APPEND,
        },
        # GetObject: a version's parsed metadata (a no-code module's module-variables).
        s3={MODULE_OBJECTS: (GET, PUT, DELETE)},
        sends_jobs=True,
    ),
    # Publishing from VCS: reads connections, seals webhook secrets, queues the jobs; the
    # commits list reads the VCS host; retry looks for uploaded archives to ingest again.
    Function(
        "PublishingFunction",
        "chalicelib.entry.api.publishing.app",
        {**AUTH_TABLES, **REGISTRY_TABLES, **VCS_READ},
        s3={MODULE_OBJECTS: (GET,)},
        sends_jobs=True,
    ),
    # VCS hosts' webhook deliveries: no token, verified with the module's sealed secret.
    Function(
        "WebhooksFunction",
        "chalicelib.entry.api.webhooks.app",
        {**EVERY_REQUEST, "registry-modules": WRITE},
        memory=256,
        sends_jobs=True,
    ),
    Function(
        "ProtocolFunction",
        "chalicelib.entry.api.protocol.app",
        {
            **AUTH_TABLES,
            "registry-modules": READ,
            "registry-module-versions": READ,
            "registry-protocol-list": READ,
            # A search reads the modules' kept counts and key sets (chalicelib.core.data.lists).
            "list-counts": READ,
            "public-registry-cache": WRITE,
            # providers.v1: the provider item, then a platform and its signing key.
            "registry-providers": READ,
            "registry-provider-platforms": READ,
            "gpg-keys": READ,
            # A download counts itself (one UpdateItem); a module's detail reads the counts.
            "module-downloads": WRITE,
            # The module cache (chalicelib.modules.cache): which namespaces it serves, what
            # it keeps, and the event of each version it caches.
            "module-cache-settings": READ,
            "module-cache": WRITE,
            "audit-events": APPEND,
        },
        # Presigned downloads of module archives and of providers' files; the module
        # cache's archives and metadata, put by digest (AbortMultipartUpload: boto3's
        # upload of a large archive goes in parts).
        s3={
            MODULE_OBJECTS: (GET,),
            PROVIDER_OBJECTS: (GET,),
            MODULE_CACHE_OBJECTS: (GET, PUT, "s3:AbortMultipartUpload"),
        },
        # GET /api/registry/v1/signing-keys (chalicelib.trust.keys_routes).
        reads_public_keys=True,
        # Discovery names its URL for modules.v1 (versions, download: two of the three
        # requests of a module's install), unless the stack's ProtocolUrlEnabled is false.
        url=True,
        # The URL has no API Gateway throttling or WAF in front of it: a cap on the
        # function's instances bounds what a flood can cost (opt-in, as the mirror's).
        concurrency_parameter="ProtocolConcurrency",
        # A first install whose fetch outlived its bound queues it for the Transfers function.
        sends_transfers=True,
    ),
    Function(
        "WorkspacesFunction",
        "chalicelib.entry.api.workspaces.app",
        {**AUTH_TABLES, **WORKSPACE_TABLES},
    ),
    # The private provider registry: GPG keys, providers, versions, platforms; presigned
    # uploads of their files (PutObject signs them), deletes remove the files; a platform's
    # retry checks its files are there (HeadObject: GetObject) and queues their S3 events.
    Function(
        "ProvidersFunction",
        "chalicelib.entry.api.providers.registry.app",
        {**AUTH_TABLES, **PROVIDER_TABLES},
        # A version's provenance: read by its route, deleted with the version.
        s3={PROVIDER_OBJECTS: (GET, PUT, DELETE), PROVIDER_PROVENANCE: (GET, DELETE)},
        sends_jobs=True,
    ),
    # The provider network mirror (chalicelib.providers.mirror), apart from the providers
    # API: it calls the upstream registry and streams large archives. Private providers are
    # served as providers.v1 serves them: from the provider item alone, with presigned links
    # to their archives, whose h1: it reads once (GetObject on providers/). Its pull-through
    # cache and the seed upload keep public providers' archives under mirror/ (PutObject;
    # AbortMultipartUpload: boto3's upload of a large archive goes in parts and aborts them
    # when it fails) and their lists in its own table. A seed is for site admins (users).
    Function(
        "MirrorFunction",
        "chalicelib.entry.api.providers.mirror.app",
        {**AUTH_TABLES, "registry-providers": READ, "provider-mirror": WRITE},
        s3={PROVIDER_OBJECTS: (GET,), MIRROR_OBJECTS: (GET, PUT, "s3:AbortMultipartUpload")},
        # A fetch fills the cache with up to FETCH_THREADS (4) platforms at once, each spooled
        # to /tmp (at most REGISTRY_MIRROR_MAX_ARCHIVE_BYTES, 512 MiB by default; hashicorp/aws
        # is over 100 MB a platform) and hashed twice (zh: while it downloads, h1: inflating
        # every file of the zip). Lambda gives CPU in proportion to memory, one vCPU at
        # 1,769 MB: 2,048 MB so four hashing threads do not starve the downloads (the memory
        # itself stays small: everything streams in 1 MiB chunks). /tmp holds four archives
        # at the cap: 4 x 512 MiB.
        memory=2048,
        ephemeral_storage=2048,
        # API Gateway answers 504 after 29 s whatever the function does, but the function
        # runs on: a fetch that outlasts the 29 s still lands in the cache, and the client's
        # next try is served from it (else a provider slower than 29 s to fetch could never
        # be cached through the API). REGISTRY_MIRROR_TIMEOUT (10 s) bounds each network
        # operation, not a whole fetch: 120 s bounds an upstream that trickles.
        timeout=120,
        # Its own function already keeps the providers API's instances free of slow fetches;
        # every function still draws on the account's concurrency, which a cap on this one
        # protects (opt-in: a reservation fails on an account whose limit leaves no room).
        concurrency_parameter="MirrorConcurrency",
    ),
    # VCS connections; their secrets are sealed with KMS (see chalicelib/core/secrets.py).
    Function("VcsFunction", "chalicelib.entry.api.vcs.app", {**AUTH_TABLES, **VCS_TABLES}),
    # Site-admin settings; the module cache's settings (chalicelib.modules.cache.settings):
    # allowing a namespace reads the organizations (AUTH_TABLES) to refuse one's name. Every
    # change records its event in its transaction. Air-gapped bundles' jobs
    # (chalicelib.bundles): each job's state and bundle under bundles/ (presigned links to
    # upload and download a bundle), queued for the Transfers function, which runs it.
    Function(
        "AdminFunction",
        "chalicelib.entry.api.admin.app",
        {
            **AUTH_TABLES,
            "settings": WRITE,
            "module-cache-settings": WRITE,
            "audit-events": APPEND,
        },
        s3={BUNDLE_OBJECTS: (GET, PUT)},
        sends_transfers=True,
    ),
    # SCIM: identity providers provision users and groups (tokens in the tokens table); the
    # instance's users and team memberships follow, and the site-admin flag; enabling reads
    # the SAML settings.
    Function(
        "ScimFunction",
        "chalicelib.entry.api.scim.app",
        {
            **AUTH_TABLES,
            "tokens": WRITE,
            "users": WRITE,
            "teams": WRITE,
            "scim-settings": WRITE,
            "scim-users": WRITE,
            "scim-groups": WRITE,
            "scim-mappings": WRITE,
            # Creating and deleting users keeps the user directory's count.
            "list-counts": WRITE,
        },
    ),
    # The browser UI's everyday pages (chalicelib.entry.api.web): browsing modules and
    # providers, sign-in (password, token, SSO, terraform login), the two-factor and password
    # reset pages, the account page, static assets. It only reads modules and providers; the
    # heavier, rarer pages that write them are WebAdminFunction's.
    Function(
        "WebFunction",
        "chalicelib.entry.api.web.app",
        {
            **AUTH_TABLES,
            # The module list (search, its counts) and page (versions, README from the
            # version's parsed metadata in S3, the Downloads tab).
            "registry-modules": READ,
            "registry-module-versions": READ,
            # Written too: accepting an invitation and SSO create users, which keeps the
            # user directory's count.
            "list-counts": WRITE,
            "module-downloads": READ,
            "web-sessions": WRITE,
            # terraform login: its authorization codes, and the user token it mints; the
            # account page's own API tokens.
            "login-codes": WRITE,
            "tokens": WRITE,
            # Accepting an invitation creates the user and puts them on its teams; two-factor,
            # password reset and the account page (profile, password) keep their state on the
            # user; SSO creates users and sets their teams. (Password sign-in counts failures
            # in the rate limiter's table.)
            "organization-memberships": WRITE,
            "users": WRITE,
            "teams": WRITE,
            # SAML sign-in: outstanding requests, used assertions, what SAML granted.
            "saml-state": WRITE,
            # The account pages' changes (password, two-factor, email, API tokens) and
            # accepting an invitation record their events (chalicelib.core.audit).
            "audit-events": APPEND,
            # The provider pages: providers, their versions, platforms and signing keys.
            "registry-providers": READ,
            "registry-provider-versions": READ,
            "registry-provider-platforms": READ,
            "gpg-keys": READ,
        },
        # Provider pages: a platform's retry checks its files are there (HeadObject).
        s3={MODULE_OBJECTS: (GET,), PROVIDER_OBJECTS: (GET,)},
        # Password reset mails and a provider platform's retry go through the ingest queue.
        sends_jobs=True,
    ),
    # The browser UI's rarer, heavier pages (chalicelib.entry.api.webadmin): site
    # administration, people management (members, teams, invitations) and publishing. Its
    # publishing pages write modules and versions as the registry function does: presigned
    # uploads (PutObject signs them), deletes remove the archives, retry queues ingests and
    # fetches; a VCS branch version reads its connection.
    Function(
        "WebAdminFunction",
        "chalicelib.entry.api.webadmin.app",
        {
            **AUTH_TABLES,
            **REGISTRY_TABLES,
            **NO_CODE_TABLES,
            **VCS_READ,
            # Every page reads its session (signing in and out are WebFunction's).
            "web-sessions": READ,
            # The people pages' team and organization API tokens.
            "tokens": WRITE,
            # Invitations and memberships; teams; site administration's people pages
            # (site-admin flag, removing users).
            "organization-memberships": WRITE,
            "users": WRITE,
            "teams": WRITE,
            # The people pages rotate and revoke the organization's token (kept on its item);
            # site administration edits organizations' module sharing.
            "organizations": WRITE,
            # Site administration: the settings areas, SCIM settings and tokens (disabling
            # SCIM deletes its users, groups and links).
            "settings": WRITE,
            "scim-settings": WRITE,
            "scim-users": WRITE,
            "scim-groups": WRITE,
            "scim-mappings": WRITE,
            # The module cache's settings page (chalicelib.web.siteadmin.cache_routes).
            "module-cache-settings": WRITE,
            # The organization settings page shows and changes the publishing policy.
            "registry-policies": WRITE,
            # The policy's changes and the version pages' releases and lifecycle changes
            # record their events (chalicelib.audit); the audit trail's pages and a version's
            # history read them (Query).
            "audit-events": APPEND,
        },
        s3={MODULE_OBJECTS: (GET, PUT, DELETE)},
        # The publishing pages queue ingests and VCS fetches.
        sends_jobs=True,
    ),
)

# S3 upload events, VCS publishing jobs (tag syncs, git fetches) and password reset mails
# from the ingest queue.
INGEST = Function(
    "Ingest",
    "chalicelib.entry.ingest.ingest",
    # Provider uploads mark their version or platform (chalicelib.providers.uploads); a
    # reset mail finds its user, keeps the link's hash on it and reads the SMTP settings.
    # A module version's ingest reads its organization's publishing policy (does it wait for
    # its scan?).
    {
        **REGISTRY_TABLES,
        **VCS_READ,
        **PROVIDER_TABLES,
        "users": WRITE,
        "settings": READ,
        "registry-policies": READ,
        # A reset link made records its event (chalicelib.accounts.resets).
        "audit-events": APPEND,
    },
    # Providers' files are only read: their checks (chalicelib.providers.ingest.verify); a
    # verified version's provenance is written and signed (chalicelib.providers.provenance).
    s3={
        MODULE_OBJECTS: (GET, PUT, DELETE),
        PROVIDER_OBJECTS: (GET,),
        PROVIDER_PROVENANCE: (PUT,),
    },
    memory=1024,
    timeout=120,
    sends_jobs=True,
    signs=True,
    # An accepted module version's scan (chalicelib.modules.ingest.handler).
    sends_scans=True,
)
OIDC_KEYS = Function(
    "OidcKeyMaintenance",
    "chalicelib.entry.oidc.oidc_key_maintenance",
    {"settings": WRITE},
    memory=256,
    timeout=60,
)

# The deprecation deadline sweep (chalicelib.entry.deadlines, every minute): reads the due
# versions (the by-deadline index), revokes them as the registry (the version and its module's
# entry; the protocol's list follows) or records their notices, each with its audit event.
DEPRECATION_DEADLINES = Function(
    "DeprecationDeadlines",
    "chalicelib.entry.deadlines.deprecation_deadlines",
    {
        "registry-modules": WRITE,
        "registry-module-versions": WRITE,
        "registry-protocol-list": WRITE,
        "audit-events": APPEND,
    },
    memory=256,
    timeout=60,
)

# Functions Chalice generates for event handlers in app.py, and where they really live.
EVENT_FUNCTIONS: tuple[Function, ...] = (INGEST, OIDC_KEYS, DEPRECATION_DEADLINES)

# The module-downloads stream into each module's kept totals (chalicelib.modules.downloads
# .totals): finds the module by id (its by-id index), sets its map and its protocol list
# entry's total; reads a module's download items once when the map is missing.
DOWNLOAD_TOTALS = Function(
    "DownloadTotals",
    "chalicelib.entry.downloads.handler",
    {"registry-modules": WRITE, "registry-protocol-list": WRITE, "module-downloads": READ},
    memory=256,
    timeout=60,
    stream="module-downloads",
)
# The audit-events stream into S3 and CloudWatch Logs, one JSON line an event
# (chalicelib.audit.export): it reads the stream's new images and no table; its bucket, log
# group and dead-letter queue are granted by the template (template.audit_export_statements).
AUDIT_EXPORT = Function(
    "AuditExport",
    "chalicelib.entry.audit_export.handler",
    {},
    memory=256,
    timeout=60,
    stream="audit-events",
)
# The audit-events stream read a second time (its own event source mapping, its own place
# in the stream): each new event that a trigger names, fanned out to the notifications queue
# (chalicelib.notifications.fanout): the organization's configurations (one Query each), the
# version's module (its latest servable version, its id).
NOTIFY_FANOUT = Function(
    "NotificationsFanOut",
    "chalicelib.entry.notify.stream",
    {"notification-configurations": READ, "registry-modules": READ},
    memory=256,
    timeout=60,
    stream="audit-events",
    sends_notices=True,
)
# Functions the template makes whole (Chalice knows nothing of them), invoked by a stream.
STREAM_FUNCTIONS: tuple[Function, ...] = (DOWNLOAD_TOTALS, AUDIT_EXPORT, NOTIFY_FANOUT)

# Scan jobs from the scan queue (chalicelib.entry.scan, chalicelib.modules.scanning.worker):
# the only function with the scanner (Trivy, from its layer: template.SCANNER_LAYER). It
# reads a version's archive and parsed metadata (its README, for the policy), writes the
# scan report, SBOM and provenance beside them, and records the scan on the version and its
# module entry (a held version published or quarantined: the protocol's list follows).
# Memory: Trivy's process is bounded by the scan's memory limit (1 GiB by default) on top of
# Python's; Lambda's CPU grows with it. /tmp: Trivy decompressed from its layer (about
# 175 MB), the archive spooled (up to REGISTRY_MAX_ARCHIVE_BYTES) and unpacked (the .tf files
# and READMEs, up to REGISTRY_MAX_UNPACKED_BYTES, 250 MB by default).
SCAN = Function(
    "ScanFunction",
    "chalicelib.entry.scan.scan",
    {
        "registry-modules": WRITE,
        "registry-module-versions": WRITE,
        "registry-protocol-list": WRITE,
        # Does the organization's publishing policy hold a version back? (trust.policy)
        "registry-policies": READ,
    },
    s3={
        "v1/archives/": (GET,),
        "v1/metadata/": (GET,),
        "v1/findings/": (PUT,),
        "v1/sbom/": (PUT,),
        "v1/provenance/": (PUT,),
    },
    memory=1536,
    timeout=120,
    ephemeral_storage=1024,
    signs=True,  # a module version's provenance (chalicelib.modules.scanning.attest)
)
# The notifications queue's messages (chalicelib.notifications.worker): one delivery to a
# destination (core.outbound; kept on its configuration: UpdateItem), re-queued with a delay
# when it failed; the consumers' mail: a version's downloads, the organization (whom it
# shares its modules with), the consuming teams' members and users (their addresses), the
# SMTP settings (admin.mail). Each POST is bounded at
# send.TIMEOUT a network operation and each mail at the SMTP timeout: 300 s covers a batch.
NOTIFY_DELIVERY = Function(
    "NotificationsDelivery",
    "chalicelib.entry.notify.deliveries",
    {
        "notification-configurations": WRITE,
        "module-downloads": READ,
        "organizations": READ,
        "teams": READ,
        "users": READ,
        "settings": READ,
    },
    memory=256,
    timeout=300,
    sends_notices=True,
)
# The transfers queue's jobs (chalicelib.entry.transfers), one at a time: bundle exports and
# imports (chalicelib.bundles.jobs) and the module cache's background fetches
# (chalicelib.modules.cache.service.fetch_queued). An export reads what it takes (module
# archives, providers' files, cached archives) through the modules' and providers' services
# as the site admin who started it, and writes the bundle under bundles/ (multipart: parts,
# AbortMultipartUpload); an import creates modules, providers and keys and writes their files
# where uploads go (their S3 events run Ingest's checks); a cache fetch stores an archive and
# its metadata under their digest and records the cached version. 900 s: Lambda's most; an
# export near it stops after a part and queues itself again. /tmp: one object spooled at a
# time (up to the larger archive limit) and an import's members (the same).
TRANSFERS = Function(
    "Transfers",
    "chalicelib.entry.transfers.handler",
    {
        **REGISTRY_TABLES,
        **PROVIDER_TABLES,
        # The job's site admin, checked again when it runs, and the rights it reads with.
        "users": READ,
        "teams": READ,
        "organizations": READ,
        "settings": READ,
        "module-cache-settings": READ,
        "module-cache": WRITE,
        "audit-events": APPEND,
    },
    s3={
        MODULE_OBJECTS: (GET, PUT),
        PROVIDER_OBJECTS: (GET, PUT),
        BUNDLE_OBJECTS: (GET, PUT, "s3:AbortMultipartUpload"),
        MODULE_CACHE_OBJECTS: (GET, PUT, "s3:AbortMultipartUpload"),
    },
    memory=1024,
    timeout=900,
    ephemeral_storage=2048,
    sends_transfers=True,  # an export near its time budget queues itself again
)
# Functions the template makes whole, invoked by a queue of their own.
QUEUE_FUNCTIONS: tuple[Function, ...] = (SCAN, NOTIFY_DELIVERY, TRANSFERS)

# Every function of the stack.
ALL_FUNCTIONS: tuple[Function, ...] = (
    ROUTE_GROUPS + EVENT_FUNCTIONS + STREAM_FUNCTIONS + QUEUE_FUNCTIONS
)
