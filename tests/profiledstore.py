"""A store of profiled levels with several points each, built with the library from the
real stacks of tests/fixtures/stores/profiled-sync-async.db (pgbench-tpcb, PostgreSQL
15.18, synchronous_commit on and off, 99 Hz): labels sync and async, levels 1 and 2,
two repeats a level, every ok point profiled with its label's real stacks (the second
repeat's at 50 Hz with half the samples, so that a pool mixes frequencies), and at
level 2 of sync a failed point with a profile that no pool may count. What the report's
pooled profiles are tested on (tests/unit/test_pooled_profiles.py,
tests/e2e/test_flame_browser.py)."""

from __future__ import annotations

import shutil
from datetime import datetime, timezone
from pathlib import Path

from dbarena.model import Measurement, PointResult, PointSpec, Profile, RunInfo
from dbarena.stats import configkey, profiles
from dbarena.store.database import Store

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "stores" / "profiled-sync-async.db"
T0 = datetime(2026, 11, 27, 10, 0, tzinfo=timezone.utc)
HOST = {"cpu_model": "test cpu", "hardware_threads": 2, "memory_bytes": 8 * 2 ** 30, "kernel": "6.1.0"}
# label -> (synchronous_commit, the fixture's point of it, transactions of its repeats)
LABELS = {"sync": ("on", 1, (6000, 7000)), "async": ("off", 2, (13000, 12000))}
LEVELS = (1, 2)


def real_stacks(tmp: Path) -> dict[str, tuple[dict[str, int], str]]:
    """label -> (the fixture point's stacks, perf's symbols line)."""
    copy = tmp / "fixture-copy.db"
    shutil.copy(FIXTURE, copy)
    with Store(copy, readonly=True) as db:
        found = db.profiles([1, 2], folded=True)
    return {label: (profiles.parse_folded(found[point].folded or ""), found[point].symbols)
            for label, (_, point, _) in LABELS.items()}


def halved(stacks: dict[str, int]) -> dict[str, int]:
    return {stack: count // 2 for stack, count in stacks.items() if count // 2}


def build(path: Path) -> Path:
    stacks = real_stacks(path.parent)
    with Store(path) as db:
        for day, (label, (sync, _, committed)) in enumerate(LABELS.items()):
            run_id = db.begin_run(RunInfo(label=label, host="box", engine="postgres", target="throwaway",
                                          started_at=T0.replace(hour=10 + day), server_version="15.18",
                                          tool_versions={}, options={}, host_facts=HOST))
            folded, symbols = stacks[label]
            for level in LEVELS:
                config = configkey.build(
                    engine="postgres", workload="pgbench-tpcb", threads=level, clients=8 * level, duration_s=5,
                    warmup_s=0, params={"scale": 1}, options={}, settings={"synchronous_commit": sync}, variant="",
                    server_version="15.18", flavour="postgresql", host=configkey.host_identity(HOST))
                for repeat, transactions in enumerate(committed):
                    spec = PointSpec(engine="postgres", workload="pgbench-tpcb", threads=level, clients=8 * level,
                                     duration_s=5, params=(("scale", 1),), repeat=repeat)
                    profile = (Profile(profiles.folded_text(folded), 99.0, symbols) if repeat == 0 else
                               Profile(profiles.folded_text(halved(folded)), 50.0, symbols))
                    db.add_point(run_id, PointResult(
                        spec=spec, status="ok", started_at=T0, ended_at=T0, command=("pgbench",), exit_code=0,
                        stdout="", stderr="", profile=profile,
                        measurement=Measurement(tps=transactions / 5, transactions=transactions)), config=config)
                if label == "sync" and level == 2:
                    spec = PointSpec(engine="postgres", workload="pgbench-tpcb", threads=level, clients=8 * level,
                                     duration_s=5, params=(("scale", 1),), repeat=2)
                    db.add_point(run_id, PointResult(
                        spec=spec, status="failed", started_at=T0, ended_at=T0, command=("pgbench",), exit_code=1,
                        stdout="", stderr="pgbench: error", error="pgbench: error",
                        profile=Profile(profiles.folded_text({"postgres;failed_only_function": 1000}), 99.0, symbols),
                        measurement=Measurement(tps=100.0, transactions=500)), config=config)
            db.finish_run(run_id, "finished")
    return path
