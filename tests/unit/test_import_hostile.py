"""`dbarena import` of hostile but fair files, in process through the real CLI against a
temporary SQLite store: every password form a shell or a tool accepts, put before a real
tool output as its echoed command line, is nowhere in the store's bytes; figures no tool
prints, broken CSV rows and files read as the wrong tool are refused in one line
(`FILE:LINE: what is wrong`), exit status 2, nothing stored from that file."""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from conftest import invoke

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
PGBENCH = FIXTURES / "pgbench" / "corpus" / "pg16.6-select-only-S-r.txt"
MYSQLSLAP = FIXTURES / "mysqlslap" / "corpus" / "mysqlslap-5.7plus-warning-prefix-tabs.txt"
SYSBENCH_MYSQL = FIXTURES / "sysbench" / "corpus" / "sysbench-1.0.20-oltp-rw-mysql-ri3-systemluajit.txt"
SYSBENCH_PGSQL = FIXTURES / "sysbench" / "corpus" / "sysbench-1.1.0-oltp-rw-pgsql.txt"


def stored_bytes(store: Path) -> bytes:
    """Everything the store holds as bytes: its files (with a WAL or journal beside it)
    and the raw outputs it keeps compressed, uncompressed."""
    blobs = [p.read_bytes() for p in store.parent.glob(store.name + "*")]
    db = sqlite3.connect(store)
    for codec, stdout, stderr in db.execute("SELECT codec, stdout, stderr FROM raw_outputs"):
        assert codec == "zlib"
        blobs += [zlib.decompress(stdout), zlib.decompress(stderr)]
    db.close()
    return b"\n".join(blobs)


def stored_points(store: Path) -> list[sqlite3.Row]:
    if not store.exists():
        return []
    db = sqlite3.connect(store)
    db.row_factory = sqlite3.Row
    return db.execute("SELECT * FROM points ORDER BY id").fetchall()


# (echoed line(s) put before the output, the output, the secret's parts, whether the
# run's stored command holds the masked value)
PASSWORD_FORMS = [
    ('PGPASSWORD="Pw1-dq" pgbench -S -c 50 -j 4 -T 120 bench', PGBENCH, ["Pw1-dq"], False),
    ("PGPASSWORD='Pw2 sq-tail' pgbench -S -c 50 -j 4 -T 120 bench", PGBENCH, ["Pw2", "sq-tail"], False),
    ('$ pgbench -S -c 50 -j 4 -T 120 "host=db1 port=5432 password=Pw3-kw dbname=bench"', PGBENCH, ["Pw3-kw"], True),
    ("$ pgbench -S -c 50 -j 4 -T 120 \"host=db1 password='Pw4 kw-tail' dbname=bench\"", PGBENCH,
     ["Pw4", "kw-tail"], True),
    ("pgbench -S -c 50 -j 4 -T 120 postgresql://bench:Pw5-url@db1/bench", PGBENCH, ["Pw5-url"], True),
    ("MYSQL_PWD=Pw6-env mysqlslap --concurrency=50 --iterations=1", MYSQLSLAP, ["Pw6-env"], False),
    ('MYSQL_PWD="Pw7 env-tail" mysqlslap --concurrency=50', MYSQLSLAP, ["Pw7", "env-tail"], False),
    ("mysqlslap -ubench -p'Pw8-sq' --concurrency=50", MYSQLSLAP, ["Pw8-sq"], True),
    ('mysqlslap -ubench -p"Pw9 dq-tail" --concurrency=50', MYSQLSLAP, ["Pw9", "dq-tail"], True),
    ("mysqlslap -ubench --password Pw10-sep --concurrency=50", MYSQLSLAP, ["Pw10-sep"], True),
    ("mysqlslap -ubench --password=Pw11-eq --concurrency=50", MYSQLSLAP, ["Pw11-eq"], True),
    ("mysqlslap -ubench --password 'Pw12 sep-tail' --concurrency=50", MYSQLSLAP, ["Pw12", "sep-tail"], True),
    ("# target mysql://bench:Pw13-url@db1:3306/bench\nmysqlslap -ubench --concurrency=50", MYSQLSLAP,
     ["Pw13-url"], False),
    ("sysbench oltp_read_write --db-driver=mysql --mysql-user=sb --mysql-password=Pw14-eq run", SYSBENCH_MYSQL,
     ["Pw14-eq"], True),
    ("sysbench oltp_read_write --db-driver=pgsql --pgsql-password=Pw15-eq run", SYSBENCH_PGSQL, ["Pw15-eq"], True),
    ("sysbench oltp_read_write --db-driver=pgsql --pgsql-password='Pw16 q-tail' run", SYSBENCH_PGSQL,
     ["Pw16", "q-tail"], True),
    # Spaces around `=` (libpq takes them; option files write them), `:` and JSON (issue 46).
    ('$ pgbench -S -c 50 -j 4 -T 120 "host=db1 password = Pw17-sp dbname=bench"', PGBENCH, ["Pw17-sp"], True),
    ("$ pgbench -S -c 50 -j 4 -T 120 \"host=db1 password\t=  'Pw18 sp-tail' dbname=bench\"", PGBENCH,
     ["Pw18", "sp-tail"], True),
]


@pytest.mark.parametrize("echoed, output, secret, in_command", PASSWORD_FORMS,
                         ids=[f"form{i}" for i in range(1, len(PASSWORD_FORMS) + 1)])
def test_no_password_form_reaches_the_store(echoed, output, secret, in_command, tmp_path, capsys):
    path = tmp_path / "run.txt"
    path.write_bytes(echoed.encode() + b"\n" + output.read_bytes())
    store = tmp_path / "s.db"
    # No --engine: a sysbench command line names its driver, and the banner after it
    # no longer opens a run of its own.
    code, out, err = invoke(["import", str(path), "--label", "box", "--store", str(store)], capsys)
    assert code == 0 and "imported 1 point(s) (1 ok, 0 failed)" in out, err
    data = stored_bytes(store)
    for part in secret:
        assert part.encode() not in data, part
        assert part not in out + err
    (point,) = stored_points(store)
    assert ("***" in point["command"]) is in_command


@pytest.mark.parametrize("config, secret", [
    ("[client]\npassword = Pw19-cnf", ["Pw19-cnf"]),  # my.cnf
    ("password: Pw20-yaml", ["Pw20-yaml"]),
    ('{"user": "bench", "password": "Pw21 json-tail"}', ["Pw21", "json-tail"]),
], ids=["option-file", "yaml", "json"])
def test_a_configuration_echoed_after_an_output_is_stored_masked(config, secret, tmp_path, capsys):
    path = tmp_path / "run.txt"
    path.write_bytes(b"mysqlslap --concurrency=50\n" + MYSQLSLAP.read_bytes() + config.encode() + b"\n")
    store = tmp_path / "s.db"
    code, out, err = invoke(["import", str(path), "--label", "box", "--store", str(store)], capsys)
    assert code == 0 and "imported 1 point(s) (1 ok, 0 failed)" in out, err
    data = stored_bytes(store)
    assert b"***" in data and not any(part.encode() in data for part in secret)


def test_a_failed_runs_error_with_a_spaced_password_is_stored_and_shown_masked(tmp_path, capsys):
    """A tool's error line quoting `password = x` (issue 46: kept by import and shown by
    `results`): stored masked, and nothing prints it."""
    path = tmp_path / "failed.txt"
    path.write_text("$ pgbench -S -c 1 -T 10 bench\n"
                    'pgbench: error: connection to server at "db1" failed: invalid option "password = Pw22-err"\n'
                    "pgbench: fatal: Run was aborted; the above results are incomplete.\n")
    store = tmp_path / "s.db"
    code, out, err = invoke(["import", str(path), "--tool", "pgbench", "--label", "box", "--store", str(store)],
                            capsys)
    assert code == 0 and "(0 ok, 1 failed)" in out, out + err
    (point,) = stored_points(store)
    assert point["error"].endswith('invalid option "password = ***"'), point["error"]
    shown = invoke(["results", "--store", str(store), "--json"], capsys)
    assert "***" in shown[1] and b"Pw22" not in stored_bytes(store) and "Pw22" not in out + err + shown[1] + shown[2]


@pytest.mark.parametrize("output", [PGBENCH, MYSQLSLAP, SYSBENCH_MYSQL], ids=["pgbench", "mysqlslap", "sysbench"])
@pytest.mark.parametrize("line_break", ["\r", "\r\n", "\x0c", "\u2028"], ids=["cr", "crlf", "ff", "ls"])
def test_any_line_break_reads_as_a_newline(output, line_break, tmp_path, capsys):
    """Issue 46: the readers split lines with splitlines() but found them with re.M (which
    knows \n alone), so a mysqlslap output with lone carriage returns was refused as no
    tool's. Each break splitlines() knows reads as \n: the same point, the same lines."""
    stored = []
    engine = "postgres" if output == PGBENCH else "mysql"
    for name, brk in (("n", "\n"), ("other", line_break)):
        path = tmp_path / f"{name}.txt"
        path.write_bytes(output.read_text().replace("\n", brk).encode())
        code, out, err = invoke(["import", str(path), "--label", "box", "--engine", engine,
                                 "--store", str(tmp_path / f"{name}.db")], capsys)
        assert code == 0 and "imported 1 point(s) (1 ok, 0 failed)" in out, (name, err)
        (point,) = stored_points(tmp_path / f"{name}.db")
        stored.append({k: point[k] for k in ("workload", "threads", "clients", "tps", "qps", "duration_s")})
    assert stored[0] == stored[1]


def test_a_sysbench_command_line_before_its_banner_stays_with_its_run(tmp_path, capsys):
    path = tmp_path / "sb.txt"
    path.write_text("sysbench oltp_point_select --db-driver=pgsql --threads=10 --tables=4 run\n"
                    + SYSBENCH_PGSQL.read_text())
    store = tmp_path / "s.db"
    code, out, err = invoke(["import", str(path), "--label", "box", "--store", str(store)], capsys)
    assert code == 0 and "imported 1 point(s)" in out, err
    (point,) = stored_points(store)
    assert (point["engine"], point["workload"]) == ("postgres", "sysbench-point-select")
    assert '"--db-driver=pgsql"' in point["command"]


_CSV_HEADER = "label,engine,workload,threads,clients,tps,transactions,time_s,latency_avg_ms,price_per_hour\n"
_CSV_GOOD = "box,mysql,sysbench-read-write,8,8,100.5,30150,300,12.5,0.34\n"


@pytest.mark.parametrize("row, where, message", [
    ("box,mysql,mysqlslap,8,8,nan,,,,\n", 3, "column 'tps': 'nan' is not a finite number"),
    ("box,mysql,mysqlslap,8,8,inf,,,,\n", 3, "column 'tps': 'inf' is not a finite number"),
    ("box,mysql,mysqlslap,8,8,1e999,,,,\n", 3, "column 'tps': '1e999' is not a finite number"),
    ("box,mysql,mysqlslap,8,8,-100,,,,\n", 3, "column 'tps': '-100' is negative"),
    ("box,mysql,mysqlslap,8,8,100,,,-3,\n", 3, "column 'latency_avg_ms': '-3' is negative"),
    ("box,mysql,mysqlslap,1e26,,100,,,,\n", 3, "column 'threads': '1e26' is beyond what a tool can print"),
    ("box,mysql,mysqlslap,0,,100,,,,\n", 3, "column 'threads': '0' must be at least 1"),
    ("box,mysql,mysqlslap,8,2.5,100,,,,\n", 3, "column 'clients': '2.5' is not a whole number"),
    ("box,mysql,mysqlslap,8,8,,1e30,300,,\n", 3, "column 'transactions': '1e30' is beyond what a tool can print"),
    ("box,mysql,mysqlslap,8,8,,100,1e300,,\n", 3, "column 'time_s': '1e300' is beyond what a tool can print"),
    ("box,mysql,mysqlslap,8,8,100,,,,0\n", 3, "column 'price_per_hour': '0' must be above 0"),
    ("box,mysql,mysqlslap,8,8,100,,,,,extra\n", 3, "11 fields where the header has 10 columns"),
    ("box,mysql,mysqlslap,8,8,100\n", 3, "6 fields where the header has 10 columns"),
    ('"box,mysql,mysqlslap,8,8,100,,,,\n', 3, "a quote opened on this line is never closed"),
    ('"box"x,mysql,w,8,8,100,,,,\n', 3, "','"),  # text after a closing quote: csv says what it expected
    ("box,mysql,mysqlslap,8,8,1\x00,,,,\n", 3, "column 'tps': '1\\x00' is not a number"),
    ("\x1b]0;owned\x07box,mysql,mysqlslap,8,8,100,,,,\n", 3, "column 'label': '\\x1b]0;owned\\x07box' holds control "
                                                    "characters"),
])
def test_a_csv_row_no_tool_could_print_is_refused_at_its_line(row, where, message, tmp_path, capsys):
    path = tmp_path / "rows.csv"
    path.write_text(_CSV_HEADER + _CSV_GOOD + row, newline="")
    store = tmp_path / "s.db"
    code, out, err = invoke(["import", str(path), "--label", "x", "--store", str(store)], capsys)
    assert code == 2 and out == ""
    assert err.startswith(f"dbarena: error: rows.csv:{where}: ") and message in err, err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert stored_points(store) == []  # the good row before it is not stored either


def test_a_quote_never_closed_is_named_at_the_line_it_opens(tmp_path, capsys):
    path = tmp_path / "rows.csv"
    path.write_text(_CSV_HEADER + '"box\n' + _CSV_GOOD * 3)
    code, _, err = invoke(["import", str(path), "--label", "x", "--store", str(tmp_path / "s.db")], capsys)
    assert code == 2 and err.startswith("dbarena: error: rows.csv:2: a quote opened on this line is never closed")


def test_a_csv_saved_with_a_byte_order_mark_imports(tmp_path, capsys):
    path = tmp_path / "excel.csv"
    path.write_bytes(b"\xef\xbb\xbf" + (_CSV_HEADER + _CSV_GOOD).replace("\n", "\r\n").encode())
    store = tmp_path / "s.db"
    code, out, err = invoke(["import", str(path), "--label", "x", "--store", str(store)], capsys)
    assert code == 0 and "imported 1 point(s)" in out, err
    (point,) = stored_points(store)
    assert (point["threads"], point["tps"]) == (8, 100.5)


@pytest.mark.parametrize("fixture, old, new, where, message", [
    (PGBENCH, "processed: 3921733", "processed: 39217330000000000000000000", 1,
     "transactions 39217330000000000000000000 is beyond what a tool can print"),
    (PGBENCH, "number of clients: 50", "number of clients: 5000000", 1, "clients 5000000 is beyond what a tool can"),
    (SYSBENCH_PGSQL, "transactions:                        3640", "transactions:                        "
     "99999999999999999999999", 1, "is beyond what a tool can print"),
    (SYSBENCH_PGSQL, "time elapsed:                        10.0421s", "time elapsed:                        "
     + "9" * 400 + "s", 1, "total time inf s is not a finite number"),
    (MYSQLSLAP, "Average number of seconds to run all queries: 401.446", "Average number of seconds to run all queries: "
     + "9" * 400, 2, "the average run time inf s is not a finite number"),
])
def test_a_text_output_with_a_figure_no_tool_prints_is_refused(fixture, old, new, where, message, tmp_path, capsys):
    text = fixture.read_text()
    assert old in text
    path = tmp_path / "out.txt"
    path.write_text(text.replace(old, new))
    store = tmp_path / "s.db"
    code, out, err = invoke(["import", str(path), "--label", "x", "--engine", "postgres", "--store", str(store)],
                            capsys)
    assert code == 2 and err.startswith(f"dbarena: error: out.txt:{where}: ") and message in err, err
    assert err.count("\n") == 1 and stored_points(store) == []


@pytest.mark.parametrize("label, message", [
    ("", "--label: expected a non-empty text, not ''"),
    ("   ", "--label: expected a non-empty text"),
    ("\x1b[2Jbox", "--label: '\\x1b[2Jbox' holds control characters"),
    ("x" * 20_000, "--label: '" + "x" * 60 + "'... is 20,000 characters long (at most 200)"),
])
def test_an_empty_label_is_refused_before_the_store_is_opened(label, message, tmp_path, capsys):
    store = tmp_path / "s.db"
    code, out, err = invoke(["import", str(PGBENCH), "--label", label, "--store", str(store)], capsys)
    assert code == 2 and err.startswith("dbarena: error: ") and message in err and err.count("\n") == 1
    assert not store.exists()


@pytest.mark.parametrize("fixture, tool, message", [
    (MYSQLSLAP, "pgbench", "no pgbench run found (the file looks like mysqlslap output: try --tool mysqlslap)"),
    (PGBENCH, "mysqlslap", "no mysqlslap run found (the file looks like pgbench output: try --tool pgbench)"),
    (PGBENCH, "sysbench", "no sysbench run found (the file looks like pgbench output: try --tool pgbench)"),
])
def test_a_file_read_as_another_tools_output_is_an_error_saying_what_it_looks_like(fixture, tool, message, tmp_path,
                                                                                   capsys):
    store = tmp_path / "s.db"
    code, out, err = invoke(["import", str(fixture), "--tool", tool, "--label", "x", "--engine", "postgres",
                             "--store", str(store)] if tool == "sysbench" else
                            ["import", str(fixture), "--tool", tool, "--label", "x", "--store", str(store)], capsys)
    assert code == 2 and err == f"dbarena: error: {fixture.name}: {message}\n"
    assert stored_points(store) == []


@pytest.mark.parametrize("tool", ["auto", "pgbench"])
def test_a_summary_whose_header_was_cut_off_is_named_line_by_line(tool, tmp_path, capsys):
    """An article's code block keeping only a summary's last lines."""
    lines = PGBENCH.read_text().splitlines(keepends=True)
    path = tmp_path / "article.txt"
    path.write_text("".join(lines[11:14]))  # latency average, initial connection time, tps
    code, out, err = invoke(["import", str(path), "--tool", tool, "--label", "x", "--store", str(tmp_path / "s.db")],
                            capsys)
    assert code == 2 and err.count("\n") == 1
    # Nothing at all could be read: an error, as a file of no run is.
    assert err.startswith("dbarena: error: article.txt:1: 'latency average = 1.531 ms' not stored: a pgbench "
                          "summary without its header")
    assert "(its figures run to line 3)" in err


def test_a_csv_label_beyond_200_characters_is_refused_on_its_line(tmp_path, capsys):
    rows = tmp_path / "rows.csv"
    rows.write_text("label,engine,workload,threads,tps\nok,postgres,pgbench-tpcb,1,100\n"
                    f"{'y' * 201},postgres,pgbench-tpcb,2,150\n")
    store = tmp_path / "s.db"
    code, out, err = invoke(["import", str(rows), "--label", "x", "--store", str(store)], capsys)
    assert code == 2 and err == (f"dbarena: error: rows.csv:3: column 'label': '{'y' * 60}'... is 201 characters long "
                                 "(at most 200)\n")
    assert stored_points(store) == []


# ------------------------------------------------------------------ what is not a file, or too big

def _import_in_a_process(path: Path, store: Path) -> subprocess.CompletedProcess:
    """`dbarena import` in a process of its own, with a timeout: a FIFO once blocked it
    for ever, /dev/zero filled the memory; here either fails the test instead."""
    return subprocess.run([sys.executable, "-m", "dbarena", "import", str(path), "--label", "x", "--store", str(store)],
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("kind", ["a FIFO", "a character device"])
def test_what_is_not_a_regular_file_is_refused_in_one_line(kind, tmp_path):
    if kind == "a FIFO":
        path = tmp_path / "pipe"
        os.mkfifo(path)  # no writer: opening it to read would wait for one
    else:
        path = Path("/dev/zero")  # endless
    done = _import_in_a_process(path, tmp_path / "s.db")
    assert done.returncode == 2
    assert done.stderr == f"dbarena: error: {path}: {kind}, not a regular file: import reads files\n"
    assert stored_points(tmp_path / "s.db") == []


def test_a_directory_is_refused_in_one_line(tmp_path):
    """The command line refuses it before the library sees it (click: dir_okay=False)."""
    folder = tmp_path / "outputs"
    folder.mkdir()
    done = _import_in_a_process(folder, tmp_path / "s.db")
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert done.stderr.startswith("dbarena: error: ") and f"'{folder}' is a directory" in done.stderr, done.stderr
    assert stored_points(tmp_path / "s.db") == []


def test_a_directory_or_a_socket_is_refused_by_the_library_too(tmp_path):
    from dbarena.importers.storing import _Unreadable, open_regular

    with pytest.raises(_Unreadable, match="a directory, not a regular file"):
        open_regular(tmp_path)
    with socket.socket(socket.AF_UNIX) as listening:
        listening.bind(str(tmp_path / "sock"))
        with pytest.raises(_Unreadable, match="a socket, not a regular file"):
            open_regular(tmp_path / "sock")


def test_a_file_beyond_the_old_size_limit_without_a_line_break_is_refused_at_its_line(tmp_path):
    """No file size is refused any more (import reads a stream, one run at a time); a
    file bigger than the old limit (128 MiB) that no line break splits would be one
    line held whole: refused in one line once a run's bound is read, not an OOM."""
    from dbarena.limits import MAX_IMPORT_RUN_CHARS

    big = tmp_path / "big.txt"
    with big.open("wb") as f:
        f.truncate(128 * 2**20 + 1)  # sparse: NUL bytes (UTF-8 text), no line break
    done = _import_in_a_process(big, tmp_path / "s.db")
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"dbarena: error: big.txt:1: a line of more than {MAX_IMPORT_RUN_CHARS:,} bytes: "
                                  "import holds one run in memory at a time"), done.stderr
    assert stored_points(tmp_path / "s.db") == []


def test_a_run_at_the_bound_is_read_and_one_character_more_is_refused(tmp_path):
    from dbarena.importers.storing import ImportOptions, import_file
    from dbarena.store.database import Store

    path = tmp_path / "f.txt"
    path.write_bytes(PGBENCH.read_bytes())
    size = len(PGBENCH.read_text())  # one run: the file's text, every line with its break
    assert PGBENCH.read_text().endswith("\n")
    with Store(tmp_path / "s.db") as db:
        refused = import_file(db, path, ImportOptions(label="x"), max_run_chars=size - 1)
        assert refused.error == (f"f.txt:1: a run of more than {size - 1:,} characters ({(size - 1) / 2**20:g} MiB) "
                                 "from this line on, with no command line, banner or summary that ends it: import "
                                 "holds one run in memory at a time and reads none that long")
        assert import_file(db, path, ImportOptions(label="x"), max_run_chars=size).points == 1
