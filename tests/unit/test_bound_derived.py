"""A point's bound is derived from what the store keeps of it (its server series and
system samples), as every other derived figure is, cached under
analysis.ESTIMATOR_VERSION: a threshold changed judges points stored before it once the
cache is made again; the store keeps no verdict of a point stored now, and one an older
store kept is never preferred to the derivation; `verify` derives it again from a
bundle's series and refuses a bound that is not what they give."""

from __future__ import annotations

import json
import shutil
import sqlite3
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

import pytest

from dbarena.exchange import bundle
from dbarena.exchange.bundle import BundleProblem
from dbarena.exchange.publish import publish
from dbarena.exchange.verify import verify
from dbarena.model import Measurement, PointResult, PointSpec, RunInfo, Sample, SystemSample
from dbarena.run import measure
from dbarena.serverside.series import ServerSeries
from dbarena.stats import analysis, bound, thresholds
from dbarena.store.database import Store

from bundles import rewritten

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
# A real point's capture (tests/fixtures/serverside/README.md): machine CPU 100 % busy,
# its waits too few to tell, on a 2-thread machine.
CAPTURE = FIXTURES / "serverside" / "pg15-select-only-scale1-4clients.json"
# Two real points, each stored with the bound decided when it was (schema 22).
PROFILED = FIXTURES / "stores" / "profiled-sync-async.db"
T0 = datetime(2026, 11, 28, tzinfo=timezone.utc)


def _stored(path: Path) -> int:
    """A store holding the capture as `dbarena run` stores a point (measure.with_figures
    on its server series); the point's id."""
    f = json.loads(CAPTURE.read_text())
    spec = PointSpec(engine="postgres", workload=f["workload"], threads=f["threads"], clients=f["clients"],
                     duration_s=len(f["system"]))
    result = PointResult(
        spec=spec, status="ok", started_at=T0, ended_at=T0, command=("pgbench",), exit_code=0, stdout="",
        stderr="", measurement=Measurement(tps=1000.0),
        samples=tuple(Sample(second=float(s), tps=1000.0) for s in range(1, len(f["system"]) + 1)),
        system=tuple(SystemSample(**s) for s in f["system"]),
        server=ServerSeries.decode(json.dumps(f["server"])))
    result = PointResult(**{**vars(result), "server": measure.with_figures(result)})
    with Store(path) as db:
        run_id = db.begin_run(RunInfo(label="a", host="box", engine="postgres", target="postgresql://b@h:1/b",
                                      started_at=T0, server_version="15.18", tool_versions={}, options={},
                                      host_facts={"hardware_threads": f["hardware_threads"]}))
        point_id = db.add_point(run_id, result)
        db.finish_run(run_id, "finished")
    return point_id


def _bound(path: Path) -> tuple[str | None, str | None]:
    with Store(path) as db:
        (point,) = analysis.load(db)
    return point.bound, point.bound_evidence


def test_a_threshold_changed_judges_a_point_stored_before_once_the_cache_is_made_again(tmp_path, monkeypatch):
    path = tmp_path / "s.db"
    point_id = _stored(path)
    f = json.loads(CAPTURE.read_text())
    assert _bound(path) == (f["stored_bound"], f["stored_evidence"]) == (bound.MACHINE_CPU, f["stored_evidence"])
    # What the store kept: the series, no verdict.
    with sqlite3.connect(path) as raw:
        assert raw.execute("SELECT bound, evidence FROM server_series WHERE point_id = ?",
                           (point_id,)).fetchone() == (None, None)
    # The machine 100 % busy is no longer saturated past 100 %: cached, the old verdict
    # stands; made again (another estimator version), the point is judged anew.
    monkeypatch.setattr(thresholds, "SATURATED_PCT", 100.5)
    assert _bound(path)[0] == bound.MACHINE_CPU
    monkeypatch.setattr(analysis, "ESTIMATOR_VERSION", analysis.ESTIMATOR_VERSION + 1)
    kind, evidence = _bound(path)
    assert kind == bound.NONE and evidence is not None and evidence.startswith("CPU 100 % busy")
    # A wait threshold too: the point's one active-backend sample is enough to judge by
    # once MIN_WAIT_SAMPLES allows it, and that sample was on CPU (no wait bounds it).
    monkeypatch.setattr(bound, "MIN_WAIT_SAMPLES", 1)
    monkeypatch.setattr(analysis, "ESTIMATOR_VERSION", analysis.ESTIMATOR_VERSION + 1)
    assert "too few to tell" not in (_bound(path)[1] or "")


def test_a_stored_verdict_is_not_preferred_to_the_one_the_series_give(tmp_path):
    path = tmp_path / "s.db"
    point_id = _stored(path)
    derived = _bound(path)
    with sqlite3.connect(path) as raw:
        raw.execute("UPDATE server_series SET bound = 'locks', evidence = 'said so' WHERE point_id = ?", (point_id,))
        raw.execute("DELETE FROM point_derived")
    assert _bound(path) == derived


def test_an_older_store_s_verdicts_are_derived_again_from_its_series(tmp_path):
    """A real store of schema 22: its points' bounds read again from their series give
    the verdicts decided when they were stored."""
    shutil.copyfile(PROFILED, tmp_path / "p.db")
    with Store(tmp_path / "p.db") as db:
        stored = db.server_series([1, 2], records=False)
        found = {p.point_id: (p.bound, p.bound_evidence) for p in analysis.load(db)}
    assert found == {pid: (s.bound, s.evidence) for pid, s in stored.items()} and len(found) == 2


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The real profiled store's run 1 published (unsigned), its stored verdict tampered
    first: the bundle carries the one its series give."""
    base = tmp_path_factory.mktemp("bound")
    shutil.copyfile(PROFILED, base / "p.db")
    with sqlite3.connect(base / "p.db") as raw:
        raw.execute("UPDATE server_series SET bound = 'I/O', evidence = 'tampered'")
    with Store(base / "p.db") as db:
        made = publish(db, run_ids=[1], signer=None, secrets={})
        (point,) = analysis.load(db, run_id=1)
    (base / "b.tar").write_bytes(made.data)
    members, _ = bundle.read_tar("b", made.data)
    return {"path": base / "b.tar", "members": members, "point": point}


def _edited(published: dict[str, Any], path: Path, change: Callable[[dict[str, bytes], dict[str, Any]], None]
            ) -> Path:
    """The bundle changed, its sha256 and SHA256SUMS made consistent again (unsigned)."""
    return rewritten(published["members"], path, change)


def test_a_bundle_carries_the_derived_bound_and_verifies(published: dict[str, Any]) -> None:
    point = published["point"]
    assert point.bound not in (None, "I/O") and point.bound_evidence != "tampered"
    server = json.loads(published["members"][f"points/{point.point_id}/server-series.json"])
    manifest = json.loads(published["members"][bundle.MANIFEST])
    (entry,) = manifest["points"]
    assert (server["bound"], server["evidence"]) == (point.bound, point.bound_evidence) == \
        (entry["result"]["bound"], entry["result"]["bound_evidence"])
    assert verify(published["path"]).points == 1


def test_a_bound_tampered_in_the_manifest_is_refused_as_recomputed_from_the_series(published, tmp_path):
    pid = published["point"].point_id

    def change(members: dict[str, bytes], manifest: dict[str, Any]) -> None:
        manifest["points"][0]["result"]["bound"] = "I/O"

    assert published["point"].bound == bound.LOCKS  # (the point's waits say so: Lock:transactionid)
    with pytest.raises(BundleProblem, match=rf"manifest\.json:\d+: bound of point {pid} is \"I/O\", but "
                                            rf"\"{published['point'].bound}\" recomputed from "
                                            rf"points/{pid}/server-series\.json$"):
        verify(_edited(published, tmp_path / "m.tar", change))


def test_a_bound_tampered_in_the_server_series_file_is_refused(published, tmp_path):
    pid = published["point"].point_id
    name = f"points/{pid}/server-series.json"

    def change(members: dict[str, bytes], manifest: dict[str, Any]) -> None:
        server = json.loads(members[name])
        members[name] = bundle.json_bytes({**server, "evidence": "locks, trust me"})

    with pytest.raises(BundleProblem, match=rf"{name}: evidence of point {pid} is \"locks, trust me\", but "
                                            rf"\"Lock:transactionid .* recomputed from its record and "
                                            rf"points/{pid}/system_samples\.csv$"):
        verify(_edited(published, tmp_path / "s.tar", change))


def test_a_point_driven_together_is_judged_beside_its_first_load_generator_s_share() -> None:
    """fleet --together keeps no system samples of a point: its first load generator's
    threads, clients and CPU (its details' parts) are what the CPU ladder reads."""
    from points import point

    server = bound.readings({"engine": "postgres", "seconds": [1.0, 2.0], "series": {"wait.CPU": [1.0, 1.0]}})
    parts = [{"host": "alpha", "threads": 2, "clients": 4, "loadgen_cpu_cores": 1.9, "host_cpu_busy_pct": 97.0},
             {"host": "beta", "threads": 2, "clients": 4, "loadgen_cpu_cores": 0.2, "host_cpu_busy_pct": 20.0}]
    driven = point(threads=4, clients=8, details={"together": {"parts": parts}, "load_generators": 2})
    # The point's own (none sampled) are not read: its first share is.
    found = bound.of_point(driven, server, {"loadgen_cpu": 0.0, "cpu_idle_pct": 0.0}, 8)
    assert found is not None and found.kind == bound.LOADGEN and found.evidence.startswith("1.9 cores for 2 thread(s)")
    idle = point(threads=4, clients=8, details={"together": {"parts": [{**parts[0], "loadgen_cpu_cores": 0.5}]}})
    found = bound.of_point(idle, server, {}, 8)
    assert found is not None and found.kind == bound.NONE and found.evidence.startswith("load generator 0.5 cores")
    assert bound.of_point(driven, None, {}, 8) is None  # the server not sampled: no bound
