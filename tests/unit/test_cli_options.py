"""Bad options of `run` and `study check`, in process: one line on stderr, exit status 2,
nothing started, no password echoed. The cases that need a server's binaries to
find the error (an unknown setting) stay in tests/e2e/test_run.py."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from conftest import invoke
from dbarena.study import arguments, run_flags


BAD_RUN_OPTIONS = [
    (["--threads", "0"], "'0' is neither a number of threads nor a percentage like \"20%\""),
    (["--threads", "-3"], "'-3' is neither a number of threads nor a percentage like \"20%\""),
    (["--threads", "abc"], "'abc' is neither a number of threads nor a percentage like \"20%\""),
    (["--threads", "1,0%"], "'0%' is neither a number of threads nor a percentage like \"20%\" "
                            "(expected e.g. 1,4,16 or 1,2,50%)"),
    (["--workload", "nope"], "unknown workload 'nope'"),
    (["--workload", ","], "expected a comma-separated list of workload names"),
    (["--duration", "-5"], "--duration"),
    (["--duration", "0"], "--duration"),
    (["--clients-per-thread", "0"], "--clients-per-thread"),
    (["--tables", "0"], "--tables"),
    (["--table-size", "-1"], "--table-size"),
    (["--number-of-queries", "0"], "--number-of-queries"),
    (["--pg-setting", "shared_buffers"], "is not NAME=VALUE"),
    (["--target", "postgresql://u:hunter2@127.0.0.1/db"], "must not contain a password"),
    (["--target", "ftp://u@127.0.0.1/db"], "expected postgresql://user@host:port/db or mysql://"),
    (["--target", "mysql://u:hunter2@127.0.0.1/db"], "must not contain a password"),
    (["--target", "postgresql://u@127.0.0.1/a", "--target", "postgresql://u@127.0.0.1/b"], "two --target URLs"),
    (["--target", "postgresql://u@127.0.0.1/db", "--pg-setting", "work_mem=1MB"], "throwaway postgres instance only"),
    (["--mysql-setting", "max_connections=10"], "throwaway mysql instance only"),
    (["--engine", "postgres,oracle"], "unknown engine 'oracle'"),
    (["--engine", "mysql", "--workload", "pgbench-tpcb"], "cannot run on engine 'mysql'"),
    (["--engine", "postgres", "--workload", "mysqlslap"], "cannot run on engine 'postgres'"),
    (["--engine", "postgres", "--target", "mysql://u@127.0.0.1/db"], "does not include mysql"),
    (["--server-cores", "4"], "describe a --target's server"),
    (["--precision", "3"], "expected a percentage above 0"),
    (["--precision", "2%", "--repeat", "3"], "not both"),
    (["--budget", "soon", "--precision", "2%"], "expected a time such as 45s"),
    (["--max-repeats", "5"], "give --precision too"),
    (["--price-per-hour", "1", "--price-per-month", "700"], "not both"),
    (["--currency", "EUR"], "give --price-per-hour or --price-per-month"),
    (["--latency-sampling", "2"], "--latency-sampling"),
    (["--mysql-flavour", "oracle"], "--mysql-flavour"),
    (["--study", "no-such-study"], "no study file 'no-such-study'"),
    (["--study", "seed-a", "--engine", "postgres", "--workload", "mysqlslap"], "not in the study"),
    (["--no-such-option"], "No such option"),
]


@pytest.mark.parametrize("args, message", BAD_RUN_OPTIONS, ids=[" ".join(a) for a, _ in BAD_RUN_OPTIONS])
def test_a_bad_run_option_is_one_line_and_exit_2(args, message, tmp_path, capsys):
    store = tmp_path / "r.db"
    code, out, err = invoke(["run", *args, "--store", str(store)], capsys)
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("dbarena: error: "), err
    assert message in err
    assert "hunter2" not in err + out
    assert not store.exists() or sqlite3.connect(store).execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 0


@pytest.mark.parametrize("args, message", [
    (["seed-a", "--threads", "0"], "'0' is neither a number of threads nor a percentage like \"20%\""),
    (["seed-a", "--study", "seed-b"], "two studies given"),
    (["seed-a", "--engine", "oracle"], "unknown engine 'oracle'"),
])
def test_a_bad_study_check_option_is_one_line_and_exit_2(args, message, capsys):
    code, _, err = invoke(["study", "check", *args], capsys)
    assert code == 2 and err.count("\n") == 1 and message in err, err


def test_threads_take_shares_of_the_hardware_threads_as_a_study_file_does(capsys):
    from dbarena.host import hostinfo

    threads = hostinfo.hardware_threads()
    code, out, err = invoke(["study", "check", "--workload", "pgbench-select-only", "--threads", "1,100%"], capsys)
    assert code == 0, err
    # 100 % of the hardware threads dbarena may use here, beside 1 (once, if they are one).
    levels = " ".join(map(str, sorted({1, threads})))
    assert f"pgbench-select-only: threads {levels}," in out, out


def test_every_run_flag_is_an_option_of_run_and_study_check_with_its_help(capsys):
    """The table is the one declaration: `run --help` and `study check --help` show
    every flag it holds, with its help."""
    for command in (["run", "--help"], ["study", "check", "--help"]):
        code, out, _ = invoke(command, capsys)
        assert code == 0
        flat = " ".join(out.split())
        for flag in run_flags():
            assert flag.flag in flat, flag.flag
            assert " ".join(flag.help.split())[:30] in flat, flag.flag


def test_the_fleets_host_reads_the_same_study_as_run(tmp_path):
    """fleet/host.py decides whether its store holds a run from the run's arguments:
    the same library call as `run`, options that are not about the study ignored."""
    argv = ["--study", "seed-a", "--quick", "--engine", "postgres", "--duration", "3",
            "--store", str(tmp_path / "s.db"), "--no-init", "--progress-file", str(tmp_path / "p.json")]
    from_args = arguments.study_from_args(argv)
    from_values = arguments.study_from_values({"study_name": "seed-a", "quick": True, "engine_names": ("postgres",),
                                               "duration": 3})
    assert from_args == from_values
    assert {w.duration_s for w in from_args.workloads if w.workload != "mysqlslap"} == {3}


def test_a_flag_declared_once_reaches_overrides_and_the_stored_flags():
    from dbarena.study import overrides

    o = overrides({"duration": 30, "scale": 5, "queries": 1000, "pg_settings": {"work_mem": "8MB"},
                   "pg_bindir": Path("/usr/lib/postgresql/15/bin"), "fail_fast": True, "levels": (1, 2)})
    assert o.duration_s == 30 and o.params == {"scale": 5, "queries": 1000}
    assert o.settings == {"postgres": {"work_mem": "8MB"}} and o.bindirs == {"postgres": "/usr/lib/postgresql/15/bin"}
    assert o.fail_fast is True and o.levels == (1, 2)
    # The order a flags-only run records them in (its study text, and so its hash, depends on it).
    assert list(o.flags()) == ["levels", "duration_s", "fail_fast", "params", "settings", "bindirs"]
    assert type(o).from_flags(o.flags()) == o


def test_the_flag_reference_in_the_docs_is_the_tables():
    from dbarena.study import flags

    docs = (Path(__file__).parents[2] / "docs" / "studies.md").read_text()
    block = docs.split("<!-- run-flags:begin -->\n", 1)[1].split("<!-- run-flags:end -->", 1)[0]
    assert block == flags.reference(), "regenerate the table: see docs/studies.md"


def test_datasets_flag_sets_every_workloads_lifecycle_and_is_recorded():
    from dbarena import study

    s = arguments.study_from_values({"datasets": "point", "workload_names": ("pgbench-tpcb", "pgbench-select-only")})
    assert {w.datasets for w in s.workloads} == {"point"}
    assert s.flags["datasets"] == "point"
    assert study.rebuild(s.text, s.source, s.flags) == s  # --resume reads it back
    over = arguments.study_from_values({"study_name": "seed-a", "datasets": "workload", "quick": True})
    assert {w.datasets for w in over.workloads} == {"workload"}
    assert any("datasets: run -> workload (--datasets)" in c for c in over.changes)


def test_datasets_point_with_a_restoring_workload_is_refused(tmp_path, capsys):
    study_file = tmp_path / "restore.toml"
    study_file.write_text('schema = 1\nname = "r"\n[engines.postgres]\n[sweep]\nrestore = "point"\n'
                          '[[workloads]]\nworkload = "pgbench-tpcb"\n')
    code, _, err = invoke(["study", "check", str(study_file), "--datasets", "point"], capsys)
    assert code == 2 and err.count("\n") == 1 and "need no restore" in err, err
