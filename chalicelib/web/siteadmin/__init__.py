"""Site administration pages (``/app/admin``): users, organizations and every settings area
the admin API manages, as server-rendered forms over the admin and SCIM services."""
