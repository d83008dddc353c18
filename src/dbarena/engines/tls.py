"""Certificates for TLS between a `fleet run --together` server and its load generators.

A server that other hosts drive gets a fresh self-signed certificate and key at each
start, made on its own host by `openssl req -x509` run as the server's OS user, so that
the key is that user's from its first byte, mode 0600 in a directory only that user
reaches, and never leaves the host (nor any log: openssl prints nothing of it). The
certificate is public: the load generators verify the server against it (model.Tls).

Each load generator of a MySQL-family server makes a client certificate and key of its
own the same way (sysbench 1.0's MySQL driver presents one whenever it uses TLS, and
the server refuses one it cannot verify): the key stays on that host, the certificate
goes to the server, which trusts those certificates only (its ssl-ca).

No openssl on the host is not an error: TlsUnavailable says why, and the caller goes
on without TLS and says so.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Sequence

from dbarena import execute
from dbarena.interfaces import Executor

# Long enough for any run (a certificate that expires mid-run fails every connection
# after it); the pair is made for one server's life, so its length protects nothing.
VALID_DAYS = 400
# P-256: a key made in milliseconds (RSA takes up to a second), which every TLS library
# that the engines and tools link (OpenSSL, WolfSSL, Python's ssl) accepts.
_KEY = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"]


class TlsUnavailable(Exception):
    """Why a server or client here cannot have TLS (its message is one line)."""


def openssl() -> str:
    found = shutil.which("openssl")
    if found is None:
        raise TlsUnavailable("no openssl command on this host to make a certificate (Debian: apt-get install openssl)")
    return found


def make_pair(cert: Path, key: Path, common_name: str, *, user: str | None = None,
              executor: Executor = execute.LOCAL) -> None:
    """A self-signed certificate and its key, made by `user` (None: this process's
    user) into files that user can write: the key mode 0600. Its directory must be
    reachable by that user only, since openssl writes the key before it is chmodded."""
    done = executor.run([openssl(), "req", "-x509", *_KEY, "-nodes", "-sha256", "-days", str(VALID_DAYS),
                         "-subj", f"/CN={common_name}", "-keyout", str(key), "-out", str(cert)],
                        user=user, timeout=60)
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["no error output"])[-1]
        raise TlsUnavailable(f"openssl could not make a certificate: {tail}")
    os.chmod(key, 0o600)  # (OpenSSL 3 makes it so already; older ones follow the umask)


def certificates(pems: Sequence[str]) -> str:
    """PEM certificates as one file's text (a server's trusted client certificates),
    each checked to be one certificate and nothing else (a key sent by mistake would
    otherwise land in a file the server reads)."""
    out = []
    for pem in pems:
        text = pem.strip()
        if not (text.startswith("-----BEGIN CERTIFICATE-----") and text.endswith("-----END CERTIFICATE-----")
                and text.count("-----BEGIN") == 1):
            raise ValueError("a client certificate is not one PEM certificate")
        out.append(text + "\n")
    return "".join(out)


def read_certificate(path: Path) -> str:
    """A certificate file's text, checked as certificates() checks one."""
    text = path.read_text()
    certificates([text])
    return text
