"""A small real store, every table filled, built with the library: two labels (a, b),
two levels, three repeats each, with per-second samples, system samples, a latency
histogram, the server's series, an on-CPU profile, a failed point and a study. What the store-edge tests
edit cell by cell (tests/unit/test_store_edge.py); `hostile` edits a copy with a value
that does not fit in every table a merge copies, and `assert_merged` checks what a merge
of it holds (tests/unit/test_merge_edge.py, tests/e2e/test_pg_store.py)."""

from __future__ import annotations

import math
import shutil
import sqlite3
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from dbarena.host.sysmetrics import SystemSample
from dbarena.model import Measurement, PointResult, PointSpec, Profile, RunInfo, Sample, StudyRecord
from dbarena.serverside.series import ServerSeries
from dbarena.stats import analysis, configkey, latency
from dbarena.store.database import POINT_TABLES, Store

T0 = datetime(2026, 11, 1, tzinfo=timezone.utc)
HOST = {"cpu_model": "test cpu", "hardware_threads": 2, "memory_bytes": 8 * 2 ** 30, "kernel": "6.1.0"}
WOBBLE = (1.0, 1.004, 0.996)


def _point(label_tps: float, level: int, repeat: int, *, day: int) -> PointResult:
    spec = PointSpec(engine="postgres", workload="pgbench-tpcb", threads=level, clients=level, duration_s=4,
                     params=(("scale", 1),), repeat=repeat)
    tps = label_tps * level * WOBBLE[repeat % 3]
    hist = latency.Latencies(source="pgbench log")
    hist.record_counts([900 + 10 * k for k in range(5)], [3, 5, 7, 5, 3])
    samples = tuple(Sample(second=float(s), tps=tps * (1 + 0.01 * (s % 2)), latency_ms=1.0, failed=0)
                    for s in range(1, 5))
    system = tuple(SystemSample(second=float(s), cpu_user_pct=30, cpu_system_pct=10, cpu_iowait_pct=1.0,
                                cpu_steal_pct=0, cpu_idle_pct=60.0, context_switches_per_s=100.0,
                                disk_read_bytes_per_s=0.0, disk_write_bytes_per_s=10.0, memory_used_bytes=2 ** 30,
                                server_cpu=0.8, loadgen_cpu=0.2) for s in range(1, 5))
    server = ServerSeries(engine="postgres", seconds=(1.0, 2.0), series={"wait.CPU": (1.0, 0.5)}, notes=(),
                          stopped=None, figures={"wait.CPU": 0.75})
    return PointResult(spec=spec, status="ok", started_at=T0 + timedelta(days=day),
                       ended_at=T0 + timedelta(days=day, seconds=4), command=("pgbench", "-c", str(level)),
                       exit_code=0, stdout="tps = 1\n", stderr="",
                       measurement=Measurement(tps=tps, transactions=int(tps * 4), latency_avg_ms=1.0,
                                               latency_histogram=hist.encode(), details={"mode": "simple"}),
                       samples=samples, system=system, server=server,
                       profile=Profile(folded=f"postgres;main;PostgresMain;ExecScan {3 + level}\n"
                                       f"postgres;main;PostgresMain;[postgres] {2 + repeat}\n"
                                       "postgres;main;PostmasterMain;epoll_wait 1\n", frequency_hz=99.0,
                                       symbols="perf version 6.1.187; /usr/lib/postgresql/17/bin/postgres: "
                                       "dynamic symbols only"))


def build(path: Path, *, derive: bool = True) -> Path:
    """The store at `path`; with `derive`, its derived figures cached and its sessions summarised too."""
    study = StudyRecord(name="edge", source="flags", text="engines: [postgres]\n", sha256="ab" * 32)
    with Store(path) as db:
        for day, (label, tps) in enumerate((("a", 1000.0), ("b", 900.0), ("a", 1010.0))):
            run_id = db.begin_run(RunInfo(
                label=label, host="box", engine="postgres", target="postgresql://dbarena@127.0.0.1:1/dbarena",
                started_at=T0 + timedelta(days=day), server_version="17.2",
                tool_versions={"pgbench": "pgbench 17.2"}, options={"targets": {}}, host_facts=HOST,
                target_facts={"settings": {"synchronous_commit": "on"}}, price_per_hour=0.5, currency="USD",
                study=study))
            for level in (1, 2):
                for repeat in range(3):
                    config = configkey.build(
                        engine="postgres", workload="pgbench-tpcb", threads=level, clients=level, duration_s=4,
                        warmup_s=0, params={"scale": 1}, options={}, settings={"synchronous_commit": "on"},
                        variant="", server_version="17.2", flavour="postgresql", host=configkey.host_identity(HOST))
                    db.add_point(run_id, _point(tps, level, repeat, day=day), config=config)
            failed = PointSpec(engine="postgres", workload="pgbench-tpcb", threads=4, clients=4, duration_s=4,
                               params=(("scale", 1),))
            db.add_point(run_id, PointResult(spec=failed, status="failed", started_at=T0, ended_at=T0,
                                             command=("pgbench",), exit_code=1, stdout="", stderr="boom",
                                             error="pgbench: error: boom"))
            db.finish_run(run_id, "finished")
        if derive:
            analysis.load(db)
            analysis.lent_sessions(db, ("a", "b"))  # (each run's summaries, as a read lending them makes them)
    return path


# Each edit and the line a merge must give (after "store SOURCE: "); point ids are the
# source's (`build`: runs 1, 2, 3 of 7 points each, the 7th failed; ok points have
# seconds 1-4; one host, one study).
HOSTILE: tuple[tuple[str, tuple[Any, ...], str], ...] = (
    ("UPDATE runs SET started_at = 'not a date' WHERE id = 3", (),
     "runs row 3, column started_at: 'not a date' is not a date and time (ISO 8601); "
     "that run and its points are not merged"),
    ("UPDATE points SET tps = 'nan' WHERE id = 2", (),
     "points row 2, column tps: 'nan' is not a number; that point is not merged"),
    ("UPDATE points SET options = '{\"a\": ' WHERE id = 3", (),
     "points row 3, column options: '{\"a\": ' is not valid JSON; that point is not merged"),
    ("UPDATE points SET details = '{\"together\": 5}' WHERE id = 9", (),
     "points row 9, column details: it holds together 5, not a JSON object; that point is not merged"),
    ("UPDATE samples SET tps = 'x' WHERE point_id = 1 AND second = 2", (),
     "samples row of point 1 at second 2.0, column tps: 'x' is not a number; that second is not merged"),
    ("UPDATE samples SET failed = 2.5 WHERE point_id = 4 AND second = 3", (),
     "samples row of point 4 at second 3.0, column failed: 2.5 is not an integer; that second is not merged"),
    ("UPDATE samples SET second = 1e999 WHERE point_id = 10 AND second = 4", (),
     "samples row of point 10 at second inf, column second: inf is not a finite number; "
     "that second is not merged"),
    ("UPDATE system_samples SET server_cpu = -3 WHERE point_id = 1 AND second = 3", (),
     "system_samples row of point 1 at second 3.0, column server_cpu: -3.0 is negative where a figure must be; "
     "that second is not merged"),
    ("UPDATE system_samples SET memory_used_bytes = x'00' WHERE point_id = 8 AND second = 1", (),
     "system_samples row of point 8 at second 1.0, column memory_used_bytes: a blob of 1 bytes is not an integer; "
     "that second is not merged"),
    ("UPDATE raw_outputs SET stdout = x'00ff' WHERE point_id = 5", (),
     "raw_outputs row 5, column stdout: a blob of 2 bytes cannot be read ("),
    ("UPDATE latency_histograms SET record = '{\"count\": -4}' WHERE point_id = 6", (),
     "latency_histograms row 6, column record: it holds count -4, not a count; that histogram is not merged"),
    ("UPDATE server_series SET figures = '{\"wait.CPU\": \"a lot\"}' WHERE point_id = 4", (),
     "server_series row 4, column figures: it holds a figure that is not a number; "
     "that point's server figures are not merged"),
    ("UPDATE server_series SET record = x'01' WHERE point_id = 10", (),
     "server_series row 10, column record: a blob of 1 bytes is not JSON text; "
     "that point's server figures are not merged"),
    ("UPDATE profiles SET top = '[{\"function\": \"f\", \"share\": 2}]' WHERE point_id = 4", (),
     "profiles row 4, column top: it holds a share 2, not a number from 0 to 1; that point's profile is not merged"),
    ("UPDATE profiles SET folded = x'789c' WHERE point_id = 11", (),
     "profiles row 11, column folded: a blob of 2 bytes cannot be read ("),
    ("UPDATE point_derived SET fields = '{' WHERE point_id = 1", (),
     "point_derived row 1, column fields: '{' is not valid JSON; "
     "those cached figures are not merged (a read computes them again)"),
    ("UPDATE hosts SET facts = '{\"hardware_threads\": -2}'", (),
     "column facts: it holds hardware_threads -2, not a count; that host is not merged; "
     "its runs are, without their host facts"),
    ("UPDATE studies SET name = x'00'", (),
     "studies row 'abababababababa, column name: a blob of 1 bytes is not text; "
     "that study is not merged; its runs are, without it"),
    ("INSERT INTO imports VALUES ('f1', 'one.log', '[1]', 7, '2026-11-01T00:00:00+00:00')", (), ""),
    ("INSERT INTO imports VALUES ('f2', 'two.log', '{', 7, '2026-11-01T00:00:00+00:00')", (),
     "imports row 'f2', column run_ids: '{' is not valid JSON; that file's record of being imported is not merged"),
    # Tombstones of runs forgotten there (`store forget`): carried into the merged store
    # where they fit (no run of theirs is there: nothing said), left out where they do not.
    ("INSERT INTO forgotten_runs VALUES ('gone-1', '2026-11-02T00:00:00+00:00', 'old', 'postgres', NULL, 3)", (), ""),
    ("INSERT INTO forgotten_runs VALUES ('gone-2', 'not a date', NULL, NULL, NULL, 3)", (),
     "forgotten_runs row gone-2, column forgotten_at: 'not a date' is not a date and time (ISO 8601); "
     "that run's forgetting is not merged (a merge may bring it back here)"),
)
# The rows left out, by table: point ids (a row a point) or (point id, second).
LEFT_OUT = {
    "points": {2, 3, 9, *range(15, 22)},
    "samples": {(1, 2.0), (4, 3.0), (10, math.inf)}, "system_samples": {(1, 3.0), (8, 1.0)},
    "raw_outputs": {5}, "latency_histograms": {6}, "server_series": {4, 10}, "point_derived": {1},
    "profiles": {4, 11},
}


def hostile(base: Path, path: Path) -> Path:
    """A copy of the store `build` made, with the HOSTILE edits, at `path`."""
    shutil.copy(base, path)
    db = sqlite3.connect(path)
    try:
        for sql, args, _ in HOSTILE:
            db.execute(sql, args)
        db.commit()
    finally:
        db.close()
    return path


def rows_by_point(db: sqlite3.Connection, table: str) -> dict[Any, list[tuple[Any, ...]]]:
    """point id -> its rows of `table` (without the id), sorted."""
    out: dict[Any, list[tuple[Any, ...]]] = {}
    column = "id" if table == "points" else "point_id"
    cur = db.execute(f"SELECT * FROM {table}")
    at = [d[0] for d in cur.description].index(column)
    for row in cur.fetchall():
        rest = tuple(v for k, v in enumerate(row) if k != at and not (table == "points" and k == 1))
        out.setdefault(row[at], []).append(rest)
    return {k: sorted(v, key=repr) for k, v in out.items()}


def assert_merged(source: Path, merged: Path) -> None:
    """Every row of the source that fits is in the merged store, and nothing else: the
    points (ids mapped in order) and their rows of every point table, the runs."""
    src, dst = sqlite3.connect(source), sqlite3.connect(merged)
    try:
        kept = sorted(set(r for (r,) in src.execute("SELECT id FROM points")) - LEFT_OUT["points"])
        new = [r for (r,) in dst.execute("SELECT id FROM points ORDER BY id")]
        assert len(new) == len(kept)
        old_of = dict(zip(new, kept))
        for table in ("points", *POINT_TABLES):
            want = rows_by_point(src, table)
            got = {old_of[k]: v for k, v in rows_by_point(dst, table).items()}
            left = LEFT_OUT.get(table, set())
            for pid in kept:
                rows = [r for r in want.get(pid, [])
                        if pid not in left and (pid, r[0]) not in left]
                assert got.get(pid, []) == rows, (table, pid)
        assert [r for (r,) in dst.execute("SELECT label FROM runs ORDER BY id")] == ["a", "b"]
        # The host and study did not fit: the runs are there without them.
        assert dst.execute("SELECT COUNT(*) FROM runs r JOIN hosts h ON h.fingerprint = r.host_fingerprint "
                           "WHERE h.facts = '{}' AND r.study_sha256 IS NULL").fetchone()[0] == 2
        assert dst.execute("SELECT COUNT(*) FROM hosts").fetchone()[0] == 1
        assert dst.execute("SELECT COUNT(*) FROM studies").fetchone()[0] == 0
        assert dst.execute("SELECT sha256, run_ids FROM imports").fetchall() == [("f1", "[1]")]
        # Its tombstone that fits names a run the merged store never held from it: not carried.
        assert dst.execute("SELECT uuid, label, points FROM forgotten_runs").fetchall() == []
    finally:
        src.close()
        dst.close()


def assert_said(err: str, source: Path) -> None:
    """A merge of the HOSTILE store said each of its lines once, and nothing else."""
    lines = [line for line in err.splitlines() if line.strip()]
    prefix = f"dbarena: store {source}: "
    for _, _, said in HOSTILE:
        if said:
            assert sum(line.startswith(prefix) and said in line for line in lines) == 1, (said, err)
    assert len(lines) == sum(1 for h in HOSTILE if h[2]), err  # one line a problem, nothing else
