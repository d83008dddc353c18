"""Cost per transaction (stats/efficiency.py): a point's figures from its means, a
side's mean, and the figure two sides differ in most, in words."""

from __future__ import annotations

import pytest

from dbarena.stats import efficiency


def test_a_points_cost_per_transaction_from_its_means_and_the_servers_counters():
    found = efficiency.of_point(1000.0, server_cpu=1.5, loadgen_cpu=0.5, context_switches_per_s=4000.0,
                                disk_read_bytes_per_s=None, disk_write_bytes_per_s=2048_000.0,
                                server_figures={"wal_bytes": 512.0, "blks_read": 0.25, "xact_commit": 1.0})
    assert found == {"server_cpu_us_per_tx": 1500.0, "loadgen_cpu_us_per_tx": 500.0, "context_switches_per_tx": 4.0,
                     "write_kb_per_tx": 2.0, "wal_bytes_per_tx": 512.0, "buffer_reads_per_tx": 0.25}
    innodb = efficiency.of_point(10.0, server_cpu=None, loadgen_cpu=None, context_switches_per_s=None,
                                 disk_read_bytes_per_s=None, disk_write_bytes_per_s=None,
                                 server_figures={"status.Innodb_os_log_written": 900.0,
                                                 "status.Innodb_buffer_pool_reads": 2.0})
    assert innodb == {"redo_bytes_per_tx": 900.0, "buffer_reads_per_tx": 2.0}
    assert efficiency.of_point(None, server_cpu=1.0, loadgen_cpu=None, context_switches_per_s=None,
                               disk_read_bytes_per_s=None, disk_write_bytes_per_s=None, server_figures=None) is None


def test_the_figure_that_differs_most_is_said_as_the_issue_says_it():
    a = efficiency.mean([{"server_cpu_us_per_tx": 29.0, "write_kb_per_tx": 1.0}, {"server_cpu_us_per_tx": 30.4}])
    b = efficiency.mean([{"server_cpu_us_per_tx": 41.0, "write_kb_per_tx": 1.1}])
    assert a["server_cpu_us_per_tx"] == pytest.approx(29.7)
    found = efficiency.differs_most(a, b)
    assert found is not None and found.name == "server_cpu_us_per_tx"
    assert found.words("alpha", "beta") == "beta uses 38 % more server CPU per transaction: 41 against 29.7 us"


def test_figures_below_their_floor_are_not_compared():
    assert efficiency.differs_most({"read_kb_per_tx": 0.0001}, {"read_kb_per_tx": 0.0009}) is None
    found = efficiency.differs_most({"context_switches_per_tx": 2.0}, {"context_switches_per_tx": 1.0})
    assert found is not None and found.words("a", "b").startswith("b uses 50 % fewer context switches")
