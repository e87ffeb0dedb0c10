"""The audit trail in the browser: an organization's trail for its owners
(``/app/<org>/audit-trail``), the site's and any organization's for site admins
(``/app/admin/audit-trail``), with the API's bounded filters (``chalicelib.audit.reading``)
and a link to each resource (``rows``); and a module version's own history (who published,
deprecated, revoked or released it) on its publishing page (``history``)."""
