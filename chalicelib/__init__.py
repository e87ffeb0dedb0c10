"""The registry's code. ``__version__`` is the release (CHANGELOG.md), reported by
``GET /api/v2/ping`` (``X-TFE-Current-Version``) and by the deployed stack's outputs."""

__version__ = "0.12.0"
