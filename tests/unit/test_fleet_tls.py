"""TLS between a `fleet run --together` server and its load generators, piece by piece:
the certificates (engines/tls.py, made by the real openssl), the server's pg_hba
(hostssl), what each client is given to require TLS and verify the server (libpq's
parameters and environment, PyMySQL's options, sysbench's and mysqlslap's arguments,
sysbench 1.0's files), and the load generator's TLS folder (fleet/loadgen.py). The
servers themselves, TLS refused plain and measured points: tests/e2e/test_fleet_together_server.py."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

from dbarena.engines import tls
from dbarena.engines.mysql_target import tls_options as mysql_tls_options
from dbarena.engines.postgres import REMOTE_ADMIN, remote_hba
from dbarena.engines.postgres_target import PgTarget, connection_from_url, tls_options as pg_tls_options
from dbarena.fleet import loadgen
from dbarena.interfaces import Client
from dbarena.model import Connection, PointSpec, Tls
from dbarena.workloads import WORKLOADS, mysqlslap, sysbench

TLS = Tls(ca="/w/tls/cacert.pem", cert="/w/tls/client-cert.pem", key="/w/tls/client-key.pem")


def _pair(tmp_path: Path) -> tuple[Path, Path]:
    cert, key = tmp_path / "c.pem", tmp_path / "k.pem"
    tls.make_pair(cert, key, "test")
    return cert, key


def test_a_pair_is_a_self_signed_certificate_and_a_key_only_its_user_reads(tmp_path):
    cert, key = _pair(tmp_path)
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    text = tls.read_certificate(cert)
    assert "PRIVATE KEY" not in text
    subject = subprocess.run(["openssl", "x509", "-noout", "-subject", "-issuer", "-in", str(cert)],
                             capture_output=True, text=True, check=True).stdout.splitlines()
    assert subject == ["subject=CN = test", "issuer=CN = test"]
    # The key is the certificate's own.
    public = [subprocess.run(["openssl", *argv], capture_output=True, text=True, check=True).stdout
              for argv in (["x509", "-noout", "-pubkey", "-in", str(cert)], ["pkey", "-pubout", "-in", str(key)])]
    assert public[0] == public[1]


def test_no_openssl_on_the_host_is_said_not_raised_as_a_crash(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(tls.TlsUnavailable, match="no openssl command on this host"):
        tls.make_pair(tmp_path / "c.pem", tmp_path / "k.pem", "test")
    assert not (tmp_path / "k.pem").exists()


def test_trusted_client_certificates_are_certificates_and_nothing_else(tmp_path):
    cert, key = _pair(tmp_path)
    one = cert.read_text()
    assert tls.certificates([one, one]) == one.strip() + "\n" + one.strip() + "\n"
    for bad in (key.read_text(), one + key.read_text(), one + one, "", "not a certificate"):
        with pytest.raises(ValueError, match="not one PEM certificate"):
            tls.certificates([bad])


def test_pg_hba_over_tls_lets_the_load_generators_in_with_it_only():
    hba = remote_hba(["10.0.0.6", "10.0.0.5"], "scram-sha-256", ssl=True)
    rules = [line.split() for line in hba.splitlines() if line and not line.startswith("#")]
    # The administrator stays on this host (no TLS needed there); dbarena's user needs it.
    assert rules == [["local", "all", REMOTE_ADMIN, "scram-sha-256"],
                     ["host", "all", REMOTE_ADMIN, "127.0.0.1/32", "scram-sha-256"],
                     ["hostssl", "dbarena", "dbarena", "10.0.0.5/32", "scram-sha-256"],
                     ["hostssl", "dbarena", "dbarena", "10.0.0.6/32", "scram-sha-256"]]


def test_libpq_is_told_to_require_tls_and_verify_the_server_in_its_connection_and_environment():
    assert pg_tls_options(None) == {}
    assert pg_tls_options(TLS) == {"sslmode": "verify-ca", "sslrootcert": TLS.ca}
    url = "postgresql://dbarena@10.0.0.4:5432/dbarena"
    target = PgTarget(conn=connection_from_url(url, TLS), description=url, server_version="15", throwaway=False)
    env = target.client_env()
    # What pgbench and sysbench's pgsql driver read (neither has an option for it).
    assert env["PGSSLMODE"] == "verify-ca" and env["PGSSLROOTCERT"] == TLS.ca
    plain = PgTarget(conn=connection_from_url(url), description=url, server_version="15", throwaway=False)
    assert "PGSSLROOTCERT" not in plain.client_env()


def test_pymysql_is_told_to_require_tls_and_verify_the_server():
    assert mysql_tls_options(None) == {}
    assert mysql_tls_options(TLS) == {"ssl_ca": TLS.ca, "ssl_verify_cert": True, "ssl_verify_identity": False}


def _client(protocol: str, tls_: Tls | None) -> Client:
    conn = Connection(protocol=protocol, host="10.0.0.4", port=3306, user="dbarena", dbname="dbarena",
                      url=f"{protocol}://dbarena@10.0.0.4:3306/dbarena", tls=tls_)
    return Client(binary="/usr/bin/tool", conn=conn, secret_file="/private/tool.cnf")


def test_sysbench_asks_its_mysql_driver_for_tls_and_finds_its_files_by_their_fixed_names():
    spec = PointSpec(engine="mysql", workload="sysbench-read-only", threads=2, clients=2, duration_s=5, repeat=0,
                     params=(("table_size", 100), ("tables", 1)))
    workload = WORKLOADS["sysbench-read-only"]
    argv = workload.tool.point_argv(_client("mysql", TLS), spec, workload.mode_args)
    assert "--mysql-ssl=on" in argv
    assert "--mysql-ssl=on" in workload.tool.prepare_argv(_client("mysql", TLS), spec)[0]
    assert "--mysql-ssl=on" not in workload.tool.point_argv(_client("mysql", None), spec, workload.mode_args)
    # The pgsql driver's libpq reads the environment instead.
    assert not any("ssl" in a for a in sysbench.connection_args(_client("postgresql", TLS)))
    assert sysbench.mysql_tls_files(TLS) == {"cacert.pem": TLS.ca, "client-cert.pem": TLS.cert,
                                             "client-key.pem": TLS.key}
    with pytest.raises(ValueError, match="client certificate"):
        sysbench.mysql_tls_files(Tls(ca=TLS.ca))


def test_mysqlslap_verifies_the_server_against_its_certificate():
    spec = PointSpec(engine="mysql", workload="mysqlslap", threads=2, clients=2, duration_s=5, repeat=0,
                     params=(("iterations", 1), ("queries", 100)))
    workload = WORKLOADS["mysqlslap"]
    argv = workload.tool.point_argv(_client("mysql", TLS), spec, workload.mode_args)
    # The password file first (mysqlslap reads it only there), then TLS.
    assert argv[1:3] == ["--defaults-extra-file=/private/tool.cnf", f"--ssl-ca={TLS.ca}"]
    assert not any("ssl" in a for a in workload.tool.point_argv(_client("mysql", None), spec, workload.mode_args))
    assert mysqlslap.SCHEMA


def test_a_load_generators_tls_folder_holds_the_servers_certificate_and_its_own_pair(tmp_path):
    workdir = tmp_path / "w"
    workdir.mkdir()
    assert loadgen._tls(workdir, None) is None
    made = loadgen.client_tls(workdir)
    folder = workdir / loadgen.TLS
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert made["cert"] == (folder / loadgen.CLIENT_CERT).read_text() and "PRIVATE" not in json.dumps(made)
    server_cert, _ = _pair(tmp_path)
    found = loadgen._tls(workdir, {"ca": server_cert.read_text()})
    assert found == Tls(ca=str(folder / "cacert.pem"), cert=str(folder / "client-cert.pem"),
                        key=str(folder / "client-key.pem"))
    assert (folder / "cacert.pem").read_text() == server_cert.read_text()
    # A point's folder gets sysbench's three files, for a MySQL server only.
    point = tmp_path / "point"
    point.mkdir()
    loadgen._tls_links(point, found, "postgresql")
    assert list(point.iterdir()) == []
    loadgen._tls_links(point, found, "mysql")
    assert {p.name: os.readlink(p) for p in point.iterdir()} == sysbench.mysql_tls_files(found)
    # What the controller sends is a certificate: a key is refused, never written.
    with pytest.raises(ValueError):
        loadgen._tls(workdir, {"ca": (folder / loadgen.CLIENT_KEY).read_text()})
    assert (folder / "cacert.pem").read_text() == server_cert.read_text()


def test_a_load_generator_without_openssl_answers_why(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert loadgen.client_tls(tmp_path) == {
        "error": "no openssl command on this host to make a certificate (Debian: apt-get install openssl)"}
