"""The registry-modules API's organization-scoped paths, shared by its route groups."""

ORG_MODULES = "/api/v2/organizations/{organization_name}/registry-modules"
MODULE = ORG_MODULES + "/{registry_name}/{namespace}/{name}/{provider}"
