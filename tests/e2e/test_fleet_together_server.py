"""`dbarena fleet run --together` without --target: a third host in [server] (gamma,
127.0.0.4) runs the throwaway server (PostgreSQL or MariaDB). Who it lets in is checked
while the run goes on, over TLS only (a plain connection with the right password is
refused, the load generators' are encrypted and verify the server's certificate, made
on its host for the run, whose key goes nowhere else), and with the controller
SIGKILLed it stops itself by its lease, or at once by `fleet cleanup`. A server
listening for other hosts is also checked on its own: its user is no superuser, and the
workloads still run through it; without openssl it goes on unencrypted and says why.

Every "host" is this machine, where other tests (another pytest worker's) start servers
of their own at the same time: the hosts' servers are those whose data directories are
in the hosts' TMPDIRs (tests/sshd.py, Fleet.scratch), and only those are checked."""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import re
import secrets
import shutil
import socket
import sqlite3
import ssl
import stat
import struct
import subprocess
import sys
from pathlib import Path

import pymysql
import pytest

from conftest import cli_env, dbarena, processes_mentioning
from sshd import ansible_env, inventory, missing, sshd
from test_fleet_together import STUDY, SYSBENCH_STUDY, VARIANTS_STUDY, _points
from test_kill import _within

pytestmark = [pytest.mark.e2e, pytest.mark.fleet, pytest.mark.timeout(900)]


def _postmasters(under: Path | None = None) -> set[int]:
    """The throwaway PostgreSQL servers running now (their data directories are dbarena-pg-*);
    with under, those whose data directories are in it (a fleet's hosts' TMPDIRs)."""
    found = set()
    for line in processes_mentioning("dbarena-pg-"):
        pid, command = line.split(":", 1)
        if "postgres" in command and " -D " in command:
            with contextlib.suppress(OSError, ValueError):  # (one that ended meanwhile)
                if under is None or under in _data_dir(int(pid)).parents:
                    found.add(int(pid))
    return found


def _data_dir(pid: int) -> Path:
    argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    return Path(argv[argv.index(b"-D") + 1].decode())


def _wait_ready(status_path: Path, run: subprocess.Popen) -> dict:
    """The [server] host's status once its server is ready (the run still going)."""
    def ready() -> bool:
        with contextlib.suppress(OSError, ValueError):
            return json.loads(status_path.read_text()).get("state") == "ready"
        return False
    assert _within(300, lambda: ready() or run.poll() is not None), "the server was not ready within 300 s"
    assert run.poll() is None, run.communicate()
    return json.loads(status_path.read_text())


def _server_access(engine: str, status: dict, scratch: Path) -> None:
    """While the run goes on: who the server on gamma (127.0.0.4) lets in. The inventory
    gives alpha dbarena_server_address=127.0.0.1 (on one machine its connections come
    from there) and beta none (its ansible_host, 127.0.0.3): those two addresses, and
    neither gamma's nor alpha's ssh address nor a stranger's."""
    port = int(status["url"].rsplit(":", 1)[1].split("/")[0])
    assert status["clients"] == {"alpha": ["127.0.0.1"], "beta": ["127.0.0.3"]}, status
    if engine == "postgres":
        from dbarena.engines.postgres import REMOTE_ADMIN

        # gamma's server: the postmaster of the hosts' TMPDIRs on that port.
        (data,) = [d for d in map(_data_dir, _postmasters(scratch))
                   if (d / "postmaster.pid").read_text().splitlines()[3].strip() == str(port)]
        rules = [line.split() for line in (data / "pg_hba.conf").read_text().splitlines()
                 if line.strip() and not line.startswith("#")]
        assert rules == [["local", "all", REMOTE_ADMIN, "scram-sha-256"],
                         ["host", "all", REMOTE_ADMIN, "127.0.0.1/32", "scram-sha-256"],
                         ["hostssl", "dbarena", "dbarena", "127.0.0.1/32", "scram-sha-256"],
                         ["hostssl", "dbarena", "dbarena", "127.0.0.3/32", "scram-sha-256"]], rules
        answers = {source: _pg_answer("127.0.0.4", port, source, tls=True)
                   for source in ("127.0.0.1", "127.0.0.3", "127.0.0.2", "127.0.0.7")}
        assert answers["127.0.0.1"] == answers["127.0.0.3"] == "password", answers
        assert all(answers[s].startswith(f'no pg_hba.conf entry for host "{s}"') for s in ("127.0.0.2", "127.0.0.7")), \
            answers
        # Without TLS, not even the load generators' addresses get as far as a password.
        for source in ("127.0.0.1", "127.0.0.3"):
            assert _pg_answer("127.0.0.4", port, source) == \
                f'no pg_hba.conf entry for host "{source}", user "dbarena", database "dbarena", no encryption'
    else:
        answers = {source: _mysql_answer("127.0.0.4", port, source)
                   for source in ("127.0.0.1", "127.0.0.3", "127.0.0.2", "127.0.0.7")}
        # 1045: an account for that host (the password was wrong); 1130: no account for it.
        assert answers == {"127.0.0.1": 1045, "127.0.0.3": 1045, "127.0.0.2": 1130, "127.0.0.7": 1130}, answers


def _server_key(engine: str, port: int, scratch: Path) -> Path:
    """The key of the server listening on `port` (made on its host for this run; its
    directory is in the hosts' TMPDIRs)."""
    if engine == "postgres":
        (data,) = [d for d in map(_data_dir, _postmasters(scratch))
                   if (d / "postmaster.pid").read_text().splitlines()[3].strip() == str(port)]
        return data / "server.key"
    tops = {Path(arg.split("=", 1)[1]).parent for line in processes_mentioning(str(scratch))
            for arg in line.split() if arg.startswith("--defaults-file=") and "dbarena-mysql-" in arg}
    (top,) = [t for t in tops if f"port = {port}\n" in (t / "my.cnf").read_text()]
    return top / "tls" / "server.key"


def _tool_password(engine: str, workdirs: dict) -> str | None:
    """The server's password as a load generator's running tool holds it (the test is
    root, who may read what the host's user can): pgbench's environment, sysbench's
    private option file. Found by the tool's working directory, the host's point folder."""
    for name in ("alpha", "beta"):
        folder = str(workdirs[name] / "point")
        for pid in filter(str.isdigit, os.listdir("/proc")):
            with contextlib.suppress(OSError):
                if os.readlink(f"/proc/{pid}/cwd") != folder:
                    continue
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
                if engine == "postgres" and argv[0].endswith("pgbench"):
                    for item in Path(f"/proc/{pid}/environ").read_bytes().decode().split("\0"):
                        if item.startswith("PGPASSWORD="):
                            return item.split("=", 1)[1]
                if engine == "mariadb" and argv[0].endswith("sysbench"):
                    for arg in argv:
                        if arg.startswith("--config-file="):
                            return Path(arg.split("=", 1)[1]).read_text().split("mysql-password=", 1)[1].strip()
    return None


def _server_tls(engine: str, status: dict, workdirs: dict, tmp: Path) -> None:
    """While a point runs: with the right password (its load generators'), a plain
    connection from a load generator's address is refused and one over TLS, verifying
    the server's certificate, is let in; the load generators' own connections are TLS."""
    port = int(status["url"].rsplit(":", 1)[1].split("/")[0])
    ca = tmp / "server-cert.pem"
    ca.write_text(status["tls_cert"])
    seen = {"password": ""}

    def running() -> bool:
        seen["password"] = _tool_password(engine, workdirs) or ""
        return bool(seen["password"])

    assert _within(300, running), "no load generator's tool was seen running"
    password = seen["password"]
    if engine == "postgres":
        import psycopg

        where = dict(host="127.0.0.4", port=port, user="dbarena", dbname="dbarena", password=password,
                     connect_timeout=10)
        with pytest.raises(psycopg.OperationalError, match="no pg_hba.conf entry .* no encryption"):
            psycopg.connect(**where, sslmode="disable").close()
        with psycopg.connect(**where, sslmode="verify-ca", sslrootcert=str(ca)) as conn:
            # Every other session of dbarena's user (the load generators' pgbench
            # clients; dbarena is in pg_monitor, which sees them all) is encrypted.
            rows = conn.execute("SELECT s.ssl, s.version, host(a.client_addr) FROM pg_stat_ssl s JOIN "
                                "pg_stat_activity a USING (pid) WHERE a.usename = 'dbarena' "
                                "AND a.backend_type = 'client backend' AND a.pid <> pg_backend_pid()").fetchall()
        print(f"the load generators' sessions during the point: {rows}")
        assert rows and all(encrypted for encrypted, _, _ in rows), rows
        assert {address for _, _, address in rows} <= {"127.0.0.1", "127.0.0.3"}, rows
    else:
        where = dict(host="127.0.0.4", port=port, user="dbarena", password=password, database="dbarena",
                     connect_timeout=10)
        with pytest.raises(pymysql.err.OperationalError) as refused:
            pymysql.connect(**where, ssl_disabled=True).close()
        assert refused.value.args[0] == 1045, refused.value  # REQUIRE SSL: access denied, password or not
        with contextlib.closing(pymysql.connect(**where, ssl_ca=str(ca), ssl_verify_cert=True,
                                                ssl_verify_identity=False)) as db, db.cursor() as cur:
            cur.execute("SHOW SESSION STATUS LIKE 'Ssl_cipher'")
            assert cur.fetchone()[1], "not encrypted"
            # The account every load generator uses (one per address) lets in nothing else;
            # its one global privilege is RELOAD (the FLUSH TABLES after a warm-up).
            cur.execute("SHOW GRANTS")
            (usage,) = [g for (g,) in cur.fetchall() if " ON *.* " in g]
            assert usage.startswith("GRANT RELOAD ON *.* TO "), usage
            assert usage.endswith(" REQUIRE SSL"), "the account does not require TLS"


def _keys_stay(keys: dict[Path, str], tmp: Path, texts: list[str], store: Path) -> None:
    """Each private key (made on its host for the run: the server's, each load
    generator's client key) is where it was made and nowhere else: not in the run's
    output, its store, or any other file under the test's directory (the hosts' working
    directories, the controller's Ansible files)."""
    for where, key in keys.items():
        body = "".join(key.strip().splitlines()[1:-1])
        assert body and "PRIVATE KEY" in key
        for text in texts:
            assert body not in "".join(text.split()), f"the key of {where} was printed"
        assert body.encode() not in store.read_bytes()
        for folder, dirs, files in os.walk(tmp):
            dirs[:] = [d for d in dirs if d != "venv"]  # dbarena and its dependencies, installed
            for name in files:
                path = Path(folder) / name
                if path.is_symlink() or path == where:
                    continue
                with contextlib.suppress(OSError):
                    assert body.encode() not in b"".join(path.read_bytes().split()), f"the key of {where} is in {path}"


def _server_inventory(tmp: Path, hosts) -> tuple[Path, dict[str, Path]]:
    """alpha and beta in [fleet], gamma in [server], each host's work directory under
    tmp/hosts (the inventory's dbarena_workdir_base), alpha reaching the server from
    127.0.0.1: the inventory, and the hosts' work directories by name."""
    base = tmp / "hosts"
    workdirs = {h.name: base / h.name for h in hosts}
    extra: dict[str, dict[str, object]] = {h.name: {"dbarena_workdir_base": str(base)} for h in hosts}
    extra["alpha"]["dbarena_server_address"] = "127.0.0.1"
    drivers = [h for h in hosts.hosts if h.name != "gamma"]
    (server,) = [h for h in hosts.hosts if h.name == "gamma"]
    inv = tmp / "hosts.ini"
    inv.write_text(inventory(drivers, hosts.key, tmp / "fleet.ini", workdirs=workdirs, extra_vars=extra).read_text()
                   + inventory([server], hosts.key, tmp / "server.ini", workdirs=workdirs, extra_vars=extra,
                               group="server").read_text())
    return inv, workdirs


@pytest.mark.parametrize("engine", ["postgres", "mariadb"])
def test_a_throwaway_server_on_the_inventorys_server_host(engine, tmp_path_factory):
    """No --target: the one host of the inventory's [server] group (gamma, 127.0.0.4) runs
    a throwaway PostgreSQL (pgbench) or MariaDB (sysbench) listening on its address, open
    to the two load generators' addresses only and over TLS only (checked while the run
    goes on: a plain connection with the right password is refused, the load generators'
    are encrypted), the two drive it over the network, and the server is stopped and
    removed at the end; its password was made by the controller and is nowhere to be
    read, its certificate's key (made on gamma) and the load generators' client keys are
    nowhere but where they were made, and the run records its connections' TLS."""
    if missing():
        pytest.fail(missing())
    tmp = tmp_path_factory.mktemp("server")
    tmp.chmod(0o755)
    with sshd(("127.0.0.2", "127.0.0.3", "127.0.0.4"), tmp) as hosts:
        inv, workdirs = _server_inventory(tmp, hosts)
        study = tmp / "server.toml"
        # Points of 8 s: long enough to find a load generator's tool running and look at
        # the server's sessions while it does.
        # Offered 50 transactions a second (pgbench -R, sysbench --rate): what is looked at
        # is where things run and what they see, not how fast.
        study.write_text((STUDY.format(name="server", levels=[4], duration=8, sampling=1.0) if engine == "postgres"
                          else SYSBENCH_STUDY.format(name="server").replace("duration_s = 4", "duration_s = 8"))
                         + "[workloads.options]\nrate = 50\n")
        store = tmp / "server.db"
        env = ansible_env(tmp)
        run = subprocess.Popen([sys.executable, "-m", "dbarena", "fleet", "run", "-i", str(inv), "--study",
                                str(study), "--together", "--store", str(store)], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
        try:
            status = _wait_ready(workdirs["gamma"] / "server" / "status.json", run)
            _server_access(engine, status, hosts.scratch)
            port = int(status["url"].rsplit(":", 1)[1].split("/")[0])
            key = _server_key(engine, port, hosts.scratch)
            owner = "postgres" if engine == "postgres" else "mysql"
            assert key.stat().st_uid == pwd.getpwnam(owner).pw_uid and stat.S_IMODE(key.stat().st_mode) == 0o600
            keys = {key: key.read_text()}
            if engine == "mariadb":
                for name in ("alpha", "beta"):
                    client_key = workdirs[name] / "tls" / "client-key.pem"
                    assert stat.S_IMODE(client_key.stat().st_mode) == 0o600
                    keys[client_key] = client_key.read_text()
            _server_tls(engine, status, workdirs, tmp)
            out, err = run.communicate(timeout=600)
        finally:
            run.kill()
        print(out)
        assert run.returncode == 0, out + err
        assert "starting the server on gamma (127.0.0.4)" in out
        assert "open to alpha (127.0.0.1), beta (127.0.0.3)" in out, out
        assert "connections to the server: TLS required, its certificate (made on gamma for this run) verified by " \
               "each load generator" in out, out
        assert "server on gamma: stopped and removed" in out
        (point,) = _points(store)
        assert point["status"] == "ok" and point["run_host"] == "2 load generators: alpha, beta"
        assert [x["host"] for x in point["details"]["together"]["parts"]] == ["alpha", "beta"]
        assert point["transactions"] == sum(x["transactions"] for x in point["details"]["together"]["parts"]) > 0
        # The study's 50 TPS offered by the two load generators together: 25 each (as
        # their tools' own options say), not 50 each.
        share = ["-R", "25.0"] if engine == "postgres" else ["--rate=25"]
        for part in point["details"]["together"]["parts"]:
            command = part["command"]
            assert any(command[i:i + len(share)] == share for i in range(len(command))), command
        assert point["tps"] < 60, point["tps"]
        db = sqlite3.connect(store)
        target, facts = db.execute("SELECT target, target_facts FROM runs").fetchone()
        scheme = "postgresql" if engine == "postgres" else "mysql"
        assert target.startswith(f"{scheme}://dbarena@127.0.0.4:"), target
        # The server's machine, known from its host: its cores in the run, its identity in the key.
        assert json.loads(facts).get("server_hardware_threads") == os.cpu_count()
        # The connections were TLS: required, and what the server saw of the first load
        # generator's (its provenance queries).
        tls = json.loads(facts)["tls"]
        assert tls["required"] is True and tls["ssl"] is True, tls
        assert tls["version"].startswith("TLSv1.") and tls["cipher"], tls
        _keys_stay(keys, tmp, [out, err], store)
        config = json.loads(db.execute("SELECT config FROM points").fetchone()[0])
        assert "cpu_model" in config["host"] and "target" not in config["host"]
        # Encrypted connections are another configuration than plain ones: in the key.
        assert config["tls"] == f"{tls['version']} {tls['cipher']}", config
        # The password the controller made is in no output, no store and no file left on a host.
        status = json.loads((workdirs["gamma"] / "server" / "status.json").read_text())
        assert status["state"] == "stopped"
        for path in (tmp / "hosts").rglob("*"):
            if path.is_file() and path.name == "secrets.json":
                raise AssertionError(f"{path} left behind")
    # No server of the hosts' left (other tests' may run meanwhile: not theirs).
    assert _within(20, lambda: not processes_mentioning(str(hosts.scratch))), processes_mentioning(str(hosts.scratch))
    assert _within(20, lambda: not processes_mentioning(str(tmp))), processes_mentioning(str(tmp))


PROFILING = shutil.which("perf") is not None and os.geteuid() == 0  # (perf samples every CPU: root)


def test_variants_with_a_warm_up_on_a_server_host_each_measured_part_profiled(tmp_path_factory):
    """Two variants and a warm-up with the inventory's [server] host (gamma): each
    variant's server started there with its settings, one after the other; each point
    warmed up (stored apart), then checkpointed by the first load generator as
    dbarena's user there (pg_checkpoint: no superuser) and measured by both hosts; one
    run per variant, and no server left.

    With --profile (where perf runs, as root: it samples every CPU), gamma's perf samples
    each variant's PostgreSQL around its point's measured part, and the point is stored
    with a profile as a one-host run's: PostgreSQL's own functions by name among its
    top, every sample the server's (most of them its backends, forked for the load
    generators after perf started), perf's version in its symbols and in the runs'
    options; no perf left running. (One run for both: each `fleet run` with a [server]
    host costs an install check, a server and a prepare, most of two minutes under
    `make test`.)"""
    from dbarena.stats import profiles
    from dbarena.store.database import Store
    from test_profile_run import _exported_functions

    if missing():
        pytest.fail(missing())
    tmp = tmp_path_factory.mktemp("server-variants")
    tmp.chmod(0o755)
    with sshd(("127.0.0.2", "127.0.0.3", "127.0.0.4"), tmp) as hosts:
        inv, workdirs = _server_inventory(tmp, hosts)
        study = tmp / "variants.toml"
        # Points of 4 s: enough of perf's samples at 99 Hz for the top to be the server's.
        study.write_text(VARIANTS_STUDY.format(name="server-variants", levels=[2], duration=4, sampling=0.1)
                         + 'postgres = { work_mem = "8MB" }\n')
        store = tmp / "variants.db"
        env = ansible_env(tmp)
        done = subprocess.run([sys.executable, "-m", "dbarena", "fleet", "run", "-i", str(inv), "--study", str(study),
                               "--together", "--store", str(store),
                               *(("--", "--profile") if PROFILING else ())], env=env,
                              capture_output=True, text=True, timeout=800, stdin=subprocess.DEVNULL)
        print(done.stdout)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "2 point(s) with 2 load generators; stored in" in done.stdout, done.stdout
        assert done.stdout.count("starting the server on gamma") == 2, done.stdout
        assert done.stdout.count("server on gamma: stopped and removed") == 2, done.stdout
        assert done.stdout.count("warming up pgbench-select-only at 2 threads for 1 s") == 2, done.stdout
        points = _points(store)
        assert [(p["variant"], p["status"]) for p in points] == [("first", "ok"), ("second", "ok")], points
        db = sqlite3.connect(store)
        runs = {run_id: (variant, json.loads(options)["settings"])
                for run_id, variant, options in db.execute("SELECT id, variant, options FROM runs")}
        warmups = db.execute("SELECT run_id, duration_s, status FROM points WHERE phase = 'warmup' ORDER BY id"
                             ).fetchall()
        db.close()
        assert sorted(runs.values()) == [("first", {}), ("second", {"work_mem": "8MB"})]
        assert [(runs[r][0], d, s) for r, d, s in warmups] == [("first", 1, "ok"), ("second", 1, "ok")]
        assert all(runs[p["run_id"]][0] == p["variant"] for p in points)
        for p in points:
            assert p["transactions"] == sum(x["transactions"] for x in p["details"]["together"]["parts"]) > 0

        if PROFILING:
            assert "no on-CPU profile" not in done.stdout, done.stdout
            shown = subprocess.run([sys.executable, "-m", "dbarena", "results", "--json", "--store", str(store)],
                                   env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
            assert shown.returncode == 0, shown.stderr
            measured = json.loads(shown.stdout)
            assert len(measured) == 2, measured
            for point in measured:
                profile = point["profile"]
                assert point["status"] == "ok" and profile["frequency_hz"] == 99.0 and profile["samples"] > 50, \
                    profile
                binary = re.match(r"perf version [\d.]+\S*; (/\S+): ", profile["symbols"])
                assert binary is not None, profile["symbols"]
                names = [entry["function"] for entry in profile["top"]]
                own = [n for n in names if n in _exported_functions(binary[1])]
                assert len(own) >= 3, (own, names)
                with Store(store, readonly=True) as analysed:
                    stacks = profiles.parse_folded(
                        analysed.profiles([point["point_id"]], folded=True)[point["point_id"]].folded or "")
                assert all(stack.split(";")[0] == "postgres" for stack in stacks), list(stacks)[:5]
                backends = sum(count for stack, count in stacks.items() if ";PostgresMain;" in f";{stack};")
                assert backends > profiles.samples(stacks) / 2, (backends, profiles.samples(stacks))
            with Store(store, readonly=True) as analysed:
                ran = analysed.runs()
            assert len(ran) == 2
            for run in ran:
                facts = run.options["profile"]
                assert facts["frequency_hz"] == 99 and facts["problem"] is None and \
                    facts["perf"].startswith("perf version")
            assert not (workdirs["gamma"] / "profile" / "perf.data").exists()
    # (What it started is under its own scratch and tmp: the other worker's servers are not its.)
    assert _within(20, lambda: not processes_mentioning(str(hosts.scratch))), processes_mentioning(str(hosts.scratch))
    assert _within(20, lambda: not processes_mentioning(str(tmp))), processes_mentioning(str(tmp))


@pytest.mark.parametrize("flavour", ["postgres", "mariadb"])
def test_a_server_for_other_hosts_without_openssl_goes_on_unencrypted_and_says_why(flavour, monkeypatch):
    """A host without the openssl command cannot make the server's certificate: the
    server starts all the same, without TLS, its target saying why (the controller says
    it and records it in the run), and lets its clients in without TLS; the run's
    measurements go on rather than fail."""
    from dbarena import execute
    from dbarena.engines import postgres, tls
    from dbarena.engines.mariadb import MariaDB

    def no_openssl() -> str:
        raise tls.TlsUnavailable("no openssl command on this host to make a certificate (Debian: apt-get install "
                                 "openssl)")

    monkeypatch.setattr(tls, "openssl", no_openssl)
    password = secrets.token_urlsafe(16)
    if flavour == "postgres":
        server = postgres.throwaway(listen="127.0.0.6", password=password, clients=["127.0.0.1"], tls=True)
    else:
        server = MariaDB().throwaway(settings={}, max_connections=151, bindir=None, keep=False,
                                     executor=execute.LOCAL, listen="127.0.0.6", password=password,
                                     clients=["127.0.0.1"], tls=True, tls_client_certs=())
    with server as target:
        assert target.tls_cert is None
        assert target.tls_problem.startswith("no openssl command on this host"), target.tls_problem
        if flavour == "postgres":
            import psycopg

            assert "hostssl" not in (target.data_dir / "pg_hba.conf").read_text()
            with psycopg.connect(host="127.0.0.6", port=target.conn.port, user="dbarena", dbname="dbarena",
                                 password=password, sslmode="disable", connect_timeout=10) as conn:
                assert conn.execute("SHOW ssl").fetchone() == ("off",)
        else:
            with contextlib.closing(pymysql.connect(host="127.0.0.6", port=target.conn.port, user="dbarena",
                                                    password=password, database="dbarena", ssl_disabled=True,
                                                    connect_timeout=10)) as db, db.cursor() as cur:
                cur.execute("SHOW SESSION STATUS LIKE 'Ssl_cipher'")
                assert cur.fetchone()[1] == ""


# ---------------------------------------------------------------- who a server for other hosts lets in
#
# On one machine a connection to any loopback address comes from 127.0.0.1 unless its
# socket is bound: the tools (and so the load generators of the fleet tests) connect from
# 127.0.0.1, and a probe bound to another loopback address is what "another host" is here.


def _pg_answer(host: str, port: int, source: str, user: str = "dbarena", database: str = "dbarena",
               tls: bool = False) -> str:
    """What PostgreSQL answers a startup message from `source` (no password needed to
    tell), sent in the clear or (`tls`) over TLS: "password" when pg_hba lets the
    connection on to authentication, else the server's error message."""
    with socket.create_connection((host, port), timeout=10, source_address=(source, 0)) as raw:
        sock: socket.socket = raw
        if tls:
            raw.sendall(struct.pack("!II", 8, 80877103))  # SSLRequest
            assert raw.recv(1) == b"S", "the server offers no TLS"
            context = ssl.create_default_context()
            context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
            sock = context.wrap_socket(raw)
        body = struct.pack("!I", 3 << 16) + f"user\0{user}\0database\0{database}\0\0".encode()
        sock.sendall(struct.pack("!I", len(body) + 4) + body)
        reply = b""
        while len(reply) < 5 or len(reply) < 1 + struct.unpack("!I", reply[1:5])[0]:
            chunk = sock.recv(4096)
            if not chunk:
                break
            reply += chunk
    if reply[:1] == b"R":
        return "password"
    fields = dict((f[:1], f[1:].decode()) for f in reply[5:].split(b"\0") if f)
    return fields.get(b"M", repr(reply[:80]))


def _mysql_answer(host: str, port: int, source: str) -> int:
    """MariaDB's error code for dbarena's user from `source` with a wrong password: 1045
    (access denied: an account for that host exists) or 1130 (no account for it)."""
    try:
        pymysql.connect(host=host, port=port, user="dbarena", password="not-the-password", bind_address=source,
                        connect_timeout=10).close()
    except pymysql.err.OperationalError as exc:
        return int(exc.args[0])
    raise AssertionError("a wrong password was taken")


POSTGRES_WORKLOADS = ["--workload", "pgbench-select-only,pgbench-tpcb", "--scale", "1"]
MARIADB_WORKLOADS = ["--workload", "sysbench-read-write,mysqlslap", "--tables", "1", "--table-size", "500",
                     "--number-of-queries", "500"]


@pytest.mark.parametrize("flavour", ["postgres", "mariadb"])
def test_a_server_for_other_hosts_lets_in_its_clients_only_as_no_superuser(flavour, public_tmp, tmp_path):
    """A throwaway server listening for other hosts (as a together server does, on
    127.0.0.6 here) takes dbarena's user from the addresses it is given only (127.0.0.1
    and 127.0.0.5), not from 127.0.0.7; that user is no superuser, and every workload of
    the engine still prepares and runs through it (`dbarena run --target`, as each load
    generator runs them)."""
    from dbarena import execute
    from dbarena.engines import postgres
    from dbarena.engines.mariadb import MariaDB

    password = secrets.token_urlsafe(16)
    clients = ["127.0.0.1", "127.0.0.5"]
    store = tmp_path / "r.db"
    if flavour == "postgres":
        server = postgres.throwaway(listen="127.0.0.6", password=password, clients=clients)
    else:
        server = MariaDB().throwaway(settings={}, max_connections=151, bindir=None, keep=False,
                                     executor=execute.LOCAL, listen="127.0.0.6", password=password, clients=clients)
    with server as target:
        port = target.conn.port
        if flavour == "postgres":
            rules = [line.split() for line in (target.data_dir / "pg_hba.conf").read_text().splitlines()
                     if line.strip() and not line.startswith("#")]
            assert [r for r in rules if r[2] == "dbarena"] == [
                ["host", "dbarena", "dbarena", "127.0.0.1/32", "scram-sha-256"],
                ["host", "dbarena", "dbarena", "127.0.0.5/32", "scram-sha-256"]], rules
            assert {r[2] for r in rules} == {"dbarena", postgres.REMOTE_ADMIN}
            assert _pg_answer("127.0.0.6", port, "127.0.0.5") == "password"
            assert _pg_answer("127.0.0.6", port, "127.0.0.1") == "password"
            refused = _pg_answer("127.0.0.6", port, "127.0.0.7")
            assert refused.startswith('no pg_hba.conf entry for host "127.0.0.7", user "dbarena"'), refused
            # Its own database only; and the administrator from this host only.
            assert _pg_answer("127.0.0.6", port, "127.0.0.5", database="postgres").startswith("no pg_hba.conf")
            assert _pg_answer("127.0.0.6", port, "127.0.0.5", user=postgres.REMOTE_ADMIN).startswith("no pg_hba")
            import psycopg

            with psycopg.connect(host="127.0.0.6", port=port, user="dbarena", dbname="dbarena", password=password,
                                 connect_timeout=10, autocommit=True) as conn:
                assert conn.execute("SELECT rolsuper, rolcreatedb, rolcreaterole FROM pg_roles "
                                    "WHERE rolname = current_user").fetchone() == (False, False, False)
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    conn.execute("ALTER SYSTEM SET work_mem = '1GB'")
                # The checkpoint after a warm-up: pg_checkpoint's, from PostgreSQL 15.
                if conn.info.server_version >= postgres.CHECKPOINT_ROLE_SINCE:
                    conn.execute("CHECKPOINT")
                else:
                    with pytest.raises(psycopg.errors.InsufficientPrivilege):
                        conn.execute("CHECKPOINT")
            url, workloads, env = (f"postgresql://dbarena@127.0.0.6:{port}/dbarena", POSTGRES_WORKLOADS,
                                   cli_env(public_tmp, PGPASSWORD=password))
        else:
            assert {source: _mysql_answer("127.0.0.6", port, source)
                    for source in ("127.0.0.1", "127.0.0.5", "127.0.0.7")} == \
                {"127.0.0.1": 1045, "127.0.0.5": 1045, "127.0.0.7": 1130}
            with contextlib.closing(pymysql.connect(host="127.0.0.6", port=port, user="dbarena", password=password,
                                                    database="dbarena", connect_timeout=10)) as db, \
                    db.cursor() as cur:
                cur.execute("SELECT PRIVILEGE_TYPE FROM information_schema.USER_PRIVILEGES")
                # One global privilege: RELOAD, for the FLUSH TABLES after a warm-up.
                assert {p for (p,) in cur.fetchall()} == {"RELOAD"}
                cur.execute("FLUSH TABLES")
                with pytest.raises(pymysql.err.OperationalError, match="Access denied"):
                    cur.execute("CREATE DATABASE elsewhere")
            url, workloads, env = (f"mysql://dbarena@127.0.0.6:{port}/dbarena", MARIADB_WORKLOADS,
                                   cli_env(public_tmp, MYSQL_PWD=password))
        done = dbarena("run", "--target", url, *workloads, "--threads", "2", "--duration", "2",
                       "--store", str(store), env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    db = sqlite3.connect(store)
    points = db.execute("SELECT workload, status, error FROM points WHERE phase = 'measured' ORDER BY id").fetchall()
    assert [(w, s) for w, s, _ in points] == [(w, "ok") for w in workloads[1].split(",")], points
