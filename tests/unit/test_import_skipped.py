"""Every piece of an imported file that carries a figure and is not stored is reported
as `FILE:LINE: reason`; the import counts them and exits 1 (0 with --allow-skipped);
what could be read is stored. Real outputs, and real outputs cut as articles cut them
(each test says where it cut); text without figures (perf stat, prose) is no piece."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from conftest import error_line, invoke

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
ET = FIXTURES / "external-truth"
NIDMGH = ET / "holdout-2" / "nidmgh-sysbench-clouddb" / "aws-2kiops-sysBench_result0"
PGBENCH = FIXTURES / "pgbench" / "corpus" / "pg16.6-select-only-S-r.txt"
MYSQLSLAP = FIXTURES / "mysqlslap" / "corpus" / "mysqlslap-5.7plus-warning-prefix-tabs.txt"


def _points(store: Path) -> list[tuple[int, float]]:
    with sqlite3.connect(store) as db:
        return db.execute("SELECT threads, tps FROM points ORDER BY id").fetchall()


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines(keepends=True)


def test_a_pgbench_article_with_runs_cut_to_their_tails_stores_the_whole_run_and_names_the_rest(tmp_path, capsys):
    # As serverscamp's pages did (a warm-up printed whole, then `=== RUN n ===` with only
    # a summary's last lines): a real run, then the last 4 figure lines of the same
    # output twice, each under a marker.
    lines = _lines(PGBENCH)
    tail = [l for l in lines if l.startswith(("latency average", "initial connection", "tps = "))]
    path = tmp_path / "article.md"
    path.write_text("```\n" + "".join(lines) + "\n=== RUN 1 ===\n" + "".join(tail) + "\n=== RUN 2 ===\n"
                    + "".join(tail) + "```\n")
    store = tmp_path / "s.db"
    code, out, err = invoke(["import", str(path), "--label", "x", "--store", str(store)], capsys)
    first = len(lines) + 4  # the ``` line, the run, a blank line, the marker
    assert code == 1
    assert err.splitlines() == [
        f"article.md:{first}: 'latency average = 1.531 ms' not stored: a pgbench summary without its header "
        f"('transaction type:' and what follows), which says what ran (its figures run to line {first + 2})",
        f"article.md:{first + 5}: 'latency average = 1.531 ms' not stored: a pgbench summary without its header "
        f"('transaction type:' and what follows), which says what ran (its figures run to line {first + 7})",
        "dbarena: 2 piece(s) skipped: figures not stored (--allow-skipped accepts them)",
    ]
    assert "imported 1 point(s)" in out and len(_points(store)) == 1
    # Accepted knowingly: the same messages, exit 0.
    code, out, err2 = invoke(["import", str(path), "--label", "x", "--allow-skipped", "--replace",
                              "--store", str(store)], capsys)
    assert code == 0 and err2.splitlines()[:2] == err.splitlines()[:2]
    assert err2.splitlines()[2].endswith("(accepted: --allow-skipped)")


def test_the_serverscamp_pages_are_read_as_published(tmp_path, capsys):
    # The authors cut the header of runs 1-3 out of the code block: the warm-up, printed
    # whole, is stored, and each of the three runs is named.
    page = tmp_path / "aws-bench1000.md"
    page.write_bytes((ET / "holdout-2" / "serverscamp-pgbench" / "published" / "aws-bench1000.md").read_bytes())
    code, _, err = invoke(["import", str(page), "--label", "aws", "--store", str(tmp_path / "s.db")], capsys)
    assert code == 1
    assert [l.split(":")[1] for l in err.splitlines()[:-1]] == ["30", "38", "46"]
    assert err.splitlines()[-1].startswith("dbarena: 3 piece(s) skipped")


def test_a_sysbench_statistics_block_without_its_run_is_named(tmp_path, capsys):
    # nidmgh's 2-thread run (lines 1-50, whole), then the 4-thread run's statistics
    # (lines 75-95: 'SQL statistics:' to the latency block), its start and its 'Threads
    # fairness' cut off: nothing says how many threads ran.
    lines = _lines(NIDMGH)
    path = tmp_path / "cut.txt"
    path.write_text("".join(lines[:50] + lines[74:95]))
    store = tmp_path / "s.db"
    code, _, err = invoke(["import", str(path), "--label", "x", "--engine", "postgres", "--workload",
                           "oltp_read_write", "--store", str(store)], capsys)
    assert code == 1
    assert err.splitlines()[0].startswith("cut.txt:53: 'read:                            3777354' not stored: "
                                          "sysbench figures without the start of their run")
    assert _points(store) == [(2, 229.7)]


def test_a_sysbench_summary_with_its_threads_fairness_says_its_thread_count(tmp_path, capsys):
    # The same cut with 'Threads fairness' kept (lines 75-99): 269811 events, 67452.75 a
    # thread, so 4 threads; stored, nothing skipped.
    lines = _lines(NIDMGH)
    path = tmp_path / "cut.txt"
    path.write_text("".join(lines[:50] + lines[74:99]))
    store = tmp_path / "s.db"
    code, _, err = invoke(["import", str(path), "--label", "x", "--engine", "postgres", "--workload",
                           "oltp_read_write", "--store", str(store)], capsys)
    assert code == 0 and err == ""
    assert _points(store) == [(2, 229.7), (4, 449.68)]


def test_mysqlslap_figures_after_the_last_block_are_named(tmp_path, capsys):
    # A whole mysqlslap output, then its five figure lines again without the
    # 'Benchmark' line above them.
    lines = _lines(MYSQLSLAP)
    figures = [l for l in lines if "number of" in l.lower() and ":" in l]
    assert len(figures) == 5
    path = tmp_path / "slap.txt"
    path.write_text("".join(lines) + "\n" + "".join(figures))
    code, _, err = invoke(["import", str(path), "--label", "x", "--store", str(tmp_path / "s.db")], capsys)
    assert code == 1 and err.splitlines()[0].startswith(f"slap.txt:{len(lines) + 2}: ")
    assert "without the 'Benchmark' line" in err


@pytest.mark.parametrize("path", [
    # perf stat output after every run, a FATAL before the run, pgbench -i output.
    ET / "percona-thp2019" / "thp-tpcb-10m-enabled-thp-tps-64",
    FIXTURES / "import" / "percona-thp2019-tpcc-aborted-then-run.txt",
    FIXTURES / "import" / "study-a-appended-pg15.txt",
    NIDMGH,
])
def test_real_files_that_import_whole_skip_nothing(path, tmp_path, capsys):
    code, out, err = invoke(["import", str(path), "--label", "x", "--engine", "postgres", "--store",
                             str(tmp_path / "s.db")], capsys)
    assert code == 0 and err == "" and "imported" in out


def test_a_file_of_pieces_only_stays_an_error(tmp_path, capsys):
    # The 4-thread run's statistics alone (lines 75-95 of nidmgh's result0).
    path = tmp_path / "only.txt"
    path.write_text("".join(_lines(NIDMGH)[74:95]))
    code, _, err = invoke(["import", str(path), "--label", "x", "--tool", "sysbench", "--engine", "postgres",
                           "--allow-skipped", "--store", str(tmp_path / "s.db")], capsys)
    assert code == 2 and error_line(err).startswith("dbarena: error: only.txt:3: ")
