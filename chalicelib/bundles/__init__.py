"""Air-gapped bundles: a chosen set of private modules and providers (with their platforms,
SHA256SUMS, signatures and GPG keys) exported from one registry into one tar file with a
manifest of digests, and imported into another with no network between them.

* ``manifest``: the format (what ``manifest.json`` says, where each file sits in the tar);
* ``tarstream``: writing and reading the tar as a stream (bounded memory: one S3 multipart
  part and one spooled file at a time);
* ``export``: what a selection names, read through the modules' and providers' services;
  ``MODULE_SOURCES`` is the seam for the module cache's versions (``cache/...`` addresses);
* ``verify``: the import's first pass, every digest and every provider signature checked
  before anything is created;
* ``imports``: the second pass, per entry created, skipped (identical) or refused;
* ``jobs``: exports and imports as jobs on the transfers queue, their state in S3;
* ``routes``: the site-admin API (``/api/v2/admin/bundle-exports``, ``.../bundle-imports``).
"""
