"""The loop of a `fleet run --together` controller with its hosts replaced: variants and
--precision as a local run takes them (tests/e2e/test_fleet_together.py drives real
hosts)."""

from __future__ import annotations

import json
from datetime import datetime, timezone


def _controller(tmp_path, args: list[str], say: list[str]):
    """A Together whose hosts are replaced: host-prepare answers with a provenance as the
    first host makes it (each point is replaced by the test: _figures)."""
    from types import SimpleNamespace

    from dbarena.fleet import together
    from dbarena.fleet.inventory import Host
    from dbarena.run import session
    from dbarena.study import arguments

    run = object.__new__(together.Together)
    run.study = arguments.study_from_args(args)
    run.hosts = [Host(name=n, label=n, price_per_hour=None, price_per_month=None, currency=None, workdir=f"/w/{n}")
                 for n in ("alpha", "beta")]
    run.server, run.store_arg, run.say, run.label = None, tmp_path / "r.db", say.append, "together"
    run.host_study, run.run_args, run.target = "study.toml", [], run.study.engines[0].target or ""
    run.outcome = session.Outcome()
    run.fleet = SimpleNamespace(poll_s=0.01, ansible=SimpleNamespace(inventory="hosts.ini", passwords={}, secrets=[]))
    run.install = lambda: True
    url = run.target or "postgresql://dbarena@gamma:5432/dbarena"  # (a [server] host's: once it started)
    prepared = {"label": "together", "host": "alpha", "engine": "postgres", "target": url,
                "started_at": datetime.now(timezone.utc).isoformat(), "server_version": "16.4",
                "tool_versions": {}, "host_facts": {}, "options": {"settings": {}, "precision": run.study.precision}}
    context = {"settings": {}, "variant": "", "server_version": "16.4", "flavour": "postgres",
               "host": {"target": url}}

    def step(hosts, args, **kwargs):
        assert args[0] == "host-prepare", args  # (every point is `point`'s, below)
        return {hosts[0].name: together.Answer({"run_info": prepared, "context": context})}

    run.step = step
    return run


def _figures(monkeypatch, values: dict[str, list[float]], events: list | None = None):
    """Each point measured by the load generators (togetherpoint.Together.point) replaced:
    its TPS is the next of its variant's figures."""
    from dbarena.fleet import togetherpoint
    from dbarena.model import Measurement, PointResult

    taken: list = []

    def point(self, spec, checkpoint=False, profile=False):
        if events is not None:
            events.append(("point", spec.variant, spec.threads, spec.duration_s, checkpoint))
        taken.append(spec)
        now = datetime.now(timezone.utc)
        tps = values[spec.variant][sum(s.variant == spec.variant and s.threads == spec.threads for s in taken) - 1]
        return PointResult(spec=spec, status="ok", started_at=now, ended_at=now, command=(), exit_code=0, stdout="",
                           stderr="", measurement=Measurement(tps=tps, transactions=int(tps * 2)))
    monkeypatch.setattr(togetherpoint.Together, "point", point)
    return taken


VARIANTS_STUDY = """schema = 1
name = "variants"
[sweep]
levels = [2]
duration_s = 2
[engines.postgres]
[[workloads]]
workload = "pgbench-select-only"
[variants.steady]
description = "figures that agree"
[variants.noisy]
postgres = { work_mem = "8MB" }
"""


def test_together_precision_repeats_each_variant_until_its_interval_is_narrow_enough(tmp_path, monkeypatch):
    """--precision: the together loop decides its rounds with the local sweep's own
    rounds.Adaptive: a variant whose figures agree stops at the least a verdict needs
    (3 runs), one whose figures keep wandering runs to --max-repeats; each variant is
    a run of its own, keyed by its variant and settings as a local run's, and a second
    session finds every point done."""
    import sqlite3

    from dbarena.stats.estimators import MIN_REPEATS
    from dbarena.store.database import Store

    study = tmp_path / "variants.toml"
    study.write_text(VARIANTS_STUDY)
    args = ["--study", str(study), "--target", "postgresql://dbarena@db:5432/dbarena", "--precision", "2%",
            "--max-repeats", "5"]
    said: list[str] = []
    run = _controller(tmp_path, args, said)
    taken = _figures(monkeypatch, {"steady": [1000.0, 1001.0, 999.0, 1000.0, 1000.0],
                                   "noisy": [500.0, 1500.0, 700.0, 1400.0, 600.0]})
    assert run.run() == 0, said
    # Interleaved as a local run's rounds: both variants in each round, while both run.
    assert [(s.variant, s.repeat) for s in taken][:4] == [("steady", 0), ("noisy", 0), ("steady", 1), ("noisy", 1)]
    db = sqlite3.connect(tmp_path / "r.db")
    rows = db.execute("SELECT r.variant, p.variant, COUNT(*), COUNT(DISTINCT p.config_key), MAX(p.repeat) "
                      "FROM points p JOIN runs r ON r.id = p.run_id GROUP BY r.id ORDER BY r.id").fetchall()
    assert rows == [("steady", "steady", MIN_REPEATS, 1, MIN_REPEATS - 1), ("noisy", "noisy", 5, 1, 4)], rows
    keys = db.execute("SELECT DISTINCT config_key FROM points").fetchall()
    assert len(keys) == 2
    # The variant's settings are for a server the study starts: against --target they
    # are left out (and said), not recorded as if applied.
    settings = [json.loads(o)["settings"] for (o,) in db.execute("SELECT options FROM runs ORDER BY id")]
    assert settings == [{}, {}]
    assert any(c.startswith("variant noisy postgres settings: work_mem=8MB -> none") for c in run.study.changes)
    db.close()
    with Store(tmp_path / "r.db") as store:
        configs = [p.config for p in store.points()]
    assert {c["variant"] for c in configs} == {"steady", "noisy"}
    assert {json.dumps(c["settings"]) for c in configs} == {"{}"}
    lines = "\n".join(said)
    # Where each point ended, as `dbarena run`'s outcome holds it (the CLI shows its table).
    ended = {s.spec.variant: (len(s.values), s.status) for s in run.outcome.precision}
    assert ended == {"steady": (MIN_REPEATS, "reached"), "noisy": (5, "max repeats")}, ended
    assert f"{MIN_REPEATS + 5} point(s) with 2 load generators; stored in" in lines

    # Again: every point reached its precision or its limit; nothing measured.
    again: list[str] = []
    second = _controller(tmp_path, args, again)
    more = _figures(monkeypatch, {"steady": [], "noisy": []})
    assert second.run() == 0 and more == [], again
    assert any(line.startswith("complete already (8 points stored") for line in again), again


def test_a_server_host_runs_each_variant_on_a_server_started_with_its_settings(tmp_path, monkeypatch):
    """With a [server] host, each variant gets that host's server started with its
    settings (the host runs one together server at a time): one variant after the
    other, each server stopped before the next starts; each run records its settings.
    A warm-up is the sweep's: stored apart, then the measured run asks the first host
    for a checkpoint."""
    import contextlib
    import os
    import sqlite3

    from dbarena.fleet import together, togetherserver
    from dbarena.fleet.inventory import Host

    study = tmp_path / "variants.toml"
    study.write_text(VARIANTS_STUDY.replace('levels = [2]', 'levels = [2, 4]').replace(
        'duration_s = 2', 'duration_s = 2\nwarmup_s = 1'))
    said: list[str] = []
    monkeypatch.delenv("PGPASSWORD", raising=False)
    run = _controller(tmp_path, ["--study", str(study)], said)
    run.server = Host(name="gamma", label="gamma", price_per_hour=None, price_per_month=None, currency=None,
                      workdir="/w/gamma")
    events: list[tuple] = []

    def start(self, settings, cluster, max_clients):
        # The server's password, made for the run, is in the plays' environment only (not
        # os.environ: the plays take the fleet's passwords, not this process's).
        assert set(run.fleet.ansible.passwords) == {"PGPASSWORD"} and "PGPASSWORD" not in os.environ
        events.append(("start", dict(settings)))
        self.target = "postgresql://dbarena@gamma:5432/dbarena"
        return True

    monkeypatch.setattr(togetherserver.ServerHost, "start", start)
    monkeypatch.setattr(togetherserver.ServerHost, "stop", lambda self: events.append(("stop",)))
    monkeypatch.setattr(togetherserver.ServerHost, "alive", lambda self: events.append(("alive",)))
    monkeypatch.setattr(togetherserver, "Lease", lambda *args: contextlib.nullcontext())
    monkeypatch.setattr(together, "check", lambda *args: None)
    _figures(monkeypatch, {"steady": [1.0, 1000.0, 1.0, 1000.0], "noisy": [1.0, 900.0, 1.0, 900.0]}, events)
    assert run.run() == 0, said
    assert run.fleet.ansible.passwords == {}
    # The server asked once a point (before its warm-up); the measured run after a checkpoint.
    point = [("alive",), ("point", "{v}", 2, 1, False), ("point", "{v}", 2, 2, True),
             ("alive",), ("point", "{v}", 4, 1, False), ("point", "{v}", 4, 2, True)]
    assert events == [("start", {}), *[tuple(x.format(v="steady") if isinstance(x, str) else x for x in e)
                                       for e in point], ("stop",),
                      ("start", {"work_mem": "8MB"}), *[tuple(x.format(v="noisy") if isinstance(x, str) else x
                                                              for x in e) for e in point], ("stop",)], events
    db = sqlite3.connect(tmp_path / "r.db")
    assert [(v, json.loads(o)["settings"]) for v, o in db.execute("SELECT variant, options FROM runs ORDER BY id")] \
        == [("steady", {}), ("noisy", {"work_mem": "8MB"})]
    assert db.execute("SELECT variant, phase, threads, duration_s FROM points ORDER BY id").fetchall() == [
        (v, phase, threads, seconds) for v in ("steady", "noisy") for threads in (2, 4)
        for phase, seconds in (("warmup", 1), ("measured", 2))]
    db.close()
    assert "warming up pgbench-select-only at 2 threads for 1 s" in said


def test_cpus_placement_is_refused_in_one_line(tmp_path):
    """[cpus] divides one machine's cores between a throwaway server and its load
    generator; a together run's server and load generators are on other machines."""
    import pytest

    from dbarena.errors import UsageError
    from dbarena.fleet import together
    from dbarena.fleet.inventory import Host
    from dbarena.study import arguments

    def host(name: str) -> Host:
        return Host(name=name, label=name, price_per_hour=None, price_per_month=None, currency=None,
                    workdir=f"/w/{name}")

    study = tmp_path / "cpus.toml"
    study.write_text(VARIANTS_STUDY + "[cpus]\nserver = [1]\n")
    with pytest.raises(UsageError, match=r"^--together places no CPUs \(\[cpus\], variant steady_1core\)"):
        together.check(arguments.study_from_args(["--study", str(study)]), [host("alpha")], host("gamma"))


def test_slo_is_refused_by_together_in_one_line(tmp_path):
    """--slo's search over offered rates is not built for load generators on several
    hosts: refused before anything starts, not run closed-loop without a word."""
    import pytest

    from dbarena.errors import UsageError
    from dbarena.fleet import together
    from dbarena.fleet.inventory import Host
    from dbarena.study import arguments

    def host(name: str) -> Host:
        return Host(name=name, label=name, price_per_hour=None, price_per_month=None, currency=None,
                    workdir=f"/w/{name}")

    study = tmp_path / "slo.toml"
    study.write_text(VARIANTS_STUDY)
    with pytest.raises(UsageError, match=r"^--together with --slo"):
        together.check(arguments.study_from_args(["--study", str(study), "--slo", "p99=5ms"]), [host("alpha")],
                       host("gamma"))


def test_a_warm_up_that_failed_fails_its_point_without_a_measured_run(tmp_path, monkeypatch):
    """A warm-up some load generator could not run is stored failed, and its point fails
    with why at once: no checkpoint asked for, no measured shares started."""
    import sqlite3

    from dbarena.fleet import togetherpoint
    from dbarena.model import Measurement, PointResult

    study = tmp_path / "warm.toml"
    study.write_text(VARIANTS_STUDY.replace('duration_s = 2', 'duration_s = 2\nwarmup_s = 1'))
    said: list[str] = []
    run = _controller(tmp_path, ["--study", str(study), "--target", "postgresql://dbarena@db:5432/dbarena"], said)
    asked: list[tuple] = []

    def point(self, spec, checkpoint=False, profile=False):
        asked.append((spec.variant, spec.duration_s, checkpoint))
        now = datetime.now(timezone.utc)
        if spec.variant == "noisy" and spec.duration_s == 1:
            return PointResult(spec=spec, status="failed", started_at=now, ended_at=now, command=(), exit_code=None,
                               stdout="", stderr="", error="beta: pgbench killed by signal 9 (SIGKILL)")
        return PointResult(spec=spec, status="ok", started_at=now, ended_at=now, command=(), exit_code=0, stdout="",
                           stderr="", measurement=Measurement(tps=100.0, transactions=200))

    monkeypatch.setattr(togetherpoint.Together, "point", point)
    assert run.run() == 1, said
    assert asked == [("steady", 1, False), ("steady", 2, True), ("noisy", 1, False)], asked
    db = sqlite3.connect(tmp_path / "r.db")
    assert db.execute("SELECT variant, phase, status, error FROM points ORDER BY id").fetchall() == [
        ("steady", "warmup", "ok", None), ("steady", "measured", "ok", None),
        ("noisy", "warmup", "failed", "beta: pgbench killed by signal 9 (SIGKILL)"),
        ("noisy", "measured", "failed", "the warm-up failed: beta: pgbench killed by signal 9 (SIGKILL)")]
    db.close()
    assert "2 point(s) with 2 load generators, 1 failed; stored in" in "\n".join(said)


def test_an_offered_rate_is_shared_out_so_that_the_hosts_together_offer_it(tmp_path):
    """A workload's options.rate (or --rate) is the point's offered rate: each load
    generator offers its share of it (they each offered all of it, so two hosts offered
    twice what the point recorded), in the steps its tool's option takes."""
    import pytest

    from dbarena.errors import UsageError
    from dbarena.fleet import togetherpoint
    from dbarena.stats import capacity
    from dbarena.study import arguments

    study = tmp_path / "rate.toml"
    study.write_text(VARIANTS_STUDY.replace('"pgbench-select-only"', '"pgbench-select-only"\noptions = { rate = 101 }')
                     + '[[workloads]]\nworkload = "sysbench-read-only"\noptions = { rate = 7 }\n')
    run = _controller(tmp_path, ["--study", str(study), "--engine", "postgres"], [])
    plan = run._plan()
    for spec in plan.points:
        shares = togetherpoint.split_point(spec, run.hosts)
        offered = [capacity.offered(s.options) for s in shares]
        assert sum(offered) == pytest.approx(capacity.offered(spec.options))
        if spec.workload.startswith("pgbench"):
            assert [dict(s.options)["rate"] for s in shares] == ["50.5", "50.5"]
        else:  # sysbench --rate takes whole TPS: the first host one more
            assert [dict(s.options)["rate"] for s in shares] == ["4", "3"]
        assert [s.threads for s in shares] == [1, 1] and all(dict(s.options).keys() == dict(spec.options).keys()
                                                            for s in shares)

    # A rate too small to give each host a step of it is refused before anything starts.
    study.write_text(VARIANTS_STUDY.replace('"pgbench-select-only"', '"pgbench-select-only"\noptions = { rate = 0.1 }'))
    run = _controller(tmp_path, ["--study", str(study)], [])
    with pytest.raises(UsageError, match=r"^pgbench-select-only at 2 threads: the offered rate 0\.1 TPS cannot be "
                                         r"split over 2 load generators \(each needs at least 0\.1 TPS\)$"):
        run._plan()  # (Together.run's first step, before any play)
