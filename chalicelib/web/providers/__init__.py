"""The provider pages: the organization's private providers and a provider's page (read
only; publishing is the API's). One blueprint, ``bp``."""

from chalicelib.web.providers.routes import bp

__all__ = ["bp"]
