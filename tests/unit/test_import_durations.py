"""Imported points hold the duration their run was asked for, not the one it measured:
repeats of `--time=600` that measured 600.55 s and 600.06 s are one configuration,
runs of 300 s and 600 s two. The point's source keeps both and how the asked one was
found. Real outputs, byte for byte (tests/fixtures/external-truth/SOURCES.tsv)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import invoke

from dbarena.importers import reading
from dbarena.importers.durations import nominal

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
NIDMGH = FIXTURES / "external-truth" / "holdout-2" / "nidmgh-sysbench-clouddb"
MARIADB = FIXTURES / "external-truth" / "hgxl64-mariadb"


@pytest.mark.parametrize("measured, at_least, asked", [
    (600.5517, 0, 600), (601, 0, 600), (602, 0, 600), (606, 0, 600), (606.1585, 0, 600),
    (300.2, 0, 300), (59.98, 0, 60), (7.3, 0, 7), (3600.9, 0, 3600), (1200.0136, 0, 1200),
    (300, 0, 300), (2.05, 0, 2), (10.0247, 0, 10),
    # 5 s over a minute is more than a run overruns: asked 65 s, a multiple of 5.
    (65, 0, 65), (62.4, 0, 62),
    # sysbench 0.5's --max-time=50: last report [ 50s ], total time 51.0026 s.
    (51.0026, 50, 50),
    # A report every 7 s: the last at 595 s of a 600 s run; the asked time is not below it
    # by more than a run overruns: reports go on while the threads finish (Percona's
    # 600 s tpcc run: 64 threads at [ 602s ], 607.7828 s measured; a 900 s run's [ 902s ]).
    (600.3, 595, 600), (605.3, 605, 600), (607.7828, 602, 600), (905, 902, 900), (62.4, 62, 62),
    # Nothing round fits: the measured time rounded (and never below the last report).
    (0.4, 0, 0),
])
def test_the_asked_duration_is_inferred_as_a_person_would(measured, at_least, asked):
    assert nominal(measured, at_least) == asked


def test_two_repeats_of_a_600_s_sysbench_series_are_one_configuration(tmp_path, capsys):
    store = tmp_path / "r.db"
    files = [str(NIDMGH / f"aws-2kiops-sysBench_result{i}") for i in (0, 1)]
    code, out, err = invoke(["import", *files, "--label", "aws", "--engine", "postgres", "--workload",
                             "sysbench-read-write", "--store", str(store)], capsys)
    assert code == 0, err
    code, out, _ = invoke(["results", "--json", "--store", str(store)], capsys)
    rows = json.loads(out)
    at_64 = [r for r in rows if r["threads"] == 64]
    assert sorted(r["tps"] for r in at_64) == [890.53, 1026.96]
    assert len({r["config_key"] for r in at_64}) == 1 and {r["duration_s"] for r in at_64} == {600}
    # The source says what was measured and how 600 was found: sysbench printed a report
    # every 60 s, the last at [ 600s ].
    assert sorted(r["source"]["duration"]["measured_s"] for r in at_64) == [600.0647, 600.5517]
    assert {r["source"]["duration"]["from"] for r in at_64} == {"last progress line"}
    assert all(r["duration_s"] == 600 for r in rows)
    code, out, _ = invoke(["results", "--summary", "--json", "--store", str(store)], capsys)
    summary = json.loads(out)
    assert [s["n"] for s in summary if s["threads"] == 64] == [2]
    assert all(s["n"] == 2 for s in summary) and len(summary) == 7


def test_without_progress_lines_the_duration_is_inferred_and_the_import_says_so(tmp_path, capsys):
    # The 64-thread run of result0 (lines 253-300, which measured 600.5517 s) with its
    # interval reports cut out: only the total time is left to go by.
    lines = (NIDMGH / "aws-2kiops-sysBench_result0").read_text().splitlines(keepends=True)[252:300]
    cut = tmp_path / "cut.txt"
    cut.write_text("".join(l for l in lines if not l.startswith("[ ")))
    (point,) = reading.read(cut.name, cut.read_text(), label="x", engine="postgres")
    assert point.result.spec.duration_s == 600
    assert point.duration is not None and point.duration.source() == {"asked_s": 600, "from": "inferred",
                                                                       "measured_s": 600.5517}
    code, out, err = invoke(["import", str(cut), "--label", "x", "--engine", "postgres", "--workload",
                             "oltp_read_write", "--store", str(tmp_path / "r.db")], capsys)
    assert code == 0, err
    assert "1 run(s): duration 600 s inferred from the measured time" in out


def test_a_command_line_or_a_printed_duration_is_taken_as_it_is():
    text = (FIXTURES / "import" / "percona-thp2019-tpcc-aborted-then-run.txt").read_text()
    ok = [p for p in reading.read("thp.txt", text, label="thp") if p.result.ok]
    assert [(p.result.spec.duration_s, p.duration.how if p.duration else None) for p in ok] == \
        [(600, "command line")]
    pgbench = (FIXTURES / "pgbench" / "corpus" / "pg16.6-select-only-S-r.txt").read_text()
    (point,) = reading.read("pg.txt", pgbench, label="x")
    assert point.duration is not None and point.duration.how == "printed"
    assert point.result.spec.duration_s == point.duration.asked_s


def test_durations_that_truly_differ_stay_apart(tmp_path, capsys):
    # sysbench 0.5 at 8 threads: 2013's series ran 300 s (302.0018 s measured), and a
    # sysbench 1.0.20 run of 600 s (600.4503 s measured, reports every 30 s). --engine and
    # --workload make everything else in their keys the same, on purpose: only the
    # duration keeps them apart.
    store = tmp_path / "r.db"
    files = [str(MARIADB / "series26-res04-sysbench.ro.8.res"),
             str(FIXTURES / "sysbench" / "corpus" / "sysbench-1.0.20-oltp-rw-pgsql-ri30-errors.txt")]
    code, _, err = invoke(["import", *files, "--label", "same", "--engine", "mysql", "--workload",
                           "sysbench-read-only", "--store", str(store)], capsys)
    assert code == 0, err
    code, out, _ = invoke(["results", "--json", "--store", str(store)], capsys)
    rows = json.loads(out)
    assert sorted((r["threads"], r["duration_s"]) for r in rows) == [(8, 300), (8, 600)]
    assert len({r["config_key"] for r in rows}) == 2
    code, out, _ = invoke(["results", "--summary", "--json", "--store", str(store)], capsys)
    assert sorted(s["n"] for s in json.loads(out)) == [1, 1]
