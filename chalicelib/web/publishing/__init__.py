"""Publishing from the browser: create a module, create a version and upload its archive
straight to the presigned S3 link, deprecate, revoke, delete, retry. One blueprint, ``bp``;
importing the package registers every page (``common.bp`` gathers them)."""

from chalicelib.web.publishing import modules, vcs, versions  # noqa: F401 - registers the pages
from chalicelib.web.publishing.common import bp

__all__ = ["bp"]
