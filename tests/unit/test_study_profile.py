"""--profile and [profile]: the study's on-CPU profiles read and checked; the sweep
profiles each measured run and never a warm-up, stores the profile with the point and
says in a line why a point has none; the session says once where perf cannot profile
(or refuses, where the study requires profiles)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from dbarena.errors import ToolMissing, UsageError
from dbarena.model import Profile
from dbarena.run import session
from dbarena.study import Overrides, apply, implicit, parse
from dbarena.study.model import Profiling
from dbarena.study.apply import check_profile_targets

from test_sweep import FakeTarget, Rig, rig, spec  # noqa: F401 (rig: the fixture)

STUDY = """
schema = 1
name = "p"
[engines.postgres]
[[workloads]]
workload = "pgbench-select-only"
"""


def _study(extra: str = "") -> object:
    return parse(STUDY + extra, "p.toml")


def test_a_profile_table_profiles_every_point_with_its_keys() -> None:
    assert _study().profile is None  # type: ignore[attr-defined]
    assert _study("[profile]\n").profile == Profiling(99, False)  # type: ignore[attr-defined]
    assert _study("[profile]\nfrequency = 49\nrequired = true\n").profile == Profiling(49, True)  # type: ignore


@pytest.mark.parametrize("body, said", [
    ("frequency = 0", "profile.frequency: must be at least 1, not 0"),
    ("frequency = 5000", "profile.frequency: 5000: at most 1000 samples a second"),
    ("frequency = \"99\"", "profile.frequency: expected a whole number"),
    ("required = 1", "profile.required: expected true or false"),
    ("rate = 99", "profile.rate: unknown key (expected one of: frequency, required)"),
])
def test_a_profile_table_that_does_not_read_is_one_line(body: str, said: str) -> None:
    with pytest.raises(UsageError, match=said.replace("(", r"\(").replace(")", r"\)")):
        _study(f"[profile]\n{body}\n")


def test_the_flag_profiles_and_keeps_the_files_frequency() -> None:
    flagged = implicit(Overrides(profile=True))
    assert flagged.profile == Profiling(99, False)
    assert flagged.flags == {"profile": True}
    assert Overrides.from_flags(flagged.flags) == Overrides(profile=True)  # (what --resume reads back)
    kept = apply(_study("[profile]\nfrequency = 49\n"), Overrides(profile=True))  # type: ignore[arg-type]
    assert kept.profile == Profiling(49, False)
    noted = apply(_study(), Overrides(profile=True))  # type: ignore[arg-type]
    assert "profile: False -> True (--profile)" in noted.changes


def test_profiles_a_run_cannot_have_are_refused() -> None:
    # A together run's server host profiles its server: its study is not refused.
    together = apply(_study("[fleet]\ntogether = true\n"), Overrides(profile=True))  # type: ignore[arg-type]
    assert together.profile == Profiling(99, False)
    target = Overrides(targets={"postgres": "postgresql://u@127.0.0.1:5432/d"})
    required = apply(_study("[profile]\nrequired = true\n"), target)  # type: ignore[arg-type]
    # Read as the flags apply (a together run's load generators read it so); refused
    # where a run would start on it (run/request.py, cli/fleet.py).
    with pytest.raises(UsageError, match="required = true with a --target \\(postgres\\)"):
        check_profile_targets(required)
    check_profile_targets(apply(_study("[profile]\n"), target))  # type: ignore[arg-type]


# ------------------------------------------------------------------ the session's check


class _Said:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def stage(self, text: str) -> None:
        self.lines.append(text)


class _NoPerf:
    def run(self, argv, **kw):  # type: ignore[no-untyped-def]
        raise ToolMissing(f"{argv[0]} not found")


def test_perf_missing_is_one_line_and_the_run_goes_on() -> None:
    said = _Said()
    profiler, facts = session._profiler(implicit(Overrides(profile=True)), _NoPerf(), said)  # type: ignore
    assert profiler is None
    assert said.lines == ["no on-CPU profiles: perf is not installed (not on PATH; Debian and Ubuntu: linux-perf "
                          "or linux-tools); the run goes on without them"]
    assert facts is not None and facts["problem"].startswith("perf is not installed") and facts["perf"] is None


def test_perf_missing_where_profiles_are_required_refuses_the_run() -> None:
    study = apply(_study("[profile]\nrequired = true\n"), Overrides())  # type: ignore[arg-type]
    with pytest.raises(UsageError, match=r"^on-CPU profiles are required \(\[profile\] required = true\), but perf "
                                         "is not installed"):
        session._profiler(study, _NoPerf(), _Said())  # type: ignore[arg-type]


def test_no_profile_asked_for_checks_nothing() -> None:
    assert session._profiler(implicit(Overrides()), _NoPerf(), _Said()) == (None, None)  # type: ignore[arg-type]


# ------------------------------------------------------------------ the sweep


@dataclass
class FakeRecording:
    log: list
    read_gives: Profile | str

    def disable(self) -> None:
        self.log.append("disable")

    def stop(self) -> None:
        self.log.append("stop")

    def abandon(self) -> None:
        self.log.append("abandon")

    def read(self) -> Profile | str:
        self.log.append("read")
        return self.read_gives


@dataclass
class FakeProfiler:
    """A run/profiling.Profiler that starts nothing: it records its calls."""

    frequency_hz: int = 99
    log: list = field(default_factory=list)
    gives: list = field(default_factory=list)  # what each start gives: a Profile, or why not (str)

    def start(self, server_pid: int, work_dir: Path) -> FakeRecording | str:
        self.log.append(("start", server_pid, work_dir.is_dir()))
        given = self.gives.pop(0)
        if isinstance(given, str) and given.startswith("no start: "):
            return given.removeprefix("no start: ")
        return FakeRecording(self.log, given)


@dataclass
class LocalTarget(FakeTarget):
    """A fake throwaway server whose process dbarena knows."""

    def server_pid(self) -> int | None:
        return 4242


PROFILE = Profile(folded="postgres;main;PostgresMain;ExecScan 3\npostgres;main;[postgres] 1\n", frequency_hz=99.0,
                  symbols="perf version 6.1.187; postgres: dynamic symbols only")


def test_each_measured_run_is_profiled_and_no_warm_up(rig: Rig) -> None:  # noqa: F811
    rig.target = LocalTarget(rig.log)
    profiler = FakeProfiler(gives=[PROFILE, "perf took no sample of the server"])
    results = rig.sweep(profiler=profiler).run([spec("pgbench-select-only", 1, warmup_s=2),
                                                spec("pgbench-select-only", 2)])
    # Two measured runs profiled (the server's pid, in the point's work directory), the
    # warm-up not: started before the tool, disabled as it exits, stopped, then read.
    assert [e for e in profiler.log if isinstance(e, tuple)] == [("start", 4242, True), ("start", 4242, True)]
    assert [e for e in profiler.log if isinstance(e, str)] == ["disable", "stop", "read"] * 2
    assert [r.profile for r in results] == [PROFILE, None]
    assert rig.reporter.stages.count("no on-CPU profile of this point: perf took no sample of the server") == 1
    ids = [p.point_id for p in rig.store.points(run_id=rig.run_id)]
    found = rig.store.profiles(ids, folded=True)
    assert list(found) == [ids[0]] and found[ids[0]].folded == PROFILE.folded
    assert found[ids[0]].summary()["top"][0] == {"function": "ExecScan", "share": 0.75}
    warm = [p for p in rig.store.points(run_id=rig.run_id, warmups=True) if p.phase == "warmup"]
    assert warm and not rig.store.profiles([p.point_id for p in warm])


def test_a_profile_that_cannot_start_leaves_the_point_measured(rig: Rig) -> None:  # noqa: F811
    rig.target = LocalTarget(rig.log)
    profiler = FakeProfiler(gives=["no start: perf could not start: Error: no permission"])
    (result,) = rig.sweep(profiler=profiler).run([spec("pgbench-select-only", 1)])
    assert result.ok and result.profile is None
    assert "no on-CPU profile of this point: perf could not start: Error: no permission" in rig.reporter.stages


def test_a_server_dbarena_did_not_start_is_not_profiled(rig: Rig) -> None:  # noqa: F811
    profiler = FakeProfiler(gives=[PROFILE])
    (result,) = rig.sweep(profiler=profiler).run([spec("pgbench-select-only", 1)])
    assert result.ok and result.profile is None and profiler.log == []
