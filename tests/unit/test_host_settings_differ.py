"""The kernel's settings (host/tuning.py) where runs are compared: named among what
changed between two runs (stats/environment.py: History's causes, serve's run diff), in
the report's "What differs", and kept out of the configuration key (stats/configkey.py
says why), so that they explain a difference and never forbid a comparison."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from dbarena.model import Measurement, PointResult, PointSpec, RunInfo
from dbarena.report import data
from dbarena.report.tables import what_differs
from dbarena.stats import analysis, configkey, environment
from dbarena.store.database import Store

import points

T0 = datetime(2026, 11, 1, tzinfo=timezone.utc)
# As host/tuning.py read this VM (tests/fixtures/hostinfo/x86_64-this-vm.tuning).
VM: dict[str, Any] = {
    "cpu_model": "AMD EPYC", "hardware_threads": 2, "memory_bytes": 8 * 2 ** 30, "kernel": "6.18.44-fc-v657",
    "hugepages_total": 0, "hugepages_free": 0, "hugepage_size_kib": 2048, "nr_hugepages": 0,
    "transparent_hugepage": "madvise", "transparent_hugepage_defrag": "madvise",
    "kernel_preemption": "none", "kernel_preemption_source": "kernel config (the boot default)",
    "frequency_governor": "not exposed", "frequency_driver": "not exposed", "idle_driver": "haltpoll",
    "idle_governor": "haltpoll", "idle_states": "POLL, haltpoll idle", "numa_balancing": "off",
    "irqbalance": "not running"}
TUNED = {**VM, "transparent_hugepage": "never", "kernel_preemption": "lazy", "kernel_preemption_source": "debugfs",
         "hugepages_total": 3170, "hugepages_free": 12, "nr_hugepages": 3170}


def env(host: dict[str, Any]) -> environment.Environment:
    return environment.of_run(points.run(host_facts=host, target_facts={}), {})


def test_a_changed_kernel_setting_is_a_change_between_runs():
    changes = [c.text() for c in environment.changes(env(VM), env(TUNED))]
    # After the settings, CPUs and server: the kernel's ("kernel preemption" with it), then
    # the other settings in HOST_SETTINGS' order; the free huge pages and where the model
    # was read are not causes.
    assert changes == ["kernel preemption none -> lazy", "huge pages (kernel pool) 0 -> 3170",
                       "transparent huge pages madvise -> never"]


def test_a_run_recorded_before_dbarena_read_them_knows_none_of_them():
    old = {k: v for k, v in VM.items() if k in ("cpu_model", "hardware_threads", "memory_bytes", "kernel")}
    assert environment.changes(env(old), env(TUNED)) == []
    assert environment.changes(env(TUNED), env(old)) == []


def test_hostile_values_are_shown_not_computed_with():
    odd = {**VM, "transparent_hugepage": {"x": [1]}, "numa_balancing": 3}
    assert [c.text() for c in environment.changes(env(VM), env(odd))] == [
        "transparent huge pages madvise -> {'x': [1]}", "NUMA balancing off -> 3"]


def test_they_stay_out_of_the_configuration_key():
    assert configkey.host_identity(VM) == configkey.host_identity(TUNED)


def test_the_reports_what_differs_names_them(tmp_path):
    db = Store(tmp_path / "w.db")
    for label, host in (("a", VM), ("b", TUNED)):
        run_id = db.begin_run(RunInfo(
            label=label, host="box", engine="postgres", target="postgresql://dbarena@127.0.0.1:5001/dbarena",
            started_at=T0, server_version="15.18", tool_versions={}, options={"targets": {}}, host_facts=host,
            target_facts={"non_default_settings": {}}))
        spec = PointSpec(engine="postgres", workload="pgbench-tpcb", threads=1, clients=2, duration_s=60,
                         params=(("scale", 10),))
        db.add_point(run_id, PointResult(spec=spec, status="ok", started_at=T0, ended_at=T0, command=("pgbench",),
                                         exit_code=0, stdout="", stderr="",
                                         measurement=Measurement(tps=100.0, transactions=6000)))
        db.finish_run(run_id, "finished")
    split = what_differs(data.build(analysis.load(db), db.runs()))
    db.close()
    assert split is not None
    differ, same = split
    rows = {r[0]: r[1:] for r in differ.rows}
    assert rows["transparent huge pages"] == ["madvise", "never"]
    assert rows["kernel preemption"] == ["none", "lazy"]
    assert rows["huge pages (kernel pool)"] == ["0", "3170"]
    assert ["CPU idle states", "POLL, haltpoll idle", "POLL, haltpoll idle"] in same.rows
    assert ["CPU frequency governor", "not exposed", "not exposed"] in same.rows


def server(target_facts: dict[str, Any]) -> environment.Environment:
    return environment.of_run(points.run(host_facts=VM, target_facts=target_facts), {})


def test_the_servers_huge_pages_as_asked_and_as_got():
    pg15 = {"huge_pages": {"huge_page_size": "0", "huge_pages": "try"}}  # as this VM's PostgreSQL 15 said
    pg17 = {"huge_pages": {"huge_page_size": "0", "huge_pages": "try", "huge_pages_status": "off"}}
    assert environment.server_huge_pages(pg15) == "try"
    assert environment.server_huge_pages(pg17) == "try (got off)"
    assert environment.server_huge_pages({"huge_pages": {"huge_pages": "on", "huge_page_size": "1GB",
                                                         "huge_pages_status": "on"}}) == "on, 1GB pages (got on)"
    mariadb = {"key_variables": {"large_pages": "OFF", "large_page_size": "0"}}  # this VM's MariaDB 10.11
    assert environment.server_huge_pages(mariadb) == "large_pages OFF"
    assert environment.server_huge_pages({"key_variables": {"large_pages": "ON", "large_page_size": "2097152"}}) == \
        "large_pages ON, large_page_size 2097152"
    # Not recorded (before dbarena asked), or not an object: nothing said.
    assert environment.server_huge_pages({"non_default_settings": {}}) is None
    assert environment.server_huge_pages({"huge_pages": "on"}) is None
    # 'try' that got huge pages once the kernel had a pool: the change History names.
    got = {"huge_pages": {**pg17["huge_pages"], "huge_pages_status": "on"}}
    assert [c.text() for c in environment.changes(server(pg17), server(got))] == [
        "server huge pages try (got off) -> try (got on)"]
    assert environment.changes(server({}), server(got)) == []


def test_mysql_key_variables_are_settings_where_runs_differ():
    """MariaDB's large_pages, and every key variable, where two runs recorded them: a
    change between runs and a setting What differs names (not recorded in full: one a
    run lacks is unknown there)."""
    off = {"key_variables": {"large_pages": "OFF", "innodb_buffer_pool_size": "134217728"}}
    on = {"key_variables": {"large_pages": "ON", "innodb_buffer_pool_size": "134217728", "socket": "/tmp/x"}}
    assert [c.text() for c in environment.changes(server(off), server(on))] == [
        "setting large_pages OFF -> ON", "server huge pages large_pages OFF -> large_pages ON"]
    assert environment.changes(server({"key_variables": {}}), server(on)) == []
