"""The module pull-through cache: public modules installed through this registry's host.

A module address ``<this host>/<namespace>/<name>/<provider>`` whose namespace a site admin
allowed (``settings``: ``allowed-namespaces``) is an upstream registry's module (the
registry at ``REGISTRY_MIRROR_UPSTREAM_URL``, the provider mirror's upstream; the public
registry by default), served through the same ``modules.v1`` prefix as private modules.
The first install fetches the upstream's versions and the version's archive (a tarball, or
the git or HTTP source its download answer points to, on an ``allowed-source-hosts`` host),
stores the archive under its digest, ingests it as an upload is ingested, and serves it
from then on; the upstream down, what is cached keeps installing. An organization cannot
take the name of an allowed namespace, nor the reverse.

- ``settings``: the site's choices (a singleton), read per instance with a short cache.
"""
