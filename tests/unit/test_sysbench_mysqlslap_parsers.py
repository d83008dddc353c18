"""sysbench and mysqlslap parsers over real outputs, byte for byte: the public corpus
(copied from ../shared/corpus with its SOURCES.tsv: sysbench 0.4.12 to 1.1.0,
mysqlslap 5.6 / 5.7+) and our own captures (sysbench 1.0.20 with --histogram on both
drivers, MariaDB 10.11's mysqlslap; tests/fixtures/capture records them).

Expected values were read off the text of each file.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dbarena.errors import ParseError
from dbarena.interfaces import Client, PointInput
from dbarena.model import Connection, PointSpec
from dbarena.workloads import mysqlslap, sysbench

FIXTURES = Path(__file__).parent.parent / "fixtures"
SB_CORPUS = FIXTURES / "sysbench" / "corpus"
SB_CAPTURED = FIXTURES / "sysbench" / "captured"
SLAP_CORPUS = FIXTURES / "mysqlslap" / "corpus"
SLAP_CAPTURED = FIXTURES / "mysqlslap" / "captured"
SHARED = Path(__file__).resolve().parents[3] / "shared" / "corpus"

# file -> (version, threads, transactions, tps, queries, qps, errors, reconnects, total_time_s, events,
#          latency min, avg, max, printed percentile, its value, interval lines)
SB_CORPUS_EXPECTED = {
    "sysbench-0.4.12-oltp-ro-mysql.txt": (
        "0.4.12", 1, 212131, 3535.50, 424262, 3535.50 + 3535.50, None, None, 60.0003, 212131,
        0.16, 0.28, 0.99, 95, 0.35, 0),
    "sysbench-0.5-oltp-mysql-pkb.txt": (
        "0.5", 2, 182218, 151.85, 3644360, 2733.24 + 303.69, 0, 0, 1200.0136, 182218,
        10.49, 13.17, 210.53, 99, 17.73, 600),
    "sysbench-0.5-oltp-ro-mysql-95pct.txt": (
        "0.5", 128, 259812, 4258.44, 4156992, 59618.14 + 8516.88, 0, 0, 61.0111, 259812,
        2.24, 30.05, 356.93, 95, 86.15, 30),
    "sysbench-0.5-early-oltp-ro-mysql.txt": (
        "0.5", 8, 1598836, 5294.13, 25581376, 74117.79 + 10588.26, None, None, 302.0018, 1598836,
        1.25, 1.51, 3.14, 95, 1.73, 60),
    "sysbench-1.0.9-oltp-insert-mysql-pct99-systemluajit204.txt": (
        "1.0.9", 400, 558494, 9273.20, 558494, 9273.20, 0, 0, 60.2244, 558494,
        3.89, 43.02, 2881.01, 99, 253.35, 12),
    "sysbench-1.0.12-oltp-rw-mysql-pkb.txt": (
        "1.0.12", 16, 29611, 986.49, 592237, 19730.45, 1, 0, 30.0145, 29611,
        12.38, 16.21, 115.78, 100, 116.80, 15),
    "sysbench-1.0.20-oltp-insert-pgsql.txt": (
        "1.0.20", 10, 127517, 12717.23, 127517, 12717.23, 0, 0, 10.0247, 127517,
        0.09, 0.78, 31.87, 95, 1.32, 0),
    "sysbench-1.0.20-oltp-legacy-ro-pgsql-opengauss.txt": (
        "1.0.20", 10, 1509625, 25158.92, 1509625, 25158.92, 0, 0, 60.0021, 1509625,
        0.15, 0.40, 11483.87, 95, 0.53, 30),
    "sysbench-1.0.20-oltp-legacy-rw-pgsql-libpq-warning.txt": (
        "1.0.20", 10, 14935, 248.65, 298718, 4973.34, 1, 0, 60.0551, 14935,
        31.99, 40.17, 255.50, 95, 53.85, 30),
    "sysbench-1.0.20-oltp-read-only-pgsql.txt": (
        "1.0.20", 10, 12095, 1207.37, 193520, 19317.90, 0, 0, 10.0157, 12095,
        6.42, 8.27, 25.79, 95, 9.22, 0),
    "sysbench-1.0.20-oltp-rw-mysql-ri3-riscv-luajit.txt": (
        "1.0.20", 64, 10349, 171.50, 206980, 3430.03, 0, 0, 60.3230, 10349,
        240.27, 372.11, 607.57, 95, 442.73, 20),
    "sysbench-1.0.20-oltp-rw-mysql-ri3-systemluajit.txt": (
        "1.0.20", 10, 3671, 61.01, 73420, 1220.16, 0, 0, 60.1712, 3671,
        19.13, 163.68, 494.14, 95, 292.60, 20),
    "sysbench-1.0.20-oltp-rw-pgsql-high-errors.txt": (
        "1.0.20", 40, 8359, 139.06, 176848, 2942.02, 546, 0, 60.1092, 8359,
        2.77, 287.34, 10163.18, 95, 1903.57, 12),
    "sysbench-1.0.20-oltp-rw-pgsql-ri30-errors.txt": (
        "1.0.20", 8, 41545, 69.19, 831008, 1383.97, 6, 0, 600.4503, 41545,
        4.07, 115.62, 10238.76, 95, 657.93, 20),
    "sysbench-1.1.0-oltp-rw-pgsql.txt": (
        "1.1.0", 24, 3640, 362.47, 58240, 5799.57, 0, 0, 10.0421, 3640,
        14.32, 66.15, 289.20, 95, 144.97, 0),
    "sysbench-1.1.0-oltp-rw-pgsql-debug-verbosity5.txt": (
        "1.1.0", 24, 19616, 1959.48, 313856, 31351.75, 0, 0, 10.0108, 19616,
        3.42, 12.24, 80.33, 95, 68.05, 0),
}

# Our captures: (transactions, tps, queries, qps, errors, total time, min, avg, max, printed p95, first interval)
SB_CAPTURED_EXPECTED = {
    "sysbench-1.0.20-oltp-read-only-mysql-histogram": (
        4625, 2309.74, 74000, 36955.91, 0, 2.0020, 0.62, 0.86, 3.56, 1.64,
        dict(second=1.0, threads=2, tps=1661.86, qps=26604.72, reads_per_s=23279.01, writes_per_s=0.0,
             other_per_s=3325.72, latency_percentile=95.0, latency_pct_ms=1.82, errors_per_s=0.0, reconnects_per_s=0.0)),
    "sysbench-1.0.20-oltp-read-only-pgsql-histogram": (
        7315, 3646.57, 117040, 58345.09, 0, 2.0057, 0.49, 0.55, 4.45, 0.67,
        dict(second=1.0, tps=3626.15, qps=58042.43, latency_pct_ms=0.68)),
    "sysbench-1.0.20-oltp-read-write-mysql-histogram": (
        1475, 736.56, 29500, 14731.13, 0, 2.0022, 1.12, 2.71, 10.33, 3.82,
        dict(second=1.0, tps=795.43, qps=15922.49, reads_per_s=11148.94, writes_per_s=3181.70, other_per_s=1591.85)),
    "sysbench-1.0.20-oltp-read-write-pgsql-histogram": (
        2178, 1085.63, 43650, 21757.42, 5, 2.0059, 0.89, 1.84, 5.43, 2.18,
        dict(second=1.0, tps=1150.08, errors_per_s=2.0)),
    "sysbench-1.0.20-oltp-write-only-mysql-histogram": (
        5442, 2717.46, 32662, 16309.72, 4, 2.0023, 0.38, 0.73, 3.96, 1.03,
        dict(second=1.0, tps=2746.98, errors_per_s=3.0)),
    "sysbench-1.0.20-oltp-write-only-pgsql-histogram": (
        2943, 1468.21, 17752, 8856.14, 24, 2.0041, 0.30, 1.36, 1002.26, 0.99,
        dict(second=1.0, tps=1826.46, errors_per_s=15.99)),
}


@pytest.mark.parametrize("name", sorted(SB_CORPUS_EXPECTED))
def test_sysbench_corpus(name):
    (version, threads, tx, tps, queries, qps, errors, reconnects, total_time, events,
     lmin, lavg, lmax, pct, pct_value, n_intervals) = SB_CORPUS_EXPECTED[name]
    r = sysbench.parse((SB_CORPUS / name).read_text())
    assert (r.version, r.threads, r.transactions, r.queries, r.errors, r.reconnects, r.events) == (
        version, threads, tx, queries, errors, reconnects, events)
    assert r.tps == pytest.approx(tps) and r.qps == pytest.approx(qps) and r.total_time_s == pytest.approx(total_time)
    assert (r.latency_min_ms, r.latency_avg_ms, r.latency_max_ms) == pytest.approx((lmin, lavg, lmax))
    assert (r.percentile, r.latency_pct_ms) == (pct, pytest.approx(pct_value))
    assert len(r.samples) == n_intervals
    m = r.to_measurement()
    # Without a histogram only the printed percentile is known, in its own slot.
    slots = {50: m.latency_p50_ms, 95: m.latency_p95_ms, 99: m.latency_p99_ms}
    for p, value in slots.items():
        assert value == (pct_value if p == pct else None)


def test_sysbench_05_interval_line():
    r = sysbench.parse((SB_CORPUS / "sysbench-0.5-oltp-ro-mysql-95pct.txt").read_text())
    s = r.samples[0]
    assert (s.second, s.threads, s.tps, s.reads_per_s, s.writes_per_s, s.latency_pct_ms, s.latency_percentile,
            s.errors_per_s, s.reconnects_per_s) == (2.0, 128, 3546.24, 50417.76, 0.0, 120.54, 95.0, 0.0, 0.0)
    assert s.qps is None and s.other_per_s is None


def test_sysbench_05_early_interval_line_and_read_write_requests():
    # 2013's 0.5: "reads/s:" and "writes/s:", no errors or reconnects (which stay None,
    # not 0: the tool did not say).
    r = sysbench.parse((SB_CORPUS / "sysbench-0.5-early-oltp-ro-mysql.txt").read_text())
    s = r.samples[0]
    assert (s.second, s.threads, s.tps, s.reads_per_s, s.writes_per_s, s.latency_pct_ms, s.latency_percentile) == (
        5.0, 8, 5271.11, 73811.70, 0.0, 1.70, 95.0)
    assert s.errors_per_s is None and s.reconnects_per_s is None and s.qps is None
    assert r.samples[-1].second == 300.0
    # The figure MariaDB's published series call QPS: read/write requests, kept beside
    # sysbench's total (which counts BEGIN/COMMIT as "other operations").
    m = r.to_measurement()
    assert m.details["rw_requests_per_s"] == 74117.79 and m.qps == 84706.05


@pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/corpus not beside this checkout")
def test_sysbench_tpcc_outputs_read_too():
    r = sysbench.parse((SHARED / "sysbench-tpcc" / "sysbench-tpcc-pgsql-summary-only-pg11.txt").read_text())
    assert (r.transactions, r.tps, r.errors, r.queries) == (14807, 24.68, 51, 422640)


@pytest.mark.parametrize("name", sorted(SB_CAPTURED_EXPECTED))
def test_sysbench_captured_with_histogram(name):
    tx, tps, queries, qps, errors, total_time, lmin, lavg, lmax, printed_p95, first = SB_CAPTURED_EXPECTED[name]
    stdout = (SB_CAPTURED / f"{name}.stdout").read_text()
    r = sysbench.parse(stdout, (SB_CAPTURED / f"{name}.stderr").read_text())
    assert (r.version, r.threads, r.report_interval_s, r.transactions, r.queries, r.errors, r.reconnects) == (
        "1.0.20", 2, 1, tx, queries, errors, 0)
    assert (r.tps, r.qps, r.total_time_s) == pytest.approx((tps, qps, total_time))
    assert (r.latency_min_ms, r.latency_avg_ms, r.latency_max_ms, r.latency_pct_ms) == pytest.approx(
        (lmin, lavg, lmax, printed_p95))
    assert len(r.samples) == 2
    for key, value in first.items():
        assert getattr(r.samples[0], key) == value, key
    # The histogram holds every event of the run ...
    assert sum(count for _, count in r.histogram) == r.events
    assert len(r.histogram) == stdout.count(" |")
    # ... and our p95 from it is the bucket sysbench printed as its percentile. The two
    # prints round the same bucket value differently (histogram: 3 decimals, summary:
    # 2), so they agree within 0.005 + 0.0005 (1.025 in one, 1.03 in the other).
    m = r.to_measurement()
    assert m.latency_p95_ms == pytest.approx(printed_p95, abs=0.0055)
    assert m.latency_p50_ms <= m.latency_p95_ms <= m.latency_p99_ms <= lmax + 0.01
    assert m.latency_p50_ms >= lmin - 0.01
    assert m.details["histogram_ms"][0] == list(r.histogram[0])


# The scripts of Debian's sysbench 1.0.20 beyond the three above, each captured through
# `dbarena run` on a throwaway MariaDB 10.11.19 (1 thread, 5 s, 1 table of 1000 rows;
# captured/SOURCES.tsv has the commands). Read off each file's text:
# name -> (transactions, tps, read, write, other, queries, qps, total time s, events,
#          latency min, avg, max, printed 95th percentile, sum, interval lines, histogram rows,
#          first interval line (tps, qps, r, w, o, lat))
SB_SCRIPTS_EXPECTED = {
    "sysbench-1.0.20-oltp-point-select-mysql-histogram": (
        48754, 9738.61, 48754, 0, 0, 48754, 9738.61, 5.0059, 48754, 0.03, 0.10, 47.87, 0.18, 4977.22, 5, 318,
        (17867.40, 17867.40, 17867.40, 0.00, 0.00, 0.12)),
    "sysbench-1.0.20-oltp-insert-mysql-histogram": (
        3823, 764.11, 0, 3823, 0, 3823, 764.11, 5.0028, 3823, 0.17, 1.30, 12.32, 4.18, 4983.56, 4, 225,
        (965.50, 965.50, 0.00, 965.50, 0.00, 4.10)),
    "sysbench-1.0.20-oltp-delete-mysql-histogram": (
        34890, 6969.06, 0, 479, 34411, 34890, 6969.06, 5.0060, 34890, 0.02, 0.14, 11.15, 0.22, 4974.14, 5, 332,
        (6306.94, 6306.94, 0.00, 357.66, 5949.28, 0.25)),
    "sysbench-1.0.20-oltp-update-index-mysql-histogram": (
        3558, 711.11, 0, 3558, 0, 3558, 711.11, 5.0030, 3558, 0.20, 1.40, 432.36, 4.18, 4990.81, 4, 232,
        (545.86, 545.86, 0.00, 545.86, 0.00, 3.89)),
    "sysbench-1.0.20-oltp-update-non-index-mysql-histogram": (
        2411, 481.78, 0, 2411, 0, 2411, 481.78, 5.0040, 2411, 0.19, 2.07, 268.39, 5.57, 4991.39, 4, 236,
        (423.59, 423.59, 0.00, 423.59, 0.00, 5.00)),
    "sysbench-1.0.20-select-random-points-mysql-histogram": (
        5173, 1032.95, 5173, 0, 0, 5173, 1032.95, 5.0076, 5173, 0.24, 0.96, 18.94, 3.62, 4986.87, 4, 208,
        (1484.21, 1484.21, 1484.21, 0.00, 0.00, 2.14)),
    "sysbench-1.0.20-select-random-ranges-mysql-histogram": (
        8519, 1699.59, 8519, 0, 0, 8519, 1699.59, 5.0120, 8519, 0.10, 0.59, 197.58, 2.66, 4988.55, 5, 243,
        (1640.12, 1640.12, 1640.12, 0.00, 0.00, 2.91)),
    # A transaction (event) is one row appended to the thread's multi-row INSERT; the
    # queries are the INSERTs sent when the buffer fills, and the DROP/CREATE TABLE of
    # dbarena's wrapper are printed around the run.
    "sysbench-1.0.20-bulk-insert-mysql-histogram": (
        1084592, 212036.86, 0, 34, 2, 36, 7.04, 5.1148, 1084592, 0.00, 0.00, 227.18, 0.00, 4818.71, 5, 277,
        (177558.27, 5.99, 0.00, 4.00, 2.00, 0.00)),
}


@pytest.mark.parametrize("name", sorted(SB_SCRIPTS_EXPECTED))
def test_sysbench_captured_scripts(name):
    (tx, tps, reads, writes, other, queries, qps, total_time, events, lmin, lavg, lmax, printed_p95, lsum,
     intervals, rows, first) = SB_SCRIPTS_EXPECTED[name]
    stdout = (SB_CAPTURED / f"{name}.stdout").read_text()
    stderr = (SB_CAPTURED / f"{name}.stderr").read_text()
    assert stderr == ""
    r = sysbench.parse(stdout, stderr)
    assert (r.version, r.threads, r.report_interval_s, r.percentile) == ("1.0.20", 1, 1, 95.0)
    assert (r.transactions, r.tps, r.reads, r.writes, r.other, r.queries, r.qps) == (
        tx, tps, reads, writes, other, queries, qps)
    assert (r.errors, r.reconnects, r.total_time_s, r.events) == (0, 0, total_time, events)
    assert (r.latency_min_ms, r.latency_avg_ms, r.latency_max_ms, r.latency_pct_ms, r.latency_sum_ms) == (
        lmin, lavg, lmax, printed_p95, lsum)
    assert len(r.samples) == intervals == stdout.count("\n[ ")
    s = r.samples[0]
    assert (s.second, s.threads, s.latency_percentile, s.errors_per_s, s.reconnects_per_s) == (1.0, 1, 95.0, 0.0, 0.0)
    assert (s.tps, s.qps, s.reads_per_s, s.writes_per_s, s.other_per_s, s.latency_pct_ms) == first
    assert len(r.histogram) == rows == stdout.count(" |")
    assert sum(count for _, count in r.histogram) == events
    m = r.to_measurement()
    assert (m.tps, m.transactions, m.qps, m.queries, m.latency_avg_ms, m.latency_max_ms) == (
        tps, tx, qps, queries, lavg, lmax)
    assert m.latency_p95_ms == pytest.approx(printed_p95, abs=0.0055)  # see test_sysbench_captured_with_histogram
    assert m.latency_p50_ms <= m.latency_p95_ms <= m.latency_p99_ms <= lmax + 0.01


def test_every_capture_is_covered_and_has_its_source():
    captured = {p.name.removesuffix(".stdout") for p in SB_CAPTURED.glob("*.stdout")}
    assert captured == set(SB_CAPTURED_EXPECTED) | set(SB_SCRIPTS_EXPECTED)
    assert {p.name.removesuffix(".stderr") for p in SB_CAPTURED.glob("*.stderr")} == captured
    lines = (SB_CAPTURED / "SOURCES.tsv").read_text().splitlines()
    assert lines[0].split("\t")[0] == "file" and {line.split("\t")[0] for line in lines[1:]} == captured


def test_histogram_percentile():
    hist = [(1.0, 10), (2.0, 80), (3.0, 9), (10.0, 1)]
    assert sysbench.histogram_percentile(hist, 5) == 1.0
    assert sysbench.histogram_percentile(hist, 10) == 1.0  # reached exactly at the first bucket
    # sysbench's rounding: 95 % of 21 events is 19.95, so the 20th event decides.
    assert sysbench.histogram_percentile([(1.0, 19), (2.0, 1), (3.0, 1)], 95) == 2.0
    assert sysbench.histogram_percentile([(1.0, 19), (2.0, 1), (3.0, 1)], 92.6) == 1.0  # 19.45 -> 19
    assert sysbench.histogram_percentile(hist, 50) == 2.0
    assert sysbench.histogram_percentile(hist, 95) == 3.0
    assert sysbench.histogram_percentile(hist, 99) == 3.0
    assert sysbench.histogram_percentile(hist, 99.5) == 10.0
    assert sysbench.histogram_percentile([], 50) is None


SB_GOOD = (SB_CAPTURED / "sysbench-1.0.20-oltp-read-write-mysql-histogram.stdout").read_text()


@pytest.mark.parametrize("old, new", [
    ("transactions:                        1475   (736.56 per sec.)", "transactions:                        lots"),
    ("    total time:                          2.0022s", "    total time:                          two seconds"),
    ("         95th percentile:                        3.82", "         95th percentile:                        n/a"),
    ("[ 1s ] thds: 2 tps: 795.43", "[ 1s ] thds: 2 tps: many"),
])
def test_sysbench_unreadable_field_names_the_line(old, new):
    assert old in SB_GOOD
    broken = SB_GOOD.replace(old, new)
    with pytest.raises(ParseError) as info:
        sysbench.parse(broken)
    assert info.value.line == new.split("\n")[0] or new.strip() in info.value.line


def test_sysbench_unreadable_histogram_row():
    row = next(l for l in SB_GOOD.splitlines() if " |" in l)
    with pytest.raises(ParseError, match="histogram"):
        sysbench.parse(SB_GOOD.replace(row, row.replace("|", "!")))


def test_sysbench_without_summary_is_an_error():
    with pytest.raises(ParseError, match="transactions"):
        sysbench.parse(SB_GOOD.split("SQL statistics:")[0])


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=300))
def test_random_text_only_ever_raises_parse_error(text):
    for parse in (sysbench.parse, mysqlslap.parse):
        try:
            parse(text)
        except ParseError:
            pass
        try:
            parse(SB_GOOD[: len(text) * 7 % len(SB_GOOD)] + text)
        except ParseError:
            pass


# ------------------------------------------------------------------ mysqlslap

SLAP_EXPECTED = {
    # file: [(avg, min, max, clients, queries per client, engine)]
    "mysqlslap-5.6-engine-innodb-read-tabs-as-spaces.txt": [(8.755, 8.755, 8.755, 50, 60, "innodb")],
    "mysqlslap-5.6-engine-innodb-write-blankline.txt": [(0.414, 0.414, 0.414, 50, 60, "innodb")],
    "mysqlslap-5.7plus-warning-prefix-tabs.txt": [(401.446, 401.446, 401.446, 100, 100000, None)],
}
SLAP_CAPTURED_EXPECTED = {
    "mysqlslap-10.11.19-MariaDB-c2-i2": None,  # read below from the file's own numbers
    "mysqlslap-10.11.19-MariaDB-concurrency-list": [
        (0.573, 0.557, 0.589, 1, 2000, None), (0.418, 0.405, 0.432, 2, 1000, None), (0.299, 0.292, 0.306, 4, 500, None),
    ],
}


@pytest.mark.parametrize("name", sorted(SLAP_EXPECTED))
def test_mysqlslap_corpus(name):
    blocks = mysqlslap.parse((SLAP_CORPUS / name).read_text())
    assert [(b.avg_s, b.min_s, b.max_s, b.clients, b.queries_per_client, b.engine) for b in blocks] == SLAP_EXPECTED[name]


def test_mysqlslap_captured_concurrency_list():
    name = "mysqlslap-10.11.19-MariaDB-concurrency-list"
    blocks = mysqlslap.parse((SLAP_CAPTURED / f"{name}.stdout").read_text())
    assert [(b.avg_s, b.min_s, b.max_s, b.clients, b.queries_per_client, b.engine) for b in blocks] == \
        SLAP_CAPTURED_EXPECTED[name]
    spec = PointSpec(engine="mysql", workload="mysqlslap", threads=2, clients=2, duration_s=1,
                     params=(("iterations", 1), ("queries", 2000)))
    m, samples = mysqlslap.read((SLAP_CAPTURED / f"{name}.stdout").read_text(), "", spec)
    assert (m.run_avg_s, m.run_min_s, m.run_max_s, m.queries) == (0.418, 0.405, 0.432, 2000)
    assert m.qps == pytest.approx(2000 / 0.418) and m.tps is None and samples == ()


def test_mysqlslap_captured_single_block():
    text = (SLAP_CAPTURED / "mysqlslap-10.11.19-MariaDB-c2-i2.stdout").read_text()
    (block,) = mysqlslap.parse(text)
    assert (block.clients, block.queries_per_client) == (2, 1000)
    assert f"Average number of seconds to run all queries: {block.avg_s:.3f} seconds" in text
    assert block.min_s <= block.avg_s <= block.max_s


def test_mysqlslap_errors():
    good = (SLAP_CORPUS / "mysqlslap-5.7plus-warning-prefix-tabs.txt").read_text()
    with pytest.raises(ParseError, match="no 'Benchmark' block"):
        mysqlslap.parse("mysqlslap: Error when connecting to server: 1045 Access denied\n")
    with pytest.raises(ParseError) as info:
        mysqlslap.parse(good.replace("401.446 seconds\n\tMin", "fast\n\tMin"))
    assert info.value.lineno == 3
    with pytest.raises(ParseError, match="without queries_per_client"):
        mysqlslap.parse("\n".join(l for l in good.splitlines() if "per client" not in l))
    zero = good.replace("401.446", "0.000")
    assert mysqlslap.parse(zero)[0].qps is None  # no rate invented from a 0.000 s run


def test_every_corpus_file_is_covered():
    assert {p.name for p in SB_CORPUS.glob("*.txt")} == set(SB_CORPUS_EXPECTED)
    assert {p.name for p in SLAP_CORPUS.glob("*.txt")} == set(SLAP_EXPECTED)


@pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/corpus not beside this checkout")
def test_fixtures_are_the_shared_corpus_byte_for_byte():
    for tool, folder in (("sysbench", SB_CORPUS), ("mysqlslap", SLAP_CORPUS)):
        for shared in (SHARED / tool).glob("*.txt"):
            assert (folder / shared.name).read_bytes() == shared.read_bytes(), shared.name


# ------------------------------------------------------------------ command lines

MY = Connection(protocol="mysql", host="127.0.0.1", port=3306, user="bench", dbname="db",
                url="mysql://bench@127.0.0.1:3306/db")
PGC = Connection(protocol="postgresql", host="10.0.0.5", port=5433, user="bench", dbname="db",
                 url="postgresql://bench@10.0.0.5:5433/db")
SB_MY = Client(binary="sysbench", conn=MY, secret_file="/private/sb.cnf")
SB_PG = Client(binary="sysbench", conn=PGC)  # libpq finds the password itself
SLAP = Client(binary="mysqlslap", conn=MY, secret_file="/private/client.cnf")
SPEC = PointSpec(engine="mysql", workload="sysbench-read-only", threads=8, clients=8, duration_s=30,
                 params=(("iterations", 3), ("queries", 5000), ("table_size", 1000), ("tables", 4)))


def test_sysbench_command_lines_keep_the_password_off_the_command_line():
    tool = sysbench.TOOL_IMPL
    argv = tool.point_argv(SB_MY, SPEC, ["oltp_read_only"])
    assert argv == [
        "sysbench", "oltp_read_only", "--config-file=/private/sb.cnf", "--db-driver=mysql",
        "--mysql-host=127.0.0.1", "--mysql-port=3306", "--mysql-user=bench", "--mysql-db=db",
        "--tables=4", "--table-size=1000", "--threads=8", "--time=30", "--histogram=on",
        "--report-interval=1", "--percentile=95", "run",
    ]
    assert not any("password" in a for a in argv)
    (pg,) = tool.prepare_argv(SB_PG, SPEC)
    assert pg[:3] == ["sysbench", "oltp_read_write", "--db-driver=pgsql"] and pg[-1] == "prepare"
    assert "--pgsql-port=5433" in pg and "--threads=4" in pg
    assert not any(a.startswith("--config-file") for a in pg)
    (cleanup,) = tool.cleanup_argv(SB_PG, SPEC)
    assert cleanup[-1] == "cleanup"


def test_sysbench_study_options_override_the_defaults():
    spec = PointSpec(engine="mysql", workload="sysbench-read-only", threads=8, clients=8, duration_s=30,
                     params=(("table_size", 1000), ("tables", 4)),
                     options=(("percentile", "99"), ("report-interval", "20"), ("skip-trx", "on")))
    argv = sysbench.TOOL_IMPL.point_argv(SB_MY, spec, ["oltp_read_only"])
    assert argv[-4:] == ["--report-interval=20", "--percentile=99", "--skip-trx=on", "run"]
    assert "--report-interval=1" not in argv and "--percentile=95" not in argv


def test_sysbench_scripts_on_the_shared_dataset_run_by_name():
    tool = sysbench.TOOL_IMPL
    for script in ("oltp_point_select", "oltp_insert", "oltp_update_index", "oltp_update_non_index",
                   "select_random_points", "select_random_ranges", "oltp_delete"):
        argv = tool.point_argv(SB_MY, SPEC, [script])
        assert argv[1] == script and "--tables=4" in argv and "--table-size=1000" in argv
        assert tool.point_input(SB_MY, SPEC, [script]) == PointInput()
    assert tool.dataset_use(["oltp_point_select"]) == tool.dataset_use(["select_random_ranges"]) == "shared"
    assert tool.dataset_use(["oltp_delete"]) == "consumed"  # it never puts rows back


def test_sysbench_bulk_insert_runs_through_a_script_of_its_own_in_the_work_directory():
    tool = sysbench.TOOL_IMPL
    argv = tool.point_argv(SB_MY, SPEC, ["bulk_insert"])
    assert argv == [
        "sysbench", "dbarena_bulk_insert.lua", "--config-file=/private/sb.cnf", "--db-driver=mysql",
        "--mysql-host=127.0.0.1", "--mysql-port=3306", "--mysql-user=bench", "--mysql-db=db",
        "--threads=8", "--time=30", "--histogram=on", "--report-interval=1", "--percentile=95", "run",
    ]
    given = tool.point_input(SB_MY, SPEC, ["bulk_insert"])
    assert set(given.files) == {"dbarena_bulk_insert.lua"} and given.stdin is None
    script = given.files["dbarena_bulk_insert.lua"]
    assert isinstance(script, str)
    # sysbench's own script, on tables of its own, made afresh before the threads start.
    assert 'package.searchpath("bulk_insert"' in script and 'gsub("sbtest", "sbbulk")' in script
    assert "function init()\n   cleanup()\n   prepare()\nend" in script
    assert tool.dataset_use(["bulk_insert"]) == "own"


@pytest.mark.skipif(not Path("/usr/share/sysbench/oltp_common.lua").is_file(), reason="Debian's sysbench not installed")
def test_every_oltp_script_debian_ships_is_a_workload():
    from dbarena.workloads import WORKLOADS

    shipped = {p.stem for p in Path("/usr/share/sysbench").glob("*.lua")} - {"oltp_common"}
    declared = {w.mode_args[0] for w in WORKLOADS.values() if w.tool is sysbench.TOOL_IMPL}
    assert shipped <= declared
    for w in WORKLOADS.values():
        if w.tool is sysbench.TOOL_IMPL:
            assert w.engines == ("postgres", "mysql") and w.name.startswith("sysbench-")


def test_mysqlslap_command_line():
    tool = mysqlslap.TOOL_IMPL
    argv = tool.point_argv(SLAP, SPEC, [])
    assert argv[:2] == ["mysqlslap", "--defaults-extra-file=/private/client.cnf"]  # must come first
    assert {"--concurrency=8", "--iterations=3", "--number-of-queries=5000", "--auto-generate-sql",
            "--host=127.0.0.1", "--port=3306", "--user=bench"} <= set(argv)
    assert not any("--password" in a for a in argv)
    assert tool.prepare_argv(SLAP, SPEC) == [] and tool.cleanup_argv(SLAP, SPEC) == []
