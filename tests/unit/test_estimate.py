"""The whole study before it starts (preflight.estimate): its points, machine time and
disk space where its throwaway instances keep their data, the refusal of a study that
cannot fit, and the lines a run says once (the plan counted as it will run, --quick's
short points, a label that already holds points)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from points import point

from points import point
from dbarena import study
from dbarena.run import preflight, session
from dbarena.records import AnalysedPoint
from dbarena import study as study_mod
from dbarena.host import datadir, probe
from dbarena.records import AnalysedPoint, StoredRun
from dbarena.study import Overrides
from points import point, run

FACTS = {"hardware_threads": 2, "effective_hardware_threads": 2, "hostname": "vm"}


@pytest.fixture(autouse=True)
def no_server_binaries(monkeypatch):
    # Setting names are checked against the server's binaries: not what these tests are about.
    monkeypatch.setattr(preflight, "check_settings", lambda study, executor=None: None)


def flags(**given) -> study.Study:
    given.setdefault("workloads", ("pgbench-select-only",))
    return study.implicit(Overrides(**given))


def test_machine_time_is_every_point_and_the_preparation_of_each_dataset():
    s = flags(levels=(1, 2), duration_s=60, repeats=3, params={"scale": 10})
    e = preflight.estimate(s, host_facts=FACTS, probe_s=0)
    assert e.points == 6 and e.max_points is None
    prepare = e.seconds - 6 * 60
    assert 0 < prepare < 60  # one pgbench -i at scale 10, shared by every point
    assert e.line().startswith("run: 6 points, about 6 min of machine time, ")


def test_the_host_probe_is_in_the_estimate_and_its_line():
    # Automatic before a study (a file or a bundled one); not before an ad-hoc run of flags.
    adhoc = flags(levels=(1, 2), duration_s=60, repeats=3, params={"scale": 10})
    assert preflight.estimate(adhoc, host_facts=FACTS).probe_s == 0
    assert preflight.estimate(adhoc, host_facts=FACTS, probe_s=7).probe_s == 7
    s = study_mod.apply(study_mod.load("seed-b"), study_mod.Overrides(levels=(1, 2), duration_s=60))
    without = preflight.estimate(s, host_facts=FACTS, probe_s=0)
    e = preflight.estimate(s, host_facts=FACTS)  # the default: probe.planned_seconds's share
    assert e.probe_s == probe.planned_seconds(None, without.seconds) > 0
    assert e.seconds == without.seconds + e.probe_s
    assert f"of machine time (a {e.probe_s} s host probe first), " in e.line()
    asked = preflight.estimate(s, host_facts=FACTS, probe_s=7)
    assert asked.probe_s == 7 and asked.seconds == without.seconds + 7


def test_a_study_of_targets_only_has_no_probe():
    s = flags(levels=(1,), targets={"postgres": "postgresql://u@db.example:5432/d"})
    assert preflight.estimate(s, host_facts=FACTS, probe_s=20).probe_s == 0


def test_disk_space_is_checked_in_the_temporary_directory_when_no_data_dir_is_set(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    e = preflight.estimate(flags(levels=(1,), params={"scale": 100}), host_facts=FACTS)
    (room,) = e.rooms
    assert room.where == tmp_path and room.choice is None
    # pgbench: 16 MB a scale unit, with headroom for WAL and temporary files.
    assert room.need_bytes == int(100 * 16_000_000 * datadir.HEADROOM)
    assert room.largest == "pgbench scale 100 on postgres"
    assert f"2.4 GB of disk in {tmp_path} (" in e.line()


def test_a_study_that_cannot_fit_is_refused_in_one_line_naming_the_need_and_the_free_space(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(datadir, "free_bytes", lambda where, choice: 76 * 10 ** 9)
    seed_a = study.load("seed-a")
    e = preflight.estimate(seed_a, host_facts=FACTS)
    refusal = e.refusal()
    assert refusal is not None and "\n" not in refusal
    assert refusal.startswith("study seed-a needs about ")
    assert f"; {tmp_path} has 76 GB free: set data_dir to a larger file system" in refusal
    assert refusal.endswith("or use --quick")
    # The largest dataset is named: pgbench at study A's scale.
    assert "for pgbench scale 10000 on postgres and " in refusal
    # --quick's tiny datasets fit.
    assert preflight.estimate(study.apply(seed_a, Overrides(quick=True)), host_facts=FACTS).refusal() is None


def test_a_data_dir_is_checked_where_it_is(tmp_path, monkeypatch):
    from dataclasses import replace

    s = flags(levels=(1,), params={"scale": 10})
    s = replace(s, engines=tuple(replace(e, data_dir=str(tmp_path)) for e in s.engines))
    monkeypatch.setattr(datadir, "free_bytes", lambda where, choice: 10 ** 6)
    e = preflight.estimate(s, host_facts=FACTS)
    assert e.rooms[0].where == tmp_path
    assert e.refusal() == (f"run needs about 240 MB for pgbench scale 10 on postgres; {tmp_path} has 1.0 MB free: "
                           "set data_dir to a larger file system (a study file's [engines.postgres] data_dir) or "
                           "use --quick")


def test_a_target_needs_no_disk_here():
    s = flags(targets={"postgres": "postgresql://bench@db.example/bench"}, levels=(1,))
    e = preflight.estimate(s, host_facts=FACTS)
    assert e.rooms == () and e.refusal() is None
    assert "no disk on this machine" in e.line()


def test_engines_one_after_the_other_need_the_largest_of_their_datasets(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    plans = preflight.expand(study.load("seed-a"), FACTS)
    alone = [preflight.rooms([p])[0].need_bytes for p in plans]
    (both,) = preflight.rooms(plans)
    assert both.need_bytes == max(alone)
    (kept,) = preflight.rooms(plans, keep=True)  # --keep: every server stays, with its data
    assert kept.need_bytes == sum(alone)


def test_precision_is_counted_as_it_will_run():
    s = flags(levels=(1,), duration_s=10, precision=0.02, max_repeats=10)
    e = preflight.estimate(s, host_facts=FACTS)
    assert (e.points, e.max_points) == (3, 10)
    assert e.line().startswith("run: at least 3 points, up to 10, about ")
    (p,) = e.plans
    assert session._plan_line(s, p) == (
        "run: at least 3 points on postgres, up to 10 (repeats until the 95 % interval is within +-2.0%, "
        "3 to 10 a point): pgbench-select-only at threads 1")


def test_an_implicit_run_is_announced_without_a_study_name():
    s = flags(levels=(1, 2), repeats=3)
    (p,) = preflight.expand(s, FACTS)
    assert session._plan_line(s, p) == "run: 6 points on postgres: pgbench-select-only at threads 1, 2, " \
                                       "3 repeats interleaved"
    seed = study.apply(study.load("seed-a"), Overrides(quick=True, engines=("postgres",)))
    (p,) = preflight.expand(seed, FACTS)
    assert session._plan_line(seed, p).startswith("study seed-a --quick: 12 points on postgres: ")


def test_quick_says_its_short_points_once():
    quick = study.apply(study.load("seed-a"), Overrides(quick=True))
    assert preflight.quick_note(quick, preflight.expand(quick, FACTS)) == (
        "--quick: 5 s points, too short for steady-state figures (a trial of the protocol; points of 30 s or "
        "more give them)")
    plain = flags(levels=(1,), duration_s=5)
    assert preflight.quick_note(plain, preflight.expand(plain, FACTS)) is None  # the user's own choice: warned per point


@pytest.mark.parametrize("seconds, words", [(40, "40 s"), (600, "10 min"), (3 * 3600 + 24 * 60, "3 h 24 min"),
                                            (3600, "1 h 0 min")])
def test_durations_in_words(seconds, words):
    assert preflight.duration_words(seconds) == words


class FakeStore:
    def __init__(self, runs: list[StoredRun], points: dict[int, int]):
        self._runs, self._points = runs, points

    def runs(self) -> list[StoredRun]:
        return self._runs

    def points(self, *, labels: tuple[str, ...] = ()) -> list[AnalysedPoint]:
        wanted = {r.id for r in self._runs if r.label in labels}
        return [point(run_id=run_id) for run_id, n in self._points.items() if run_id in wanted for _ in range(n)]


def test_a_label_that_already_holds_points_of_another_run_is_said():
    store = FakeStore([run(id=3, label="vm", invocation="a", started_at="2026-11-22T10:00:00Z"),
                       run(id=4, label="other", invocation="b", started_at="2026-11-23T10:00:00Z")],
                      {3: 20, 4: 5})
    assert preflight.pooled_note(store, "vm", "new", given=False) == (  # type: ignore[arg-type]
        "label 'vm' already holds 20 points from 2026-11-22 (run 3); they are pooled with these when the "
        "configurations match: the label defaults to the host name: use --label to keep them apart")
    assert "use another --label" in preflight.pooled_note(store, "vm", "new", given=True)  # type: ignore[arg-type]
    # Resuming the same invocation, or a fresh label: nothing to say.
    assert preflight.pooled_note(store, "vm", "a", given=False) is None  # type: ignore[arg-type]
    assert preflight.pooled_note(store, "fresh", "new", given=False) is None  # type: ignore[arg-type]


def test_the_library_prints_progress_unless_asked_to_be_quiet():
    from dbarena.report import terminal

    assert isinstance(session.default_reporter(), terminal.TerminalReporter)
    assert isinstance(session.SILENT, session.SilentReporter)


def test_a_quick_trial_takes_no_automatic_probe():
    """--quick is a trial of the protocol: no host probe unless --probe asks for one."""
    from dbarena import study
    from dbarena.run import preflight, session

    quick = study.apply(study.load("seed-a"), study.Overrides(quick=True))
    assert preflight.estimate(quick).probe_s == 0
    assert preflight.estimate(quick, probe_s=5).probe_s == 5


@pytest.mark.slow  # (3 s of a bar being drawn)
def test_the_progress_bar_costs_a_point_no_more_than_a_redraw_a_second():
    """The bar is drawn by a thread of its own while a point runs, at the benchmark's
    priority: at rich's default of 10 redraws a second it took 17 ms of CPU a second on
    a terminal (0.9 % of this 2-CPU machine, against issue 41's 1 % budget for all of
    dbarena) and 6 ms into a pipe, where nothing shows. Now: once a second on a
    terminal, no thread at all elsewhere."""
    import io
    import threading
    import time

    from rich.console import Console

    from dbarena.model import PointSpec
    from dbarena.report import terminal

    plan = [PointSpec(engine="postgres", workload="pgbench-select-only", threads=1, clients=2, duration_s=60)]
    before = set(threading.enumerate())
    piped = terminal.TerminalReporter(Console(file=io.StringIO()))
    piped.begin(plan, lambda spec: spec.duration_s)
    assert set(threading.enumerate()) == before  # no redrawing thread where nothing shows
    piped.end()

    screen = io.StringIO()
    shown = terminal.TerminalReporter(Console(file=screen, force_terminal=True, width=100))
    shown.begin(plan, lambda spec: spec.duration_s)
    try:
        time.sleep(3.2)
        drawn = screen.getvalue().count("ETA")
    finally:
        shown.end()
    assert 1 <= drawn <= 5, drawn  # (10 a second drew it about 32 times)
