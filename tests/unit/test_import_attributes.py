"""An import keeps every attribute the output or its command line states: the warm-up,
the duration asked, the server's flavour and version, where each point came from, its
repeat among those of its configuration, and summaries over repeats with the minimum
latency; what it notes is said once per import; and a CSV of summary rows compares with
a tool's output of the same configuration. Real outputs, byte for byte
(tests/fixtures/import/SOURCES.tsv, tests/fixtures/external-truth/SOURCES.tsv)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from conftest import invoke

from dbarena.importers import reading, serverversion
from dbarena.stats import steadystate

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
IMPORT = FIXTURES / "import"
ET = FIXTURES / "external-truth"
SERVERSCAMP = ET / "holdout-2" / "serverscamp-pgbench"
NIDMGH = ET / "holdout-2" / "nidmgh-sysbench-clouddb"


def _json(argv: list[str], capsys) -> list[dict]:
    code, out, err = invoke(argv, capsys)
    assert code == 0, err
    return json.loads(out)


def _import(capsys, store: Path, *argv: str) -> tuple[str, str]:
    code, out, err = invoke(["import", *argv, "--store", str(store)], capsys)
    assert code == 0, err
    return out, err


# ------------------------------------------------------------------ warm-up


def test_sysbench_1_1s_warmup_is_kept(tmp_path, capsys):
    text = (IMPORT / "sysbench-1.1.0-warmup-60s.txt").read_text()
    (point,) = reading.read("w.txt", text, label="x", engine="postgres")
    assert point.result.spec.warmup_s == 60
    # The command line before it names the warm-up too, and wins (as it does for the time).
    echoed = "$ sysbench oltp_read_write --db-driver=pgsql --threads=24 --time=300 --warmup-time=30 run\n" + text
    (point,) = reading.read("w.txt", echoed, label="x")
    assert point.result.spec.warmup_s == 30 and point.result.spec.duration_s == 300
    assert "warmup-time" not in dict(point.result.spec.options)
    # Stored in the point and its configuration key: a run without a warm-up is another configuration.
    store = tmp_path / "r.db"
    for name in (IMPORT / "sysbench-1.1.0-warmup-60s.txt",
                 FIXTURES / "sysbench" / "corpus" / "sysbench-1.1.0-oltp-rw-pgsql.txt"):
        _import(capsys, store, str(name), "--label", "w", "--engine", "postgres", "--workload", "oltp_read_write")
    rows = _json(["results", "--json", "--store", str(store)], capsys)
    assert sorted((r["warmup_s"], r["config"]["warmup_s"]) for r in rows) == [(0, 0), (60, 60)]
    assert len({r["config_key"] for r in rows}) == 2


# ------------------------------------------------------------------ the duration asked


def test_reports_written_while_threads_finish_do_not_lengthen_the_duration_asked(tmp_path):
    """Percona's 600 s tpcc run at 64 threads (lines 2233-2887): reports at [ 601s ] and
    [ 602s ] with all 64 threads, then 59, 56 ... to [ 607s ]; 607.7828 s measured. Without
    the perf stat report that names --time=600, the duration is inferred as 600 s, and
    says so; with it, taken from the command line."""
    lines = (ET / "percona-thp2019" / "thp-tpcc-enabled-thp-tps-64").read_text().splitlines(keepends=True)
    end = next(i for i in range(2232, len(lines)) if "Performance counter stats" in lines[i])
    run = "".join(lines[2232:end])
    assert "[ 607s ] thds: 40" in run and "total time:                          607.7828s" in run
    (point,) = reading.read("tpcc.txt", run, label="x", engine="postgres", workload="sysbench-tpcc")
    assert point.result.spec.duration_s == 600
    assert point.duration is not None and point.duration.source() == {"asked_s": 600, "from": "inferred",
                                                                       "measured_s": 607.7828}


# ------------------------------------------------------------------ server flavour and version


def test_a_mariadb_server_named_before_a_run_gives_its_flavour_and_version(tmp_path, capsys):
    store = tmp_path / "r.db"
    _import(capsys, store, str(IMPORT / "sysbench-mariadb-session.txt"), "--label", "maria")
    _import(capsys, store, str(IMPORT / "mysqlslap-mariadb-session.txt"), "--label", "maria")
    rows = _json(["results", "--json", "--store", str(store)], capsys)
    assert sorted(r["workload"] for r in rows) == ["mysqlslap", "sysbench-read-only"]
    for r in rows:
        assert r["server_version"] == "10.11.19-MariaDB-0+deb12u1"
        assert (r["config"]["flavour"], r["config"]["server_major"]) == ("mariadb", "10.11")
    # What names a server, and what does not (a figure alone, the client's own version).
    assert serverversion.named("Server version: 8.0.36 MySQL Community Server - GPL") == \
        serverversion.Server("8.0.36", "mysql")
    assert serverversion.named("| 10.6.16-MariaDB-log |") == serverversion.Server("10.6.16-MariaDB-log", "mariadb")
    assert serverversion.named("8.0.36") is None
    assert serverversion.named("mariadb-admin  Ver 10.0 Distrib 10.11.19-MariaDB, for debian-linux-gnu") is None
    # A PostgreSQL run is not given a MySQL server's version.
    text = "Server version: 10.11.19-MariaDB\n" + (FIXTURES / "sysbench" / "corpus" /
                                                  "sysbench-1.0.20-oltp-read-only-pgsql.txt").read_text()
    assert all(p.server_version is None for p in reading.read("pg.txt", text, label="x", engine="postgres"))


# ------------------------------------------------------------------ source, repeats, minimum latency


def test_each_point_keeps_its_path_and_digest_and_repeats_are_numbered_in_import_order(tmp_path, capsys, monkeypatch):
    """serverscamp's three runs per dataset size and host, imported by relative paths
    (as a user types them): each point's source names its path and content, and the
    runs of one configuration are repeats 1, 2, 3 in the order they were imported, also
    across imports."""
    monkeypatch.chdir(SERVERSCAMP.parent)
    store = tmp_path / "r.db"
    first = [f"serverscamp-pgbench/aws-bench100-run{i}.txt" for i in (2, 1)]
    _import(capsys, store, *first, "--label", "aws")
    _import(capsys, store, "serverscamp-pgbench/aws-bench100-run3.txt", "--label", "aws")
    rows = sorted(_json(["results", "--json", "--store", str(store)], capsys), key=lambda r: r["point_id"])
    assert [(r["source"]["path"], r["repeat"]) for r in rows] == [
        ("serverscamp-pgbench/aws-bench100-run2.txt", 1), ("serverscamp-pgbench/aws-bench100-run1.txt", 2),
        ("serverscamp-pgbench/aws-bench100-run3.txt", 3)]
    for r in rows:
        assert r["source"]["sha256"] == hashlib.sha256(Path(r["source"]["path"]).read_bytes()).hexdigest()
    assert len({r["config_key"] for r in rows}) == 1
    # Another label's runs of the same configuration count on their own.
    _import(capsys, store, "serverscamp-pgbench/sc-test1-bench100-run1.txt", "--label", "sc")
    (sc,) = [r for r in _json(["results", "--json", "--store", str(store)], capsys) if r["label"] == "sc"]
    assert sc["repeat"] == 1


def test_summaries_hold_the_minimum_latency_over_repeats(tmp_path, capsys):
    store = tmp_path / "r.db"
    _import(capsys, store, *(str(NIDMGH / f"aws-2kiops-sysBench_result{i}") for i in (0, 1)), "--label", "aws",
            "--engine", "postgres", "--workload", "oltp_read_write")
    rows = _json(["results", "--json", "--store", str(store)], capsys)
    summaries = _json(["results", "--summary", "--json", "--store", str(store)], capsys)
    assert summaries and all(s["n"] == 2 for s in summaries)
    for s in summaries:
        mins = [r["latency_min_ms"] for r in rows if r["config_key"] == s["config_key"]]
        assert len(mins) == 2 and s["latency_min_ms"] == min(mins)
        assert s["over_repeats"]["latency_min_ms"]["min"] == min(mins)
        assert s["over_repeats"]["latency_min_ms"]["median_is"] == "median of printed min latency (ms) over 2 runs"


# ------------------------------------------------------------------ notes, advice


def test_what_an_import_notes_is_said_once_with_its_count(tmp_path, capsys):
    """sysbench 0.5 outputs without a command line: each run's script is unknown. Eleven
    files, one line."""
    files = sorted(str(p) for p in (ET / "hgxl64-mariadb").glob("series26-res04-sysbench.ro.*.res"))
    assert len(files) == 11
    out, _ = _import(capsys, tmp_path / "r.db", *files, "--label", "m", "--engine", "mysql")
    noted = [line for line in out.splitlines() if "no sysbench script named" in line]
    assert noted == [noted[0]] and noted[0].startswith("dbarena: 11 run(s) in 11 file(s): no sysbench script named")


def test_dips_advice_is_in_the_engines_own_terms():
    seconds = [60.0 * k for k in range(1, 11)]
    values = [900.0, 1000.0, 1010.0, 990.0, 1005.0, 200.0, 1000.0, 995.0, 1002.0, 998.0]

    def dips(engine: str | None) -> str:
        found = steadystate.steady_state(seconds, values, 600, engine)
        assert found is not None
        (flag,) = [f for f in found.flags if f.code == steadystate.Warning_.DIPS]
        return flag.message

    assert "checkpoint_timeout" in dips("postgres") and "innodb" not in dips("postgres")
    assert "innodb_log_file_size" in dips("mysql") and "checkpoint_timeout" not in dips("mysql")
    assert "checkpoint_timeout" not in dips(None) and "innodb" not in dips(None)


def test_an_imported_mysql_points_warnings_name_no_postgresql_setting(tmp_path, capsys):
    store = tmp_path / "r.db"
    _import(capsys, store, *sorted(str(p) for p in (ET / "hgxl64-mariadb").glob("series26-res04-sysbench.ro.*.res")),
            "--label", "m", "--engine", "mysql", "--workload", "sysbench-read-only")
    rows = _json(["results", "--json", "--store", str(store)], capsys)
    messages = " ".join(w["message"] for r in rows for w in r["warnings"])
    assert "checkpoint_timeout" not in messages and "autovacuum" not in messages


# ------------------------------------------------------------------ CSV against a tool's output


def test_a_csv_row_and_a_pgbench_output_of_one_configuration_compare(tmp_path, capsys):
    """serverscamp's pgbench 18.3 run (scale 100, 32 clients, 4 threads, prepared, 600 s)
    against the same run written as a CSV row: comparable with and without a scale
    column (one that is not there is unverified, not a difference); a CSV of another
    scale is not comparable, and says why."""
    store = tmp_path / "r.db"
    _import(capsys, store, str(SERVERSCAMP / "aws-bench100-run1.txt"), "--label", "aws")
    header = "label,engine,workload,threads,clients,tps,time_s,latency_avg_ms,protocol"
    row = "csv,postgres,pgbench-tpcb,4,32,3976.442323,600,8.047,prepared"
    for name, text in (("plain.csv", f"{header}\n{row}\n"),
                       ("scaled.csv", f"{header},scale,warmup_s\n{row.replace('csv,', 'scaled,', 1)},100,0\n")):
        (tmp_path / name).write_text(text)
        _import(capsys, store, str(tmp_path / name), "--label", "unused")
    for label, unverified in (("csv", ["server_major", "params.scale"]), ("scaled", ["server_major"])):
        (compared,) = _json(["compare", "aws", label, "--json", "--store", str(store)], capsys)
        assert compared["ratio"] == pytest.approx(1.0) and compared["differs"] == []
        assert compared["unverified"] == unverified
    (tmp_path / "other.csv").write_text(f"{header},scale\n{row.replace('csv,', 'other,', 1)},10\n")
    _import(capsys, store, str(tmp_path / "other.csv"), "--label", "unused")
    (compared,) = _json(["compare", "aws", "other", "--json", "--store", str(store)], capsys)
    assert compared["ratio"] is None and compared["reason"] == "not comparable: params.scale 100 vs 10"


@pytest.mark.parametrize("column, value, problem", [
    ("scale", "0", "column 'scale': '0'"), ("warmup_s", "1.5", "column 'warmup_s': '1.5'"),
    ("protocol", "fast", "column 'protocol': 'fast' is no query mode"),
])
def test_csv_configuration_columns_are_checked(column, value, problem):
    text = f"engine,workload,threads,tps,{column}\npostgres,pgbench-tpcb,1,100,{value}\n"
    with pytest.raises(reading.ImportProblem) as raised:
        reading.read("c.csv", text, label="x")
    assert str(raised.value).startswith(f"c.csv:2: {problem}")


def test_csv_configuration_columns_go_into_the_key():
    text = "engine,workload,threads,tps,time_s,tables,table_size,warmup_s\nmysql,oltp_read_write,8,100,300,10,100000,60\n"
    (point,) = reading.read("c.csv", text, label="x")
    spec = point.result.spec
    assert (spec.duration_s, spec.warmup_s, spec.params) == (300, 60, (("table_size", 100000), ("tables", 10)))
