"""The cross-domain cascades: what creating and deleting an organization or a workspace
touches, in order, in one place (routes call these; the domains' services never cascade
upward)."""
