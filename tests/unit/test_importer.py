"""The importer's pure helpers: echoed command lines, options, tool recognition."""

import pytest

from dbarena.importers import reading


@pytest.mark.parametrize("line, args", [
    ("pgbench -c 8 -j 4 -T 600 -S bench", ["-c", "8", "-j", "4", "-T", "600", "-S", "bench"]),
    ("$ pgbench -c8 -j4 -T600 bench", ["-c8", "-j4", "-T600", "bench"]),
    ("postgres@db1:~$ /usr/lib/postgresql/15/bin/pgbench --client=16 --jobs=8 bench",
     ["--client=16", "--jobs=8", "bench"]),
    ("+ sudo -u postgres pgbench -N -P 60 -T 600", ["-N", "-P", "60", "-T", "600"]),
    ("pgbench (15.2 (Ubuntu 15.2-1.pgdg22.04+1))", None),
    ("pgbench: error: connection to server failed", None),
    ("progress: 6.0 s, 691.7 tps, lat 11.528 ms stddev 10.036, 0 failed", None),
])
def test_pgbench_command_lines(line, args):
    assert reading._command(line, "pgbench") == args


def test_sysbench_banner_is_not_a_command():
    assert reading._command("sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)", "sysbench") is None
    assert reading._command("sysbench oltp_read_only --threads=8 --db-driver=pgsql run", "sysbench") == [
        "oltp_read_only", "--threads=8", "--db-driver=pgsql", "run"]


@pytest.mark.parametrize("args, names, value", [
    (["-c", "8"], ("-c", "--client"), "8"),
    (["-c8"], ("-c", "--client"), "8"),
    (["--client=16"], ("-c", "--client"), "16"),
    (["--client", "16"], ("-c", "--client"), "16"),
    (["-S"], ("-c", "--client"), None),
    (["--threads=4", "--threads=8"], ("--threads",), "8"),
])
def test_option(args, names, value):
    assert reading._option(args, *names) == value


@pytest.mark.parametrize("text, tool", [
    ("transaction type: <builtin: TPC-B (sort of)>\n", "pgbench"),
    ("dropping old tables...\ncreating tables...\n", "pgbench"),
    ("sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)\n", "sysbench"),
    ("Benchmark\n\tAverage number of seconds to run all queries: 0.1 seconds\n", "mysqlslap"),
    ("label,threads,tps\nbox,1,10\n", "csv"),
    ("nothing to see\n", None),
])
def test_detect_tool(text, tool):
    assert reading.detect_tool(text) == tool


def test_a_sysbench_run_that_failed_before_its_first_report_is_a_failed_point_with_the_reason():
    from pathlib import Path

    name = "percona-thp2019-tpcc-aborted-then-run.txt"
    text = (Path(__file__).resolve().parent.parent / "fixtures" / "import" / name).read_text()
    # No --engine: the perf stat report after each run names its command (--db-driver=pgsql).
    failed, ok = reading.read(name, text, label="thp")
    assert failed.result.status == "failed" and failed.result.spec.threads == 64
    # sysbench's own first line saying why (workloads/failure.py), as a measured point says it.
    assert failed.result.error == ("sysbench failed before the run started: FATAL: Connection to database failed: "
                                   "could not connect to server: Connection refused")
    assert (failed.first_line, failed.last_line) == (1, 288)
    assert ok.result.status == "ok" and ok.result.measurement.transactions > 0
    assert ok.first_line == 289 and ok.result.stdout.startswith("sysbench 1.0.16")


def test_a_perf_stat_report_after_a_run_names_its_command():
    from pathlib import Path

    name = "percona-thp2019-tpcc-aborted-then-run.txt"
    text = (Path(__file__).resolve().parent.parent / "fixtures" / "import" / name).read_text()
    for point in reading.read(name, text, label="thp"):
        spec = point.result.spec
        assert (spec.engine, spec.workload, spec.threads, spec.duration_s) == ("postgres", "sysbench-tpcc", 64, 600)
        # Tables and warehouses per table are the dataset; the script's own options are
        # part of the configuration, as a measured point's are.
        assert dict(spec.params) == {"tables": 10, "scale": 48}
        assert dict(spec.options) == {"trx_level": "RC", "use_fk": "0"}
        assert point.result.command[:2] == ("sysbench", "./tpcc.lua") and point.note is None
        assert "Performance counter stats for './tpcc.lua" in point.result.stdout


def test_a_sysbench_run_without_a_command_line_is_not_guessed_from_its_mix():
    from pathlib import Path

    name = "percona-thp2019-tpcc-aborted-then-run.txt"
    text = (Path(__file__).resolve().parent.parent / "fixtures" / "import" / name).read_text()
    bare = "\n".join(l for l in text.splitlines() if "Performance counter stats" not in l) + "\n"
    with pytest.raises(reading.ImportProblem, match="pass --engine"):
        reading.read(name, bare, label="thp")
    (ok,) = [p for p in reading.read(name, bare, label="thp", engine="postgres") if p.result.ok]
    # It was tpcc.lua, whose read/write mix looks like oltp_read_write's: not guessed.
    assert ok.result.spec.workload == "sysbench" and "no sysbench script named" in ok.note
    (named,) = [p for p in reading.read(name, bare, label="thp", engine="postgres", workload="sysbench-tpcc")
                if p.result.ok]
    assert named.result.spec.workload == "sysbench-tpcc" and named.note is None


@pytest.mark.parametrize("text, shown", [
    ("sysbench --mysql-password=s3cr3t oltp_read_only run", "sysbench --mysql-password=*** oltp_read_only run"),
    ("sysbench --pgsql-password='s3 cr3t' run", "sysbench --pgsql-password=*** run"),
    ("./tpcc.lua --pgsql-password= run", "./tpcc.lua --pgsql-password= run"),
    ("pgbench -c 4 postgresql://bench:pw@10.0.0.5/db", "pgbench -c 4 postgresql://bench:***@10.0.0.5/db"),
    ("mysql://bench:p@ss@db1:3306", "mysql://bench:***@db1:3306"),
    ("PGPASSWORD=hunter2 pgbench -S", "PGPASSWORD=*** pgbench -S"),
    ('PGPASSWORD="hunter 2" pgbench -S', "PGPASSWORD=*** pgbench -S"),
    ("PGPASSWORD='hunter 2' pgbench -S", "PGPASSWORD=*** pgbench -S"),
    ('PGPASSWORD=ab"c d" pgbench -S', "PGPASSWORD=*** pgbench -S"),
    ("PGPASSWORD='never closed pgbench -S", "PGPASSWORD=***"),
    ("export MYSQL_PWD=hunter2", "export MYSQL_PWD=***"),
    ('MYSQL_PWD="hunter 2" mysqlslap', "MYSQL_PWD=*** mysqlslap"),
    ("mysqlslap -ubench -p'hunter 2' -c 4", "mysqlslap -ubench -p*** -c 4"),
    ('mysqlslap -p"hunter2" -c 4', "mysqlslap -p*** -c 4"),
    ("mysqlslap -phunter2", "mysqlslap -p***"),
    ("mysqlslap --password hunter2 -c 4", "mysqlslap --password *** -c 4"),
    ("mysqlslap --password 'hunter 2' -c 4", "mysqlslap --password *** -c 4"),
    ("mysqlslap --password=hunter2", "mysqlslap --password=***"),
    ('pgbench -S "host=db1 password=hunter2 dbname=b"', 'pgbench -S "host=db1 password=*** dbname=b"'),
    ("pgbench -S \"host=db1 password='hunter 2' dbname=b\"", 'pgbench -S "host=db1 password=*** dbname=b"'),
    ('psql "host=db1 password=hunter2" -c "select 1"', 'psql "host=db1 password=***" -c "select 1"'),
    # Not passwords: pgbench's port, a bare -p (MySQL prompts), a prompt, an option
    # without a value, the working directory.
    ("pgbench -p 5432 -p5432 -S", "pgbench -p 5432 -p5432 -S"),
    ("mysqlslap -p -c 4", "mysqlslap -p -c 4"),
    ("Password: ", "Password: "),
    ("pgbench --password -c 4", "pgbench --password -c 4"),
    ("PWD=/home/bench", "PWD=/home/bench"),
    ("FATAL: password authentication failed for user \"bench\"", "FATAL: password authentication failed for user "
                                                                    "\"bench\""),
])
def test_passwords_in_imported_text_are_masked(text, shown):
    assert reading.masked(text) == shown
    assert reading.masked(shown) == shown  # masking twice changes nothing


def test_passwords_in_a_split_command_line_are_masked():
    from dbarena.masking import masked_args

    # The shell removed the quotes: a value may hold spaces, and is masked whole.
    assert masked_args("mysqlslap", ["-phunter 2", "--password", "hunter 2", "--concurrency=4"]) == [
        "-p***", "--password", "***", "--concurrency=4"]
    assert masked_args("sysbench", ["--pgsql-password=hunter 2", "host=h password='hunter 2'",
                                    "postgresql://u:hunter2@h/db"]) == [
        "--pgsql-password=***", "host=h password=***", "postgresql://u:***@h/db"]
    assert masked_args("pgbench", ["-p5432", "--password", "-c", "4"]) == ["-p5432", "--password", "-c", "4"]


@pytest.mark.parametrize("line, args", [
    ('PGPASSWORD="x y" pgbench -c 4 bench', ["-c", "4", "bench"]),
    ("$ env PGPASSWORD=x time pgbench -S", ["-S"]),
])
def test_a_command_line_after_environment_assignments_is_read(line, args):
    assert reading._command(line, "pgbench") == args


def test_a_sysbench_banner_after_its_echoed_command_line_does_not_open_a_run():
    from pathlib import Path

    corpus = Path(__file__).resolve().parent.parent / "fixtures" / "sysbench" / "corpus"
    text = (corpus / "sysbench-1.0.20-oltp-read-only-pgsql.txt").read_text()
    (point,) = reading.read("sb.txt", "sysbench oltp_read_only --db-driver=pgsql run\n" + text, label="x")
    assert point.first_line == 1 and point.result.command[1] == "oltp_read_only"
    assert point.result.spec.engine == "postgres"


def test_a_password_a_sysbench_script_takes_is_no_option_of_its_point():
    from dbarena.importers.sysbench import _options

    assert _options(["./tpcc.lua", "--password=hunter2", "--db_password=x", "--use_fk=0", "run"]) == (("use_fk", "0"),)


def test_a_tps_line_is_recognised_as_pgbench():
    assert reading.detect_tool("tps = 532.055085 (including connections establishing)\n") == "pgbench"


def test_a_mysqlslap_password_on_its_command_line_is_not_stored():
    text = ("$ mysqlslap -ubench -psecret --concurrency=4 --iterations=2\nBenchmark\n"
            "\tAverage number of seconds to run all queries: 0.107 seconds\n"
            "\tMinimum number of seconds to run all queries: 0.101 seconds\n"
            "\tMaximum number of seconds to run all queries: 0.113 seconds\n"
            "\tNumber of clients running queries: 4\n\tAverage number of queries per client: 25\n\n")
    (point,) = reading.read("slap.txt", text, label="x")
    assert "secret" not in " ".join(point.result.command) and "-p***" in point.result.command


def test_import_replace_reimports_a_file_with_new_options_in_place_of_the_first(tmp_path):
    import sqlite3
    from pathlib import Path

    from inprocess import dbarena

    fixture = Path(__file__).resolve().parent.parent / "fixtures" / "import" / "study-a-appended-pg15.txt"
    store = tmp_path / "s.db"

    def run(*args):
        return dbarena("import", str(fixture), "--store", str(store), *args)

    first = run("--label", "old")
    assert first.returncode == 0 and "imported 3 point(s)" in first.stdout, first.stderr
    again = run("--label", "new")
    assert again.returncode == 0 and "already imported" in again.stdout and "--replace" in again.stdout
    replaced = run("--label", "new", "--replace")
    assert replaced.returncode == 0, replaced.stderr
    assert "the 3 point(s) of its earlier import removed" in replaced.stdout and "imported 3 point(s)" in replaced.stdout
    db = sqlite3.connect(store)
    assert db.execute("SELECT label FROM runs").fetchall() == [("new",)]
    assert db.execute("SELECT COUNT(*) FROM points").fetchone()[0] == 3
    assert db.execute("SELECT COUNT(*) FROM raw_outputs").fetchone()[0] == 3  # nothing of the first left behind
    assert db.execute("SELECT COUNT(*) FROM imports").fetchone()[0] == 1


def test_pgbench_query_mode_is_part_of_an_imported_points_configuration():
    from pathlib import Path

    corpus = Path(__file__).resolve().parent.parent / "fixtures" / "pgbench" / "corpus"
    (prepared,) = reading.read("p.txt", (corpus / "pg16.3-select-only-prepared-cedardb.txt").read_text(), label="x")
    assert dict(prepared.result.spec.options) == {"protocol": "prepared"}
    appended = Path(__file__).resolve().parent.parent / "fixtures" / "import" / "study-a-appended-pg15.txt"
    assert all(p.result.spec.options == () for p in reading.read("a.txt", appended.read_text(), label="x"))


def test_a_sysbench_script_named_on_its_command_line_is_the_registrys_workload():
    """Every script dbarena runs is imported under the name `run` stores it with."""
    from dbarena import workloads
    from dbarena.importers.sysbench import _workload

    for w in workloads.WORKLOADS.values():
        if w.tool.name == "sysbench" and w.mode_args:
            script = w.mode_args[0]
            assert _workload(["sysbench", script, "run"]) == w.name
            assert _workload(["sysbench", f"/usr/share/sysbench/{script}.lua", "run"]) == w.name
    assert _workload(["sysbench", "oltp", "run"]) is None  # 0.4/0.5's oltp says nothing about the mix


def test_import_replace_of_an_edited_file_leaves_one_run_with_its_new_figures(tmp_path):
    """Issue 41: the same source imported again after an edit (its content, and so its
    digest, changed) with --replace replaces what its earlier import brought; without
    --replace it is a second import, as before."""
    import shutil
    import sqlite3
    import subprocess
    import sys
    from pathlib import Path

    fixture = Path(__file__).resolve().parent.parent / "fixtures" / "import" / "study-a-appended-pg15.txt"
    source = tmp_path / "run.txt"
    shutil.copy(fixture, source)
    store = tmp_path / "s.db"

    def run(*args):
        return subprocess.run([sys.executable, "-m", "dbarena", "import", str(source), "--store", str(store), *args],
                              capture_output=True, text=True, timeout=120)

    assert run("--label", "x").returncode == 0
    text = source.read_text()
    first_tps = text[text.index("tps = ") + 6:].split()[0]
    source.write_text(text.replace(f"tps = {first_tps}", "tps = 1234.567890", 1))  # a figure corrected by hand
    replaced = run("--label", "x", "--replace")
    assert replaced.returncode == 0, replaced.stderr
    assert "the 3 point(s) of its earlier import removed" in replaced.stdout, replaced.stdout
    db = sqlite3.connect(store)
    assert db.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 1
    assert db.execute("SELECT COUNT(*) FROM points").fetchone()[0] == 3
    assert 1234.56789 in [t for (t,) in db.execute("SELECT tps FROM points")]
    assert db.execute("SELECT COUNT(*) FROM imports").fetchone()[0] == 1
