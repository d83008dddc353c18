"""A pgbench point's per-second throughput from the server's commit counter
(serverside/throughput.py), the sampler's last reading at the point's end and its
seconds handed on as they come, and what a point's key says the tool measured
(Tool.instruments, configkey.instruments_in) for pgbench run bare or not."""

from __future__ import annotations

import itertools
import json
import time
from dataclasses import replace
from pathlib import Path

import pytest

from dbarena.interfaces import Client
from dbarena.model import Connection
from dbarena.model import PointSpec
from dbarena.serverside import throughput
from dbarena.serverside.postgres import PostgresReader
from dbarena.serverside.sampler import ServerSampler
from dbarena.serverside.series import ServerSeries
from dbarena.stats import configkey
from dbarena.workloads import WORKLOADS


def _series(seconds, rates):
    return ServerSeries(engine="postgres", seconds=tuple(seconds), series={"xact_commit": tuple(rates)})


def test_only_the_whole_seconds_of_the_tools_run_are_its_series_numbered_from_its_start():
    # The tool ran from 0.4 s to 5.4 s; readings at 1..6 s: (0.4, 1] and (5, 5.4] are
    # partial, (6, ...] after its end, and (4, 5] ends within half a second of it (its
    # clients' last report of commits may be in it); the three whole seconds before
    # are its series.
    series = _series([1, 2, 3, 4, 5, 6], [600, 1000, 1010, 990, 1500, 400])
    derived = throughput.from_commits(series, "xact_commit", first_s=-0.2, end_s=5.4, duration_s=5,
                                      transactions=None, tool="pgbench")
    assert [(s.second, s.tps) for s in derived.samples] == [(1.6, 1000), (2.6, 1010), (3.6, 990)]
    assert "3 whole seconds of pgbench's 5 s" in derived.note and "scaled" not in derived.note
    assert "the server's xact_commit" in derived.note and "not pgbench's own per-second report" in derived.note


def test_each_second_is_scaled_to_the_tools_own_count_and_the_note_says_by_how_much():
    # Three commits a transaction (a script of autocommitted statements): the server
    # counted 3 x what pgbench did; its series is pgbench's transactions a second.
    series = _series([1, 2, 3], [3000, 3000, 3000])
    derived = throughput.from_commits(series, "xact_commit", first_s=0, end_s=3, duration_s=3,
                                      transactions=3000, tool="pgbench")
    assert [s.tps for s in derived.samples] == [1000, 1000]
    assert "scaled by 0.333, pgbench's transactions over the server's commits" in derived.note
    # Where the first interval's start is unknown its commits are not counted: two
    # seconds' commits against three seconds' transactions would scale by 1.5.
    unknown_start = throughput.from_commits(series, "xact_commit", first_s=None, end_s=3, duration_s=3,
                                            transactions=3000, tool="pgbench")
    assert unknown_start.samples == () and "was not read from the start of pgbench's 3 s" in unknown_start.note


REAL = json.loads((Path(__file__).parents[1] / "fixtures" / "serverside"
                   / "pg15-select-only-bare-sampler-terminated.json").read_text())


def _derive(point: dict, server: ServerSeries | None = None) -> throughput.Derived:
    return throughput.from_commits(server or ServerSeries.decode(json.dumps(point["server"])), point["counter"],
                                   first_s=point["first_s"], end_s=point["end_s"], duration_s=point["duration_s"],
                                   transactions=point["transactions"], tool=point["tool"])


def test_a_real_series_read_throughout_sums_to_pgbenchs_own_count():
    whole = REAL["whole"]
    derived = _derive(whole)
    assert len(derived.samples) == 8 and "scaled by 1.006" in derived.note
    # Its whole seconds leave out pgbench's first, spent connecting (12 commits): their
    # mean is the steady state's, above pgbench's figure over its whole run.
    mean = sum(s.tps for s in derived.samples) / len(derived.samples)
    assert mean == pytest.approx(whole["pgbench_tps"], rel=0.1)
    # As it was stored, but for the second that ended within a second of pgbench's end.
    assert [s.tps for s in derived.samples] == [tps for _, tps in whole["stored_before"][:-1]]


LAST_REPORT = json.loads((Path(__file__).parents[1] / "fixtures" / "serverside"
                          / "pg15-bare-last-report.json").read_text())


@pytest.mark.parametrize("point", LAST_REPORT, ids=lambda p: f"{p['workload']}-{p['pgbench_tps']:.0f}")
def test_the_second_that_holds_the_clients_last_report_is_not_the_series(point):
    """Real TPC-B and simple-update points: a backend reports its commits at most once a
    second and all it holds when it disconnects. The interval of the disconnect read up
    to 1.9 times the median second; left out, each series' mean is pgbench's figure
    within 1.5 % (with it: +5.3 % and +10.7 %)."""
    derived = _derive(point)
    mean = sum(s.tps for s in derived.samples) / len(derived.samples)
    assert mean == pytest.approx(point["pgbench_tps"], rel=0.015)
    assert derived.samples[-1].second <= point["duration_s"] - throughput.FLUSH_S


def test_a_real_series_whose_sampler_was_terminated_mid_point_is_refused_not_scaled_from_its_part():
    """The sampler's backend ended by pg_terminate_backend 4 s into a 10 s point: its
    two whole seconds, scaled by pgbench's transactions of 10 s over the commits of 3,
    were stored at about 5 times pgbench's figure. Refused, the point's figure is
    pgbench's own (stats/analysis.py: no series, the tool's figure)."""
    cut = REAL["terminated"]
    before = [tps for _, tps in cut["stored_before"]]
    assert min(before) > 4 * cut["pgbench_tps"]  # what the scaling from a part stored
    derived = _derive(cut)
    assert derived.samples == ()
    assert derived.note.startswith("no per-second series: the server's xact_commit was read for only 3 s of "
                                   "pgbench's 10 s (stopped at 4 s: terminating connection due to administrator "
                                   "command); its commits over a part cannot be scaled"), derived.note
    assert "the point's figure is pgbench's own" in derived.note


@pytest.mark.parametrize("keep", [3, 6, 9])
def test_a_real_series_cut_short_anywhere_is_refused(keep):
    """The whole real series as a sampler cut after `keep` readings would have left it."""
    whole = REAL["whole"]
    server = ServerSeries.decode(json.dumps(whole["server"]))
    cut = replace(server, seconds=server.seconds[:keep], series={k: v[:keep] for k, v in server.series.items()},
                  stopped=f"stopped at {keep} s: terminating connection due to administrator command")
    derived = _derive(whole, cut)
    assert derived.samples == () and f"read for only {keep} s of pgbench's 10 s" in derived.note, derived.note


def test_a_real_series_with_a_second_lost_in_the_middle_is_refused():
    """A reading lower than the one before (the statistics were reset) leaves a second
    without a rate: the commits of that second are not counted, so none is scaled."""
    whole = REAL["whole"]
    server = ServerSeries.decode(json.dumps(whole["server"]))
    rates = list(server.series["xact_commit"])
    rates[5] = None
    derived = _derive(whole, replace(server, series={**server.series, "xact_commit": tuple(rates)}))
    assert derived.samples == () and "has a gap in its readings within pgbench's 10 s" in derived.note


def test_no_whole_second_and_no_counter_read_are_said_not_made_up():
    derived = throughput.from_commits(_series([1.5], [100]), "xact_commit", first_s=0.5, end_s=1.2, duration_s=1,
                                      transactions=100, tool="pgbench")
    assert derived.samples == () and derived.note.startswith("no per-second series")
    gaps = throughput.from_commits(_series([1, 2, 3], [None, None, None]), "xact_commit", first_s=0, end_s=3,
                                   duration_s=3, transactions=10, tool="pgbench")
    assert gaps.samples == ()
    note = throughput.unread("pgbench", "not sampled: the server did not answer the sampler within 5 s")
    assert "did not answer" in note and "--client-progress" in note


class _Counting:
    """A PostgreSQL connection whose commit counter grows 1000 a reading."""

    def __init__(self):
        self.commits = itertools.count(0, 1000)

    def execute(self, sql):
        if sql.startswith("SHOW server_version_num"):
            return _Rows([("150018",)], ["server_version_num"])
        if sql.startswith("SET"):
            return _Rows([], [])
        if "pg_stat_database" in sql:
            return _Rows([(float(next(self.commits)),)], ["xact_commit"])
        return _Rows([], [])

    def close(self):
        pass


class _Rows:
    def __init__(self, rows, names):
        self.rows = rows
        self.description = [(n,) for n in names]

    def fetchone(self):
        return self.rows[0] if self.rows else None

    def fetchall(self):
        return self.rows


def test_the_sampler_names_its_commit_counter_hands_each_second_on_and_reads_once_more_at_the_end():
    seen = []
    # Intervals of 0.25 s and a stop 0.1 s after the third: a final reading at the stop
    # comes about 0.1 s after the one before, an interval's worth of margin either way for
    # a thread woken late on a loaded machine (0.05 s intervals missed by 3 ms in CI).
    sampler = ServerSampler("postgres", _Counting, interval_s=0.25, reader_for=PostgresReader,
                            on_second=lambda second, values: seen.append(values["xact_commit"])).connect()
    assert sampler.commits() == "xact_commit"
    sampler.start(origin=time.monotonic())  # the point's second 0, after the first reading
    assert sampler.first_reading_s() is not None and sampler.first_reading_s() <= 0
    time.sleep(0.6)
    series = sampler.stop(final=True)
    # Every second stored was handed on as it came, the last one a part of a second long
    # (read at stop, not after a whole interval).
    assert len(seen) == len(series.seconds) >= 3 and all(v is not None and v > 0 for v in seen)
    assert series.seconds[-1] - series.seconds[-2] < 0.25


def test_a_sampler_that_never_connected_names_no_counter():
    def refuse():
        raise OSError("connection refused")

    sampler = ServerSampler("postgres", refuse, reader_for=PostgresReader).connect()
    assert sampler.commits() is None
    sampler.stop()


CLIENT = Client("/usr/lib/postgresql/15/bin/pgbench",
                Connection(protocol="postgresql", host="127.0.0.1", port=5432, user="bench", dbname="db",
                           url="postgresql://bench@127.0.0.1:5432/db"))
SPEC = PointSpec(engine="postgres", workload="pgbench-select-only", threads=2, clients=4, duration_s=10)


@pytest.mark.parametrize("progress, sampling", [(False, None), (True, None), (False, 0.1), (True, 1.0)])
def test_a_points_key_says_what_its_command_line_measures(tmp_path, progress, sampling):
    workload = WORKLOADS["pgbench-select-only"]
    tool = workload.tool
    argv = tool.point_argv(CLIENT, SPEC, workload.mode_args)
    if not progress:
        argv = tool.without_progress(argv)
        assert "-P" not in argv
    if sampling:
        argv = tool.with_latency_log(argv, tmp_path, sampling)
    assert configkey.instruments_in(argv) == tool.instruments(progress, sampling)


@pytest.mark.parametrize("command, found", [
    (["pgbench", "-c", "8", "-T", "60", "bench"], ()),
    (["/usr/bin/pgbench", "-P", "5", "-S"], ("-P 5",)),
    (["pgbench", "--progress=1", "--log", "--sampling-rate=0.01"], ("-P 1", "-l", "--sampling-rate 0.01")),
    (["pgbench", "-P10", "-l", "--sampling-rate", "1"], ("-P 10", "-l")),
    (["sysbench", "-P", "1"], ()),  # another program's -P is not pgbench's
    ([], ()),
])
def test_a_stored_command_lines_instruments_are_read_in_getopts_spellings(command, found):
    assert configkey.instruments_in(command) == found


def test_a_bare_points_key_is_the_one_it_always_was_and_an_instrumented_one_differs():
    common = dict(engine="postgres", workload="pgbench-select-only", threads=1, clients=2, duration_s=60, warmup_s=0,
                  params={"scale": 10}, options={}, settings={}, variant="", server_version="15.18",
                  flavour="postgresql", host=None)
    bare = configkey.build(**common)
    assert "instruments" not in bare
    measured = configkey.build(**common, instruments=("-P 1",))
    assert configkey.differing(bare, measured) == ["instruments"]
    assert configkey.describe(bare, measured, ["instruments"]).startswith("instruments ")


def test_points_stored_before_keys_held_instruments_gain_them_from_their_command_lines(tmp_path):
    """Schema 18's data step, on a copy of a store written by an older dbarena (pgbench
    with -P 1 and one transaction in ten logged, as it then ran it)."""
    import json
    import shutil
    import sqlite3
    from pathlib import Path

    from dbarena.store.database import Store

    path = tmp_path / "old.db"
    shutil.copy(Path(__file__).parents[1] / "fixtures" / "stores" / "demo-seed-a-quick.db", path)
    before = dict(sqlite3.connect(path).execute("SELECT id, config_key FROM points").fetchall())
    with Store(path) as store:
        assert store.version >= 18
        rows = store.db.execute("SELECT id, workload, command, config, config_key FROM points").fetchall()
        assert store.db.execute("SELECT COUNT(*) FROM pending_rekey").fetchone()[0] == 0
    pgbench = [r for r in rows if r[1].startswith("pgbench")]
    assert pgbench and len(pgbench) < len(rows)
    for pid, workload, command, config, digest in rows:
        key = json.loads(config)
        assert digest == configkey.digest(key)  # the digest follows the key
        if workload.startswith("pgbench"):
            assert "-P" in json.loads(command)
            assert key["instruments"] == ["-P 1", "-l", "--sampling-rate 0.1"] and digest != before[pid]
        else:
            assert "instruments" not in key and digest == before[pid]  # every other key as it was


@pytest.mark.parametrize("facts, said", [
    ({"tls": {"ssl": True, "version": "TLSv1.3", "cipher": "TLS_AES_256_GCM_SHA384"}}, "TLSv1.3 TLS_AES_256_GCM_SHA384"),
    ({"tls": {"ssl": True, "version": None, "cipher": None}}, "on"),  # encrypted, the server said no more
    ({"tls": {"ssl": False, "version": None, "cipher": None}}, None),  # asked for, not given: plain
    ({"tls": {"ssl": "yes"}}, None),  # not what a target writes
    ({}, None),
    (None, None),
])
def test_what_a_runs_connections_were_encrypted_with_is_read_from_its_target_facts(facts, said):
    assert configkey.tls_of(facts) == said


def test_a_plain_points_key_is_the_one_it_always_was_and_an_encrypted_one_differs():
    """TLS costs CPU on both ends: a point over it is another configuration (never pooled
    with a plain one, and `compare` names it); a key that says nothing of it is plain."""
    common = dict(engine="postgres", workload="pgbench-select-only", threads=1, clients=2, duration_s=60, warmup_s=0,
                  params={"scale": 10}, options={}, settings={}, variant="", server_version="15.18",
                  flavour="postgresql", host=None)
    plain = configkey.build(**common)
    assert "tls" not in plain and plain == configkey.build(**common, tls=None)
    encrypted = configkey.build(**common, tls="TLSv1.3 TLS_AES_256_GCM_SHA384")
    assert configkey.digest(plain) != configkey.digest(encrypted)
    assert configkey.differing(plain, encrypted) == ["tls"]
    assert configkey.differing(encrypted, configkey.build(**common, tls="TLSv1.2 ECDHE-RSA-AES256-GCM-SHA384")) == ["tls"]


def test_points_of_runs_that_recorded_tls_before_keys_held_it_gain_it(tmp_path):
    """Schema 20's data step, on a store whose first run recorded encrypted connections
    (as `fleet run --together` has since its server requires TLS) before keys held
    them: that run's points gain `tls` and a new digest; every other key stays."""
    import json
    import shutil
    import sqlite3
    from pathlib import Path

    from dbarena.store.database import Store

    path = tmp_path / "old.db"
    shutil.copy(Path(__file__).parents[1] / "fixtures" / "stores" / "demo-seed-a-quick.db", path)
    Store(path).close()  # today's schema: then back to 19, as a dbarena before this one left it
    seen = {"ssl": True, "version": "TLSv1.3", "cipher": "TLS_AES_256_GCM_SHA384", "required": True}
    with sqlite3.connect(path) as db:
        first = db.execute("SELECT MIN(id) FROM runs").fetchone()[0]
        facts = json.loads(db.execute("SELECT target_facts FROM runs WHERE id = ?", (first,)).fetchone()[0])
        db.execute("UPDATE runs SET target_facts = ? WHERE id = ?", (json.dumps({**facts, "tls": seen}), first))
        # (Schema 21's, 22's, 23's and 26's tables, 24's views, 25's and 26's triggers and 26's index
        # gone too: a store of 19 had none of them.)
        db.execute("DROP VIEW v_levels")
        db.execute("DROP VIEW v_sessions")
        db.execute("DELETE FROM schema_migrations WHERE version >= 20")
        db.execute("DROP TABLE store_identity")
        db.execute("DROP TABLE run_origins")
        db.execute("DROP TABLE profiles")
        db.execute("DROP TABLE session_summaries")
        db.execute("DROP TABLE group_summaries")
        db.execute("DROP TABLE group_generation")
        db.execute("DROP INDEX points_run_phase")
        for (trigger,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall():
            db.execute(f"DROP TRIGGER {trigger}")  # (schema 25's)
        db.execute("PRAGMA user_version = 19")
    before = dict(sqlite3.connect(path).execute("SELECT id, config_key FROM points").fetchall())
    with Store(path) as store:
        assert store.version >= 20
        rows = store.db.execute("SELECT id, run_id, config, config_key FROM points").fetchall()
        assert store.db.execute("SELECT COUNT(*) FROM pending_rekey").fetchone()[0] == 0
    assert {r[1] for r in rows} - {first}, "the demo store has another run"
    for pid, run_id, config, digest in rows:
        key = json.loads(config)
        assert digest == configkey.digest(key)
        if run_id == first:
            assert key["tls"] == "TLSv1.3 TLS_AES_256_GCM_SHA384" and digest != before[pid]
        else:
            assert "tls" not in key and digest == before[pid]


def test_a_series_stored_before_keeps_its_own_seconds_only_where_it_is_read():
    """Series from the commit counter stored before the seconds near pgbench's end were
    left out are read without them (estimator version 9); a tool's own series whole."""
    note = throughput.DERIVED + "xact_commit (9 whole seconds of pgbench's 10 s), not pgbench's own per-second report"
    seconds = [1.98, 2.98, 3.98, 4.99, 5.99, 6.99, 7.99, 8.99, 9.99]
    assert throughput.settled(seconds, note, 10) == 8
    assert throughput.settled(seconds[:8], note, 10) == 8  # one stored since: as it is
    assert throughput.settled(seconds, None, 10) == 9  # pgbench's own report (-P 1)


def test_an_old_stores_points_read_their_steady_state_without_the_last_report(tmp_path):
    """tests/fixtures/stores/fixed-rate-three-labels.db was stored before: its pgbench
    points' series end in the second that held their clients' last report. Read now,
    their steady-state mean is pgbench's figure within 2.5 % (stored as read then: 7-10 %
    above it)."""
    import shutil

    from dbarena.stats import analysis
    from dbarena.store.database import Store

    store = tmp_path / "old.db"
    shutil.copy(Path(__file__).parents[1] / "fixtures" / "stores" / "fixed-rate-three-labels.db", store)
    with Store(store) as db:
        points = [p for p in analysis.load(db) if p.workload == "pgbench-tpcb"]
    assert len(points) == 6
    for p in points:
        assert p.tps is not None and p.steady_tps is not None and p.samples == 8
        assert p.steady_tps == pytest.approx(p.tps, rel=0.025), p.point_id


def test_a_series_whose_last_reading_came_just_before_the_end_says_so_not_ten_of_ten():
    """Seen once in ten runs: the sampler's last reading at 9.98 s of a point that ended
    at 10.02 s. Its commits cannot be scaled (the last ones uncounted), and the note said
    "read for only 10 s of pgbench's 10 s"; it says how far before the end it stopped."""
    series = _series([1, 2, 3, 4, 5, 6, 7, 8, 9, 9.98], [1000] * 10)
    derived = throughput.from_commits(series, "xact_commit", first_s=0.0, end_s=10.02, duration_s=10,
                                      transactions=10000, tool="pgbench")
    assert derived.samples == ()
    assert "was last read 0.04 s before pgbench's end" in derived.note, derived.note
