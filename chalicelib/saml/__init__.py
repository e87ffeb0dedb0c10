"""SAML 2.0 single sign-on (the service provider side) configured by the site's SAML settings.

``config`` (the settings and this site's SP URLs), ``metadata`` (the SP metadata document),
``authn`` (SP-initiated: the AuthnRequest by HTTP-Redirect, signed when configured),
``response`` (the Response: signature by ``idp-cert``/``old-idp-cert`` through signxml, then
every condition; imports lxml and signxml, so only the ACS handler imports it, lazily),
``logout`` (single logout at ``/users/saml/slo``: the IdP's LogoutResponse to our
sign-out, the IdP's own LogoutRequest; HTTP-Redirect, the query signature checked against
``idp-cert``/``old-idp-cert``), ``service`` (who signs in: the user, teams and site-admin
flag through ``accounts``),
``store`` (outstanding requests, assertions already used, what SAML granted), ``errors``.
The web room serves the endpoints and opens the session.
"""
