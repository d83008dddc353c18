"""What changed between two runs (stats/environment.py), the one derivation history's
causes use: a fact that appears or disappears counts where both runs recorded its kind
in full (a setting set from its default, a run confined to one CPU), a fact of a kind one
run did not record is unknown rather than changed, and a throwaway instance's own
port, directories and address never count. Then `history` on stores built with the
library names those causes at the change point."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from dbarena.model import Measurement, PointResult, PointSpec, RunInfo
from dbarena.stats import configkey, environment, history
from dbarena.records import StoredRun
from dbarena.store.database import Store

import points

HOST = {"cpu_model": "test cpu", "hardware_threads": 2, "memory_bytes": 8 * 2 ** 30, "kernel": "6.1.0",
        "usable_cpus": "0-1", "usable_hardware_threads": 2}
CONFINED = {**HOST, "usable_cpus": "0", "usable_hardware_threads": 1}
T0 = datetime(2026, 11, 1, tzinfo=timezone.utc)


def config(settings: dict[str, str], host: dict[str, Any] | None = None, options: dict[str, str] | None = None,
           target: str | None = None) -> dict[str, Any]:
    return configkey.build(engine="postgres", workload="pgbench-tpcb", threads=1, clients=2, duration_s=60,
                           warmup_s=0, params={"scale": 1}, options=options or {}, settings=settings, variant="",
                           server_version="17.2", flavour="postgresql",
                           host=configkey.host_identity(host or HOST, target))


def run(non_default: dict[str, str] | None, host: dict[str, Any] | None = None) -> StoredRun:
    target_facts = {} if non_default is None else {"non_default_settings": non_default}
    return points.run(server_version="17.2", host_facts=host or HOST, host="box", target_facts=target_facts)


def texts(before: environment.Environment, after: environment.Environment) -> list[str]:
    return [c.text() for c in environment.changes(before, after)]


def test_a_setting_set_from_its_default_is_a_change_beside_the_one_that_flipped():
    """The issue's case: synchronous_commit off -> on, with commit_delay and
    commit_siblings set where they were at their defaults before."""
    before = environment.of_run(run({"synchronous_commit": "off", "port": "5001"}),
                                config({"synchronous_commit": "off"}))
    after_settings = {"synchronous_commit": "on", "commit_delay": "10000", "commit_siblings": "0"}
    after = environment.of_run(run({"commit_delay": "10000", "commit_siblings": "0", "port": "5002"}),
                               config(after_settings))
    assert texts(before, after) == ["setting commit_delay default -> 10000", "setting commit_siblings default -> 0",
                                    "setting synchronous_commit off -> on"]
    # and back: a setting no longer set went to its default
    assert "setting commit_delay 10000 -> default" in texts(after, before)


def test_a_run_confined_to_one_cpu_changed_its_usable_cpus():
    whole = environment.of_run(run({}), config({}))
    confined = environment.of_run(run({}, CONFINED), config({}, CONFINED))
    assert texts(whole, confined) == ["usable CPUs all -> 0"]
    assert texts(confined, whole) == ["usable CPUs 0 -> all"]


def test_a_kind_one_run_did_not_record_is_unknown_there_not_a_change():
    """An import or an older store without the server's settings: commit_delay absent
    there is not known to be at its default."""
    unknown = environment.of_run(run(None), config({"synchronous_commit": "off"}))
    known = environment.of_run(run({"commit_delay": "10000", "synchronous_commit": "off"}),
                               config({"synchronous_commit": "off"}))
    assert texts(unknown, known) == [] and texts(known, unknown) == []


def test_a_throwaway_instances_own_facts_never_count():
    one = environment.of_run(run({"port": "5001", "unix_socket_directories": "/tmp/a", "data_directory": "/tmp/a"}),
                             config({}, None, target="postgresql://dbarena@10.0.0.5:5001/dbarena"))
    two = environment.of_run(run({"port": "5002", "unix_socket_directories": "/tmp/b", "data_directory": "/tmp/b"}),
                             config({}, None, target="postgresql://dbarena@10.0.0.5:5002/dbarena"))
    assert texts(one, two) == []
    assert one.facts["target"] == "10.0.0.5"


def test_a_tool_option_given_on_one_side_only_is_a_change():
    plain = environment.of_run(run({}), config({}))
    prepared = environment.of_run(run({}), config({}, options={"protocol": "prepared"}))
    assert texts(plain, prepared) == ["option protocol the tool's default -> prepared"]


def _add(db: Store, day: int, tps: float, settings: dict[str, str], non_default: dict[str, str],
         host: dict[str, Any]) -> None:
    run_id = db.begin_run(RunInfo(
        label="n", host="box", engine="postgres", target="postgresql://dbarena@127.0.0.1:1/dbarena",
        started_at=T0 + timedelta(days=day), server_version="17.2", tool_versions={}, options={"targets": {}},
        host_facts=host, target_facts={"non_default_settings": {**non_default, "port": str(5000 + day)}}))
    for repeat, wobble in enumerate((1.0, 1.004, 0.996)):
        spec = PointSpec(engine="postgres", workload="pgbench-tpcb", threads=1, clients=2, duration_s=60,
                         params=(("scale", 1),), repeat=repeat)
        db.add_point(run_id, PointResult(spec=spec, status="ok", started_at=T0, ended_at=T0, command=("tool",),
                                         exit_code=0, stdout="", stderr="",
                                         measurement=Measurement(tps=tps * wobble, transactions=int(tps * 60))),
                     config=config(settings, host))
    db.finish_run(run_id, "finished")


def _step(path: Path) -> history.ChangePoint:
    with Store(path) as db:
        (series,) = history.of_store(db).series
    (found,) = series.change_points
    return found


def test_history_names_the_cpus_for_a_step_caused_by_confinement(tmp_path: Path):
    path = tmp_path / "cpus.db"
    with Store(path) as db:
        for day in range(8):
            confined = day >= 4
            _add(db, day, (500.0 if confined else 1000.0) * (1 + 0.01 * (day % 3 - 1)), {}, {},
                 CONFINED if confined else HOST)
    found = _step(path)
    assert found.run_id == 5 and found.change_pct < -40
    assert [c.text() for c in found.causes] == ["usable CPUs all -> 0"]
    assert "no recorded fact changed here" not in found.summary()


def test_history_names_every_changed_setting_including_one_set_from_its_default(tmp_path: Path):
    path = tmp_path / "settings.db"
    after = {"synchronous_commit": "on", "commit_delay": "10000", "commit_siblings": "0"}
    with Store(path) as db:
        for day in range(8):
            late = day >= 4
            _add(db, day, (50.0 if late else 1000.0) * (1 + 0.01 * (day % 3 - 1)),
                 after if late else {"synchronous_commit": "off"},
                 {"commit_delay": "10000", "commit_siblings": "0"} if late else {"synchronous_commit": "off"}, HOST)
    found = _step(path)
    assert found.run_id == 5
    assert [c.text() for c in found.causes] == ["setting commit_delay default -> 10000",
                                                "setting commit_siblings default -> 0",
                                                "setting synchronous_commit off -> on"]
