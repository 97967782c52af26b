"""TLS for a deployment: a CA of its own, one certificate for the nodes, clients' contexts.

``loopbus provision --creds-out DIR`` makes them with the ``cryptography`` package (already
a dependency, for gate signatures), so no openssl CLI is needed: a private CA (10 years),
and one node certificate (2 years) whose names cover every node and the loopback address,
used by the nodes for clients and, with verification both ways, between themselves.
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from bus.names import TLS_CA_ENV as TLS_CA_ENV
from bus.private import private_dir, write_private

"""The environment variable naming the CA a client trusts for a ``tls://`` server."""

CA_FILE = "ca.pem"
CA_KEY = "ca-key.pem"
NODE_FILE = "node.pem"
NODE_KEY = "node-key.pem"


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _key_bytes(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _san(hosts: list[str]) -> x509.SubjectAlternativeName:
    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    return x509.SubjectAlternativeName(names)


def ensure_tls(folder: Path, hosts: list[str]) -> list[Path]:
    """Make the CA and the node certificate in ``folder`` unless they exist; returns the
    files made. ``hosts`` are the names (and addresses) the nodes are reached by."""
    private_dir(folder)
    if (folder / CA_FILE).exists() and (folder / NODE_FILE).exists():
        return []
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name("loopbus CA"))
        .issuer_name(_name("loopbus CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=3650))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    node_key = ec.generate_private_key(ec.SECP256R1())
    usage = [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
    node = (
        x509.CertificateBuilder()
        .subject_name(_name("loopbus node"))
        .issuer_name(ca.subject)
        .public_key(node_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=730))
        .add_extension(_san(hosts), critical=False)
        # Routes verify both ways: the node's certificate is a client's as well.
        .add_extension(x509.ExtendedKeyUsage(usage), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    # The certificates are public, but they sit in a deployment's secrets folder, whose
    # files are all its owner's (a deployment shares what it mounts, docs/deploy.md).
    write_private(folder / CA_FILE, ca.public_bytes(pem))
    write_private(folder / CA_KEY, _key_bytes(ca_key))
    write_private(folder / NODE_FILE, node.public_bytes(pem))
    write_private(folder / NODE_KEY, _key_bytes(node_key))
    return [folder / n for n in (CA_FILE, CA_KEY, NODE_FILE, NODE_KEY)]


def tls_block(cert: str, key: str, ca: str) -> str:
    """nats-server's TLS for clients and, verified both ways, for routes between nodes."""
    files = f'cert_file: "{cert}", key_file: "{key}", ca_file: "{ca}"'
    return (
        f"tls {{ {files}, timeout: 5 }}\n"
        f"cluster {{ tls {{ {files}, verify: true, timeout: 5 }} }}\n"
    )


def client_context(ca_file: Path) -> ssl.SSLContext:
    """A client's TLS context that trusts only the deployment's CA."""
    return ssl.create_default_context(cafile=str(ca_file))
