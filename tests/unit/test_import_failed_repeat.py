"""A failed run among repeats counts on its configuration's row ("+1 failed"): an output
that ends before it says how long it was asked to run takes its configuration's duration
(the runs of its file, else those stored under its label), not a row of its own."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import cli_env
from inprocess import dbarena

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
# Percona's THP study: a sysbench-tpcc run aborted at start (connection refused), then a
# whole 600 s run; without the perf stat reports nothing in the aborted run says 600 s.
PERCONA = FIXTURES / "import" / "percona-thp2019-tpcc-aborted-then-run.txt"
ARGS = ("--label", "thp", "--engine", "postgres", "--workload", "sysbench-tpcc")


def _bare(tmp_path: Path, lines: slice = slice(None)) -> Path:
    text = [l for l in PERCONA.read_text().splitlines(keepends=True) if "Performance counter stats" not in l]
    out = tmp_path / f"bare-{lines.start}-{lines.stop}.txt"
    out.write_text("".join(text[lines]))
    return out


def test_a_failed_run_takes_the_duration_of_its_configuration_in_its_file(tmp_path):
    env, store = cli_env(tmp_path), str(tmp_path / "s.db")
    done = dbarena("import", str(_bare(tmp_path)), *ARGS, "--store", store, env=env)
    assert done.returncode == 0, done.stderr
    rows = json.loads(dbarena("results", "--json", "--store", store, env=env).stdout)
    assert sorted((r["status"], r["duration_s"]) for r in rows) == [("failed", 600), ("ok", 600)]
    failed = next(r for r in rows if r["status"] == "failed")
    assert failed["source"]["duration"] == {"asked_s": 600, "from": "its configuration"}
    assert len({r["config_key"] for r in rows}) == 1
    (summary,) = json.loads(dbarena("results", "--summary", "--json", "--store", store, env=env).stdout)
    assert (summary["n"], summary["failed"]) == (1, 1)
    text = dbarena("results", "--summary", "--store", store, env=env).stdout
    assert "1 (+1 failed)" in text


def test_or_that_of_its_label_stored_before(tmp_path):
    env, store = cli_env(tmp_path), str(tmp_path / "s.db")
    assert dbarena("import", str(_bare(tmp_path)), *ARGS, "--store", store, env=env).returncode == 0
    # The aborted run alone (its first 287 lines), imported afterwards from a file of its own.
    done = dbarena("import", str(_bare(tmp_path, slice(0, 287))), *ARGS, "--store", store, env=env)
    assert done.returncode == 0, done.stderr
    (summary,) = json.loads(dbarena("results", "--summary", "--json", "--store", store, env=env).stdout)
    assert (summary["n"], summary["failed"]) == (1, 2)


def test_a_failed_run_of_no_known_configuration_keeps_no_duration(tmp_path):
    env, store = cli_env(tmp_path), str(tmp_path / "s.db")
    assert dbarena("import", str(_bare(tmp_path, slice(0, 287))), *ARGS, "--store", store, env=env).returncode == 0
    (row,) = json.loads(dbarena("results", "--json", "--store", store, env=env).stdout)
    assert row["status"] == "failed" and row["duration_s"] == 0
