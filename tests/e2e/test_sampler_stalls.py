"""The server sampler (serverside/sampler.py) against a target it cannot read: behind a
real TCP proxy that stops forwarding the sampler's connection, the point starts within
seconds, is measured, says why it has no server view, and leaves no connection behind
(neither at the proxy nor on the server); a role with a CONNECTION LIMIT, a database
with one and a MariaDB account with MAX_USER_CONNECTIONS, each as small as the point's
clients, give a measured point without its server view where the sampler's connection
would have failed it."""

from __future__ import annotations

import json
import socket
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime

import pytest

from conftest import LIGHT, cli_env, dbarena
# `results` only reads the store: run in this process (tests/inprocess.py), not as
# `python -m dbarena`, half a second of CPU each to start. The runs stay processes.
from inprocess import dbarena as dbarena_here
from dbarena.engines import postgres
from dbarena.serverside.sampler import CONNECT_WAIT_S, HANGUP_WAIT_S, STOP_WAIT_S

pytestmark = pytest.mark.e2e

MARKER = b"dbarena-sampler"  # the sampler's application_name, in its SET statement


@dataclass
class Link:
    opened_at: float
    sampler_at: float | None = None  # when the marker went by
    client_closed_at: float | None = None
    sent: int = 0  # the client's sends since the marker
    stalled: bool = False
    tail: bytes = b""
    ends: list[socket.socket] = field(default_factory=list)


class StallingProxy:
    """Forwards every connection to the server, except the sampler's: from its
    `answered`-th statement after the one that carries the marker (each statement is a
    send of its own: the driver waits for each answer), the proxy stops forwarding
    either way (it still takes what either side sends, and closes the server's side
    when the client closes its own, as a stalled proxy's TCP stacks would)."""

    def __init__(self, port: int, answered: int):
        self.upstream = port
        self.answered = answered
        self.links: list[Link] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.closing = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.closing:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.upstream))
            link = Link(opened_at=time.time(), ends=[client, server])
            self.links.append(link)
            threading.Thread(target=self._pump, args=(link, client, server, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(link, server, client, False), daemon=True).start()

    def _pump(self, link: Link, src: socket.socket, dst: socket.socket, from_client: bool) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if from_client and link.sampler_at is not None:
                    link.sent += 1
                    link.stalled = link.stalled or link.sent > self.answered
                if from_client and link.sampler_at is None and MARKER in link.tail + data:
                    link.sampler_at = time.time()
                    link.stalled = self.answered < 0
                if from_client:
                    link.tail = (link.tail + data)[-len(MARKER):]
                if link.stalled:
                    continue  # taken, never passed on
                dst.sendall(data)
        except OSError:
            pass
        if from_client:
            link.client_closed_at = time.time()
        for end in (src, dst):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def samplers(self) -> list[Link]:
        return [link for link in self.links if link.sampler_at is not None]

    def close(self) -> None:
        self.closing = True
        self.listener.close()
        for link in self.links:
            for end in link.ends:
                end.close()


@pytest.fixture(scope="module")
def server():
    with postgres.throwaway(settings={"max_connections": "40"}) as target:
        password = target.passfile.read_text().strip().rsplit(":", 1)[1]
        yield target, password


def _points(store) -> list[dict]:
    """The measured points; their times are stored to the whole second."""
    db = sqlite3.connect(store)
    rows = db.execute("SELECT p.status, p.error, p.tps, p.started_at, p.ended_at, s.record FROM points p"
                      " LEFT JOIN server_series s ON s.point_id = p.id WHERE p.phase = 'measured' ORDER BY p.id")
    return [{"status": status, "error": error, "tps": tps, "started": datetime.fromisoformat(started).timestamp(),
             "ended": datetime.fromisoformat(ended).timestamp(), "record": json.loads(record) if record else None}
            for status, error, tps, started, ended, record in rows.fetchall()]


def _other_backends(target, password) -> int:
    """Client backends on the server besides the one asking, once those ending have ended."""
    import psycopg

    deadline = time.monotonic() + 5
    with psycopg.connect(target.url, password=password, autocommit=True) as conn:
        while True:
            (n,) = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'"
                                " AND pid <> pg_backend_pid()").fetchone()
            if n == 0 or time.monotonic() > deadline:
                return int(n)
            time.sleep(0.1)


def _run_through(proxy: StallingProxy, target, password, public_tmp, store, *args: str):
    url = target.url.replace(f":{target.conn.port}/", f":{proxy.port}/")
    return dbarena("run", "--target", url, "--workload", "pgbench-select-only", "--scale", "1", "--store",
                   str(store), *LIGHT, *args, env=cli_env(public_tmp, PGPASSWORD=password), timeout=180)


def test_a_sampler_whose_connection_stalls_before_its_first_reading_holds_no_point_up(server, public_tmp, tmp_path):
    """The proxy swallows the sampler's SET application_name, its first statement after
    connecting; two points (1 and 2 clients) each start within CONNECT_WAIT_S of it, are
    measured, and each sampler's connection is closed before its point ends."""
    target, password = server
    proxy = StallingProxy(target.conn.port, answered=-1)
    try:
        store = tmp_path / "r.db"
        done = _run_through(proxy, target, password, public_tmp, store, "--threads", "1,2",
                            "--clients-per-thread", "1", "--duration", "3")
        assert done.returncode == 0, done.stdout + done.stderr
        points = _points(store)
        stalled = proxy.samplers()
        assert len(points) == 2 and len(stalled) == 2, (points, stalled)
        for point, link in zip(points, stalled):
            assert point["status"] == "ok" and point["tps"] > 0, point["error"]
            assert point["record"]["stopped"] == (f"not sampled: the server did not answer the sampler within "
                                                  f"{CONNECT_WAIT_S:g} s"), point["record"]["stopped"]
            assert point["record"]["seconds"] == []
            # The next connection (pgbench's) comes once the point gave up waiting, not later.
            after = [other.opened_at for other in proxy.links if other.opened_at > link.opened_at]
            assert after and after[0] - link.sampler_at < CONNECT_WAIT_S + 2, (after[0], link.sampler_at)
            # Cut when the point gave up on it: closed at the proxy before the point ended.
            assert link.client_closed_at is not None and link.client_closed_at <= point["ended"] + 1.5, (
                link.client_closed_at, point["ended"])
        assert _other_backends(target, password) == 0
    finally:
        proxy.close()


def test_a_sampler_whose_connection_stalls_mid_point_is_cut_when_the_point_ends(server, public_tmp, tmp_path):
    """After the sampler's first reading and one second's, the proxy stops forwarding:
    the point is measured with the seconds read before, says where sampling stopped, and
    ends no later than STOP_WAIT_S + HANGUP_WAIT_S after pgbench; the connection is gone
    from the proxy and the server before the next point starts."""
    target, password = server
    # After the marker: SHOW server_version_num, the free slots, the first reading's two
    # statements and one second's two.
    proxy = StallingProxy(target.conn.port, answered=6)
    try:
        store = tmp_path / "r.db"
        t0 = time.time()
        done = _run_through(proxy, target, password, public_tmp, store, "--threads", "1,2",
                            "--clients-per-thread", "1", "--duration", "6")
        assert done.returncode == 0, done.stdout + done.stderr
        points = _points(store)
        stalled = proxy.samplers()
        assert len(points) == 2 and len(stalled) == 2
        for i, (point, link) in enumerate(zip(points, stalled)):
            assert point["status"] == "ok" and point["tps"] > 0, point["error"]
            assert link.client_closed_at is not None and link.client_closed_at <= point["ended"] + 1.5
            if i + 1 < len(points):
                assert link.client_closed_at < points[i + 1]["started"] + 1
            stopped = point["record"]["stopped"]
            assert stopped.startswith("stopped at ") and "the server did not answer a reading for " in stopped, stopped
            assert stopped.endswith("(its connection was cut)")
            assert len(point["record"]["seconds"]) == 1, point["record"]["seconds"]
            # pgbench runs its 6 s (plus its connecting); the stop adds at most its bounds.
            assert point["ended"] - point["started"] < 6 + 3 + STOP_WAIT_S + HANGUP_WAIT_S
        assert time.time() - t0 < 120
        assert _other_backends(target, password) == 0
    finally:
        proxy.close()


def _plain_role(target, password, name: str, role_limit: int = -1, database_limit: int = -1) -> str:
    import psycopg

    with psycopg.connect(target.url, password=password, autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {name} LOGIN PASSWORD '{name}-pw' CONNECTION LIMIT {role_limit}")
        admin.execute(f"CREATE DATABASE {name} OWNER {name} CONNECTION LIMIT {database_limit}")
    return target.url.replace("dbarena@", f"{name}@").rsplit("/", 1)[0] + f"/{name}"


@pytest.mark.parametrize("role_limit, database_limit, note", [
    (2, -1, "not sampled: the role's CONNECTION LIMIT 2 lets in 1 more connection(s) beside the sampler's, "
            "and the point opens 2: its clients come first"),
    (-1, 2, "not sampled: the database's CONNECTION LIMIT 2 lets in 1 more connection(s) beside the "
            "sampler's, and the point opens 2: its clients come first"),
])
def test_a_connection_limit_as_small_as_the_point_leaves_the_point_its_clients(server, public_tmp, tmp_path,
                                                                                 role_limit, database_limit, note):
    target, password = server
    name = "lim_role" if role_limit > 0 else "lim_db"
    url = _plain_role(target, password, name, role_limit, database_limit)
    env = cli_env(public_tmp, PGPASSWORD=f"{name}-pw")
    for clients, sampled in ((2, False), (1, True)):
        store = tmp_path / f"{name}-{clients}.db"
        done = dbarena("run", "--target", url, "--workload", "pgbench-select-only", "--threads", "1",
                       "--clients-per-thread", str(clients), "--duration", "3", "--scale", "1", "--store",
                       str(store), *LIGHT, env=env)
        assert done.returncode == 0, done.stdout + done.stderr
        (point,) = _points(store)
        assert point["status"] == "ok" and point["tps"] > 0, point["error"]
        stopped = point["record"]["stopped"]
        if sampled:
            assert stopped is None and len(point["record"]["seconds"]) >= 2, stopped
        else:
            assert stopped == note, stopped


def test_a_mariadb_account_limited_to_the_points_clients_leaves_them_their_connections(public_tmp, tmp_path):
    """An account with MAX_USER_CONNECTIONS 2 and a sysbench point of 2 threads: the
    sampler's connection would have refused the second; it lets go of it and says why.
    With 1 thread there is room for it beside, and the point is sampled."""
    import contextlib


    from dbarena import execute
    from dbarena.engines.mariadb import MariaDB

    with MariaDB().throwaway(settings={}, max_connections=151, bindir=None, keep=False,
                             executor=execute.LOCAL) as target:
        # dbarena's own account (it may not grant to another), limited for new connections.
        with contextlib.closing(target.connect()) as admin, admin.cursor() as cur:
            cur.execute("SELECT CURRENT_USER()")
            user, host = cur.fetchone()[0].rsplit("@", 1)
            cur.execute("ALTER USER %s@%s WITH MAX_USER_CONNECTIONS 2", (user, host))
        for threads, sampled in ((2, False), (1, True)):
            store = tmp_path / f"limited-{threads}.db"
            done = dbarena("run", "--target", target.url, "--workload", "sysbench-read-only", "--threads", str(threads),
                           "--duration", "3", "--tables", "1", "--table-size", "1000", "--store", str(store),
                           *LIGHT, env=cli_env(public_tmp, MYSQL_PWD=target.password))
            assert done.returncode == 0, done.stdout + done.stderr
            (point,) = _points(store)
            assert point["status"] == "ok" and point["tps"] > 0, point["error"]
            stopped = point["record"]["stopped"]
            if sampled:
                assert stopped is None and len(point["record"]["seconds"]) >= 2, stopped
            else:
                assert stopped == ("not sampled: the user's max_user_connections 2 lets in 1 more connection(s) "
                                   "beside the sampler's, and the point opens 2: its clients come first"), stopped


def _terminate_sampler(target, password, after_s: float, done: list[float]) -> None:
    """Ends the sampler's backend `after_s` seconds after it connects (as an
    administrator's pg_terminate_backend, or an idle-session reaper, would)."""
    import psycopg

    with psycopg.connect(target.url, password=password, autocommit=True) as conn:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            row = conn.execute("SELECT pid FROM pg_stat_activity WHERE application_name LIKE 'dbarena-sampler%'"
                               ).fetchone()
            if row is not None:
                time.sleep(after_s)
                conn.execute("SELECT pg_terminate_backend(%s)", (row[0],))
                done.append(time.time())
                return
            time.sleep(0.05)


def test_a_sampler_terminated_mid_point_leaves_the_point_pgbenchs_own_figure(server, public_tmp, tmp_path):
    """A bare pgbench point (no -P: its per-second series comes from the server's commit
    counter) whose sampler backend is terminated 4 s into its 10 s: the commits of 4 s
    were scaled by pgbench's transactions of 10 s, and the point's steady-state figure
    stored at several times what pgbench printed. Now it has no per-second series, says
    why, and its figure is pgbench's own."""
    target, password = server
    store = tmp_path / "r.db"
    env = cli_env(public_tmp, PGPASSWORD=password)
    terminated: list[float] = []
    killer = threading.Thread(target=_terminate_sampler, args=(target, password, 4.0, terminated), daemon=True)
    killer.start()
    done = dbarena("run", "--target", target.url, "--workload", "pgbench-select-only", "--threads", "1",
                   "--duration", "10", "--scale", "1", "--store", str(store), *LIGHT, env=env, timeout=180)
    killer.join(timeout=5)
    assert done.returncode == 0, done.stdout + done.stderr
    assert terminated, "the sampler never connected"
    (point,) = _points(store)
    assert point["status"] == "ok" and point["tps"] > 0, point["error"]
    # libpq reports the FATAL the server sent, or (when the socket closed before the
    # client read it, a race under load) that the server closed the connection.
    stopped = point["record"]["stopped"]
    assert stopped.startswith("stopped at "), stopped
    assert ("terminating connection due to administrator command" in stopped
            or "server closed the connection unexpectedly" in stopped), stopped
    db = sqlite3.connect(store)
    (pid, details), = db.execute("SELECT id, details FROM points WHERE phase = 'measured'").fetchall()
    note = json.loads(details)["per_second"]
    assert note.startswith("no per-second series: the server's xact_commit was read for only "), note
    assert "cannot be scaled to pgbench's transactions over the whole" in note
    assert db.execute("SELECT COUNT(*) FROM samples WHERE point_id = ?", (pid,)).fetchone()[0] == 0
    # The figure every comparison uses is the one pgbench printed.
    shown = dbarena_here("results", "--json", "--store", str(store), env=env)
    assert shown.returncode == 0, shown.stderr
    (row,) = json.loads(shown.stdout)
    assert row["steady_tps"] is None and row["tps"] == pytest.approx(point["tps"])
