"""Trust: what the registry knows about what it distributes, whatever the artifact type.

The parts no artifact type owns: a scan's findings and the scanners that find them
(``findings``, ``scanner``), an organization's publishing policy, the SBOM and the signed
provenance of a version. The types that hold versions (``modules``, ``providers``) call them
and keep the results beside their archives; the scan runs in its own function (the only one
that carries a scanner).
"""
