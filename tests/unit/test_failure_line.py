"""A failed point says why: the tool's own error line, read from real outputs of
failed runs (tests/fixtures/failures/, made by tests/fixtures/capture-failures against
dbarena's throwaway PostgreSQL and MariaDB) and public samples (the pgbench corpus)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dbarena.workloads.failure import MAX_LINE_CHARS, error_line, exit_reason, failure_reason

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
FAILURES = FIXTURES / "failures"


def captured(name: str) -> tuple[str, str]:
    return ((FAILURES / f"{name}.stdout").read_text(), (FAILURES / f"{name}.stderr").read_text())


@pytest.mark.parametrize("name, line", [
    # sysbench prints its FATAL lines on stdout, nothing on stderr: the server's message,
    # not `mysql_stmt_prepare() failed` before it nor `Thread initialization failed!` after.
    ("sysbench-1.0.20-mysql-missing-table", "FATAL: MySQL error: 1146 \"Table 'dbarena.sbtest1' doesn't exist\""),
    ("sysbench-1.0.20-pgsql-missing-table", "FATAL: PQprepare() failed: ERROR: relation \"sbtest1\" does not exist"),
    ("sysbench-1.0.20-mysql-prepare-twice",
     "FATAL: mysql_drv_query() returned error 1050 (Table 'sbtest1' already exists) for query 'CREATE TABLE sbtest1("),
    ("pgbench-15.18-missing-tables",
     "pgbench: error: could not count number of branches: ERROR: relation \"pgbench_branches\" does not exist"),
    # Two threads' lines interleaved: the prefix once.
    ("pgbench-15.18-bad-script",
     "pgbench: error: client 1 script 0 aborted in command 0 query 0: ERROR: syntax error at or near \"SELEC\""),
    # No server message: the first of the tool's error lines (the second is its consequence).
    ("pgbench-15.18-refused", None),
    ("mysqlslap-10.11.19-MariaDB-bad-query",
     "mysqlslap: Cannot run query SELEC 1 ERROR : You have an error in your SQL syntax; check the manual that "
     "corresponds to your MariaDB server version for the right syntax to use near 'SELEC 1' at line 1"),
    ("mysqlslap-10.11.19-MariaDB-refused",
     "mysqlslap: Error when connecting to server: Can't connect to server on '127.0.0.1' (115)"),
])
def test_the_tools_own_line_wherever_it_printed_it(name, line):
    stdout, stderr = captured(name)
    found = error_line(stdout, stderr)
    if line is None:  # the port differs from one capture to the next
        assert found is not None and found.startswith('pgbench: error: connection to server at "127.0.0.1", port ')
        assert found.endswith(" failed: Connection refused")
    else:
        assert found == line


def test_a_line_quoting_a_whole_query_is_cut_after_the_error():
    stdout, stderr = captured("sysbench-1.0.20-mysql-duplicate-entry")
    assert len(stdout.splitlines()[12]) > 4000  # the line sysbench printed: its whole bulk INSERT
    found = error_line(stdout, stderr)
    assert found is not None and len(found) == MAX_LINE_CHARS and found.endswith("...")
    assert found.startswith("FATAL: mysql_drv_query() returned error 1062 (Duplicate entry '1' for key 'PRIMARY')")


def test_a_failure_says_how_the_tool_ended_and_its_line():
    stdout, stderr = captured("sysbench-1.0.20-mysql-missing-table")
    assert failure_reason(1, stdout, stderr) == \
        "exit status 1: FATAL: MySQL error: 1146 \"Table 'dbarena.sbtest1' doesn't exist\""
    # sysbench on PostgreSQL segfaults after its threads fail to start (it exited -11).
    stdout, stderr = captured("sysbench-1.0.20-pgsql-missing-table")
    assert failure_reason(-11, stdout, stderr).startswith("killed by signal 11 (SIGSEGV): FATAL: PQprepare()")
    assert exit_reason(-200) == "killed by signal 200"
    assert exit_reason(None) == "killed after its time ran out"


def test_errors_a_tool_ignores_or_warnings_are_not_why_it_failed():
    # pgbench's vacuum on a custom script's database: ERROR lines it ignores, then a
    # whole run. Nothing is an error line; what the tool said last stands in.
    text = (FIXTURES / "pgbench/corpus/pg10-custom-script-t-vacuum-errors.txt").read_text()
    assert error_line("", text) is None
    assert failure_reason(1, "", text) == "exit status 1: tps = 11.856866 (excluding connections establishing)"
    text = (FIXTURES / "mysqlslap/corpus/mysqlslap-5.7plus-warning-prefix-tabs.txt").read_text()
    assert error_line("", text) is None


def test_an_aborted_run_names_the_clients_error_not_the_abort():
    text = (FIXTURES / "pgbench/corpus/pg14.3-aborted-run-yugabyte-fragment.txt").read_text()
    found = error_line("", text)
    assert found is not None and found.startswith(
        "pgbench: error: client 36 script 0 aborted in command 8 query 0: ERROR: could not serialize access")


def test_without_any_output_it_says_so():
    assert failure_reason(2, "", "") == "exit status 2: no output"
    assert failure_reason(1, "[ 1s ] thds: 2 tps: 10.00\nlast words\n", "progress: 1.0 s, 3.0 tps\n") == \
        "exit status 1: last words"


def test_a_password_in_an_error_line_is_masked():
    line = error_line("", "pgbench: error: connection to server failed: postgresql://bench:s3cret@db/x\n")
    assert line is not None and "s3cret" not in line


def test_an_imported_failed_run_says_why_as_a_measured_point_does():
    from dbarena.importers import reading

    name = "pg14.3-aborted-run-yugabyte-fragment.txt"
    text = (FIXTURES / "pgbench/corpus" / name).read_text()
    (point,) = reading.read(name, text, label="x")
    assert point.result.status == "failed" and point.result.error == error_line("", text)
    assert point.result.error.startswith("pgbench: error: client 36 script 0 aborted")
