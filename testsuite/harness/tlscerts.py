"""A throwaway CA and a server certificate for 127.0.0.1/localhost, made with the `openssl` CLI
(no Python crypto dependency). EC P-256 keys: quick to generate, accepted by Python's ssl module,
librdkafka and Java's PEM truststore."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Pki:
    ca: Path      # CA certificate (PEM): clients trust this
    cert: Path    # server certificate (PEM), SAN IP:127.0.0.1, DNS:localhost
    key: Path     # server private key (PEM, unencrypted)
    client_cert: Path  # client certificate (PEM, CN=kshim-test-client), for mutual TLS
    client_key: Path


def _openssl(*args: str, cwd: Path) -> None:
    proc = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(args)} failed:\n{proc.stderr}")


def make_pki(directory: Path, days: int = 2) -> Pki:
    if shutil.which("openssl") is None:
        raise RuntimeError("the openssl CLI is needed to make test certificates (apt-get install openssl)")
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    _openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", str(days),
             "-subj", "/CN=kshim test CA", "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=d)
    for name, cn, ext in (("server", "127.0.0.1", "extendedKeyUsage=serverAuth\n"
                                                  "subjectAltName=IP:127.0.0.1,DNS:localhost\n"),
                          ("client", "kshim-test-client", "extendedKeyUsage=clientAuth\n")):
        _openssl("req", *ec, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={cn}", cwd=d)
        (d / f"{name}.ext").write_text(
            "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n" + ext)
        _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                 "-out", f"{name}.pem", "-days", str(days), "-extfile", f"{name}.ext", cwd=d)
    return Pki(ca=d / "ca.pem", cert=d / "server.pem", key=d / "server.key",
               client_cert=d / "client.pem", client_key=d / "client.key")
