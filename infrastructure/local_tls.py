"""HTTPS for the local stack: a certificate authority of this machine's own and a server
certificate it signs, made with ``cryptography`` and kept in the data dir's ``tls/`` (so a
client told to trust the CA once keeps trusting it across restarts).

terraform discovers a registry's services over HTTPS only and refuses an ``http://`` provider
network mirror: with the stack also on HTTPS, ``localhost:HTTPS_PORT`` is a registry host
terraform uses with no CLI configuration at all. terraform (Go) on Linux trusts the files
SSL_CERT_FILE names instead of the system's: ``trust_bundle`` writes the system's bundle plus
this CA into one file, and ``make run`` prints the ``export SSL_CERT_FILE=...`` line.

The CA's key never leaves the directory (0600, like the state); the server certificate names
127.0.0.1, ::1, localhost and the HOST the stack serves, and is made again when that HOST
changes or it nears its end.
"""

from __future__ import annotations

import ipaddress
import os
import ssl
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

CA_DAYS = 3650
SERVER_DAYS = 397  # what browsers accept for a server certificate
RENEW_BEFORE = timedelta(days=30)


@dataclass(frozen=True)
class LocalTls:
    directory: Path
    ca_cert: Path
    server_cert: Path
    server_key: Path
    bundle: Path  # the system's trusted CAs plus this CA: what SSL_CERT_FILE names

    def server_context(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(self.server_cert, self.server_key)
        return context


def _names(host: str) -> list[str]:
    names = ["localhost", "127.0.0.1", "::1"]
    if host and host not in ("0.0.0.0", "::"):
        names.append(host.strip("[]"))
    else:
        import socket

        names.append(socket.gethostname())
    return list(dict.fromkeys(names))


def _write_private(path: Path, data: bytes) -> None:
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(data)


def _system_bundle() -> str:
    """The system's trusted CAs as PEM (the file OpenSSL reads), or "" when none is found."""
    paths = ssl.get_default_verify_paths()
    for candidate in (paths.cafile, paths.openssl_cafile, "/etc/ssl/certs/ca-certificates.crt"):
        if candidate and Path(candidate).is_file():
            return Path(candidate).read_text(encoding="utf-8", errors="replace")
    return ""


def ensure(directory: Path, host: str) -> LocalTls:
    """The CA and server certificate in ``directory`` (made when missing, the server's again
    when its names or dates no longer fit), and the trust bundle."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    tls = LocalTls(
        directory,
        directory / "ca.pem",
        directory / "server.pem",
        directory / "server-key.pem",
        directory / "trust-bundle.pem",
    )
    ca_key_path = directory / "ca-key.pem"
    now = datetime.now(UTC)
    pem = serialization.Encoding.PEM
    private = (serialization.PrivateFormat.PKCS8, serialization.NoEncryption())

    if tls.ca_cert.exists() and ca_key_path.exists():
        ca_cert = x509.load_pem_x509_certificate(tls.ca_cert.read_bytes())
        loaded = serialization.load_pem_private_key(ca_key_path.read_bytes(), None)
        if not isinstance(loaded, ec.EllipticCurvePrivateKey):
            raise ValueError(f"{ca_key_path} is not the local CA's (EC) key")
        ca_key = loaded
    else:
        ca_key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name(
            [x509.NameAttribute(NameOID.COMMON_NAME, "Terraform registry local CA")]
        )
        ca_cert = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(ca_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - timedelta(minutes=5))
            .not_valid_after(now + timedelta(days=CA_DAYS))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    key_cert_sign=True,
                    crl_sign=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(
                x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False
            )
            .sign(ca_key, hashes.SHA256())
        )
        _write_private(ca_key_path, ca_key.private_bytes(pem, *private))
        tls.ca_cert.write_bytes(ca_cert.public_bytes(pem))
        tls.server_cert.unlink(missing_ok=True)

    names = _names(host)
    if not _server_fits(tls.server_cert, names, now):
        key = ec.generate_private_key(ec.SECP256R1())
        alternatives: list[x509.GeneralName] = []
        for name in names:
            try:
                alternatives.append(x509.IPAddress(ipaddress.ip_address(name)))
            except ValueError:
                alternatives.append(x509.DNSName(name))
        cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])]))
            .issuer_name(ca_cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - timedelta(minutes=5))
            .not_valid_after(now + timedelta(days=SERVER_DAYS))
            .add_extension(x509.SubjectAlternativeName(alternatives), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                critical=False,
            )
            .sign(ca_key, hashes.SHA256())
        )
        _write_private(tls.server_key, key.private_bytes(pem, *private))
        tls.server_cert.write_bytes(cert.public_bytes(pem))

    ca_pem = tls.ca_cert.read_text(encoding="ascii")
    tls.bundle.write_text(_system_bundle().rstrip("\n") + "\n" + ca_pem, encoding="utf-8")
    return tls


def _server_fits(path: Path, names: list[str], now: datetime) -> bool:
    from cryptography import x509

    if not path.exists():
        return False
    cert = x509.load_pem_x509_certificate(path.read_bytes())
    if cert.not_valid_after_utc - now < RENEW_BEFORE:
        return False
    try:
        sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return False
    present = {str(v) for v in sans.get_values_for_type(x509.IPAddress)}
    present |= set(sans.get_values_for_type(x509.DNSName))
    return all(
        str(ipaddress.ip_address(n)) in present if _is_ip(n) else n in present for n in names
    )


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True
