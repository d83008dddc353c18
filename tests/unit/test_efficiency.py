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


def test_the_figure_that_differs_most_over_sessions_is_said_as_the_issue_says_it():
    means, a = efficiency.of_group([(1, {"server_cpu_us_per_tx": 29.0, "write_kb_per_tx": 1.0}),
                                    (1, {"server_cpu_us_per_tx": 30.4}), (2, {"server_cpu_us_per_tx": 29.7,
                                                                               "write_kb_per_tx": 1.2}),
                                    (3, {"server_cpu_us_per_tx": 29.8, "write_kb_per_tx": 0.9})])
    assert a["server_cpu_us_per_tx"] == pytest.approx((29.7, 29.7, 29.8))
    # (Each figure's mean over the points that have it, beside its means by session.)
    assert means == pytest.approx({"server_cpu_us_per_tx": 29.725, "write_kb_per_tx": 31 / 30})
    _, b = efficiency.of_group([(4, {"server_cpu_us_per_tx": 41.0, "write_kb_per_tx": 1.1}),
                                (5, {"server_cpu_us_per_tx": 40.6, "write_kb_per_tx": 0.8}),
                                (6, {"server_cpu_us_per_tx": 41.4, "write_kb_per_tx": 1.3})])
    found = efficiency.differs_most(a, b, one_host=True)
    assert found is not None and found.name == "server_cpu_us_per_tx" and found.p_value is not None
    assert found.words("alpha", "beta") == "beta uses 38 % more server CPU per transaction: 41 against 29.7 us"
    assert efficiency.Difference.of_json(found.as_json()) == found


def test_an_a_a_pair_names_no_figure_that_one_sessions_flush_made_large():
    # Seen on this machine: one configuration, two labels, two sessions each; one session
    # of A wrote 0.26 KB a transaction (a background flush), the others 0.0004.
    a = {"write_kb_per_tx": (0.264, 0.000402), "server_cpu_us_per_tx": (101.0, 97.0),
         "context_switches_per_tx": (2.1, 2.3)}
    b = {"write_kb_per_tx": (0.000398, 0.000406), "server_cpu_us_per_tx": (99.0, 103.0),
         "context_switches_per_tx": (2.2, 2.15)}
    assert efficiency.differs_most(a, b, one_host=True) is None
    assert efficiency.differs_most(a, b, one_host=False) is None


def test_one_session_a_side_names_nothing_its_spread_unknown():
    a = {"server_cpu_us_per_tx": (29.7,)}
    b = {"server_cpu_us_per_tx": (41.0,)}
    assert efficiency.differs_most(a, b, one_host=True) is None


def test_a_difference_significant_alone_is_not_named_among_several_figures_tried():
    # Three sessions a side, pooled (4 degrees of freedom): the server CPU's ratio has a
    # p-value between 0.05 / 3 and 0.05, so alone it is named, among three figures not.
    a = {"server_cpu_us_per_tx": (100.0, 103.0, 97.0)}
    b = {"server_cpu_us_per_tx": (108.0, 111.0, 105.0)}
    alone = efficiency.differs_most(a, b, one_host=True)
    assert alone is not None and alone.p_value is not None and 0.05 / 3 < alone.p_value < 0.05
    more = {**a, "context_switches_per_tx": (2.0, 2.1, 1.9), "write_kb_per_tx": (1.0, 1.1, 0.9)}
    others = {**b, "context_switches_per_tx": (2.0, 2.05, 1.95), "write_kb_per_tx": (1.0, 1.05, 0.95)}
    assert efficiency.differs_most(more, others, one_host=True) is None


def test_figures_below_their_floor_are_not_compared_nor_given_a_percentage():
    assert efficiency.differs_most({"read_kb_per_tx": (0.0001, 0.0002)}, {"read_kb_per_tx": (0.0009, 0.0008)},
                                   one_host=True) is None
    found = efficiency.differs_most({"context_switches_per_tx": (2.0, 2.02)}, {"context_switches_per_tx": (1.0, 1.01)},
                                    one_host=True)
    assert found is not None and found.words("a", "b").startswith("b uses 50 % fewer context switches")
    tiny = efficiency.Difference("write_kb_per_tx", 0.000402, 0.132)
    assert tiny.words("a", "b") == "b uses more disk writes per transaction: 0.132 against 0.000402 KB"
