"""A module version's scan, SBOM and provenance: the scan function's worker, and the routes
that read what it stored beside the archive."""
