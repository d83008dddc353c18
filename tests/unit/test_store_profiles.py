"""Schema 22's profiles: a point's on-CPU profile stored with it (folded stacks
compressed, the summary made from them beside), read back as a summary or whole,
checked at the store's edge, copied by merge and removed with its run."""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime, timezone
from pathlib import Path

import pytest

from conftest import invoke
from dbarena.model import Measurement, PointResult, PointSpec, Profile, RunInfo
from dbarena.stats import profiles
from dbarena.store.database import POINT_TABLES, Store
from dbarena.store.merge import merge

PG = Path(__file__).resolve().parent.parent / "fixtures" / "perf" / "pg15-tpcb-2x8-5s.perf-script.txt"
T0 = datetime(2026, 11, 27, 10, 0, tzinfo=timezone.utc)
SYMBOLS = "perf version 6.1.187; /usr/lib/postgresql/15/bin/postgres: dynamic symbols only"


def _store(path: Path, folded: str | None) -> tuple[Store, int, int]:
    """A store with a profiled point and one without."""
    db = Store(path)
    run_id = db.begin_run(RunInfo(label="l", host="h", engine="postgres", target="t", started_at=T0,
                                  server_version="15", tool_versions={}, options={}, host_facts={}))
    spec = PointSpec(engine="postgres", workload="pgbench-tpcb", threads=2, clients=16, duration_s=5)

    def point(profile: Profile | None) -> int:
        return db.add_point(run_id, PointResult(
            spec=spec, status="ok", started_at=T0, ended_at=T0, command=("pgbench",), exit_code=0, stdout="",
            stderr="", measurement=Measurement(tps=1000.0, transactions=5000), profile=profile))

    profiled = point(Profile(folded=folded, frequency_hz=99.0, symbols=SYMBOLS) if folded is not None else None)
    return db, profiled, point(None)


def test_a_real_profile_is_stored_compressed_with_its_summary(tmp_path: Path) -> None:
    folded = profiles.folded_text(profiles.fold(PG.read_text()))
    db, profiled, bare = _store(tmp_path / "s.db", folded)
    with db:
        assert "profiles" in POINT_TABLES  # so that merge copies it and forgetting a run removes it
        summary = db.profiles([profiled, bare])
        assert set(summary) == {profiled}
        stacks = profiles.parse_folded(folded)
        assert summary[profiled].summary() == {"samples": profiles.samples(stacks), "top": profiles.top(stacks),
                                     "frequency_hz": 99.0, "symbols": SYMBOLS}
        assert db.profiles([profiled], folded=True)[profiled].folded == folded
        codec, size = db.db.execute("SELECT codec, length(folded) FROM profiles").fetchone()
        assert codec == "zlib" and size < len(folded) / 4


def test_a_profile_that_does_not_fit_is_said_and_left_out(tmp_path: Path) -> None:
    db, profiled, _ = _store(tmp_path / "s.db", "postgres;main;ExecScan 3\n")
    said: list[str] = []
    db.edge.say = said.append
    with db:
        for sql, column in (("UPDATE profiles SET top = '[{\"function\": 1, \"share\": 0.5}]'", "top"),
                            ("UPDATE profiles SET top = '{}'", "top"),
                            ("UPDATE profiles SET samples = -1", "samples")):
            db.db.execute("SAVEPOINT edit")
            db.db.execute(sql)
            assert db.profiles([profiled]) == {}
            db.db.execute("ROLLBACK TO edit")
            assert said and f"profiles row {profiled}, column {column}:" in said[-1], said
            assert said[-1].endswith("that point's profile is left out")
            db.edge._said.clear()
        db.db.execute("UPDATE profiles SET folded = ?", (b"x\x9c" + b"not zlib",))
        assert db.profiles([profiled]) != {}  # (the summary alone reads no stacks)
        assert db.profiles([profiled], folded=True) == {}
        assert "column folded: a blob of 10 bytes cannot be read" in said[-1]
        db.edge._said.clear()  # (each cell is said once a store object)
        db.db.execute("UPDATE profiles SET folded = ?", (profiles_pack("not folded\n"),))
        assert db.profiles([profiled], folded=True) == {}
        assert "holds folded stacks that do not read (line 1 is not 'stack count')" in said[-1], said


def profiles_pack(text: str) -> bytes:
    from dbarena.store.encoding import pack

    return pack(text)


def test_merge_copies_profiles_and_forgetting_removes_them(tmp_path: Path) -> None:
    db, profiled, _ = _store(tmp_path / "a.db", "postgres;main;ExecScan 3\npostgres;main;[postgres] 1\n")
    db.close()
    with Store(tmp_path / "b.db") as into:
        assert merge(into, tmp_path / "a.db") == (1, 2)
        (pid,) = [p for (p,) in into.db.execute("SELECT point_id FROM profiles")]
        got = into.profiles([pid], folded=True)[pid]
        assert got.folded == "postgres;main;ExecScan 3\npostgres;main;[postgres] 1\n" and got.samples == 4
        into.forget_runs([r.id for r in into.runs()])
    raw = sqlite3.connect(tmp_path / "b.db")
    try:
        assert raw.execute("SELECT count(*) FROM profiles").fetchone() == (0,)
    finally:
        raw.close()


def test_results_json_gives_a_profiled_point_its_profile_and_no_other(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    db, profiled, bare = _store(tmp_path / "s.db", "postgres;main;ExecScan 3\npostgres;main;[postgres] 1\n")
    db.close()
    status, out, err = invoke(["results", "--json", "--store", str(tmp_path / "s.db")], capsys)
    assert status == 0, err
    points = {p["point_id"]: p for p in json.loads(out)}
    assert points[profiled]["profile"] == {
        "samples": 4, "top": [{"function": "ExecScan", "share": 0.75}, {"function": "[postgres]", "share": 0.25}],
        "frequency_hz": 99.0, "symbols": SYMBOLS}
    assert "profile" not in points[bare]
