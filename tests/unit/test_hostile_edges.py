"""Hostile but fair input at the edge (issue 30): one line on stderr and a non-zero exit,
no password echoed, no traceback, nothing started, no store touched that is not
dbarena's, no report lost, valid JSON, text that cannot act on a terminal or a
spreadsheet. In process: `main(argv)`, its SystemExit caught."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from dbarena.cli import main
from dbarena.errors import ExitStatus
from dbarena.store.database import SCHEMA_VERSION, Store

FIXTURES = Path(__file__).parent.parent / "fixtures" / "stores"
DEMO = FIXTURES / "demo-seed-a-quick.db"  # label vm, study seed-a (schema 14)
SECRET = "S3cret"


def invoke(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as ended:
        main(argv)
    out, err = capsys.readouterr()
    code = ended.value.code
    return (code if isinstance(code, int) else 0), out, err


def one_line_error(code: int, err: str, status: int = ExitStatus.USAGE) -> str:
    assert code == status, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dbarena: error: "), err
    assert "Traceback" not in err
    return lines[0]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    shutil.copy(DEMO, tmp_path / "demo.db")
    return tmp_path / "demo.db"


@pytest.fixture
def current(demo: Path) -> Path:
    """The demo store at today's schema: a writer that fails leaves it byte for byte
    (an older one it would migrate first, which is a write of its own)."""
    Store(demo).close()
    return demo


# ------------------------------------------------------------------ no password echoed

PASSWORD_FORMS = [
    f"postgresx://bench:{SECRET}@127.0.0.1/db",  # a mistyped scheme
    f"postgresql://bench:{SECRET}@[::1/db",  # and a malformed IPv6 host besides
    f"mysql://bench:{SECRET}@127.0.0.1:port/db",  # a port that is not a number
    f"host=127.0.0.1 dbname=db password={SECRET}",  # a keyword connection string
    f"host=127.0.0.1 password='{SECRET} x'",  # quoted
    f"postgresql://bench@127.0.0.1/db?password={SECRET}",  # in the query
]


@pytest.mark.parametrize("url", PASSWORD_FORMS)
@pytest.mark.parametrize("command", [["run", "--target"], ["study", "check", "--target"], ["run", "--store"],
                                     ["results", "--store"], ["report", "--store"], ["import", "f.csv", "--store"]])
def test_no_password_is_echoed_in_an_error(url, command, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "f.csv").write_text("engine,workload,threads,tps\npostgres,pgbench-tpcb,1,100\n")
    code, out, err = invoke([*command, url], capsys)
    line = one_line_error(code, err)
    assert SECRET not in out + err, line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.csv"]  # no store file made of the URL


def test_a_study_files_target_with_a_password_is_not_echoed(tmp_path, capsys):
    study = tmp_path / "s.toml"
    study.write_text(f'schema = 1\nname = "s"\n[engines.postgres]\ntarget = "postgresx://u:{SECRET}@h/db"\n')
    code, out, err = invoke(["study", "check", "--study", str(study)], capsys)
    one_line_error(code, err)
    assert SECRET not in err


# ------------------------------------------------------------------ one line, before anything starts

@pytest.mark.parametrize("argv, said", [
    (["--target", "postgresql://bench@[::1/db"], "an IPv6 address is not closed by ']'"),
    (["--duration", "99999999999999999999999999"], "--duration"),
    (["--threads", "1e23"], "'1e23' is neither a number of threads"),
    (["--threads", "100000000000000000000000"], "threads 1 to 1000000"),
    (["--warmup", "99999999999999999999"], "--warmup"),
    (["--repeat", "1000000000"], "--repeat"),
    (["--scale", "99999999999"], "--scale"),
    (["--clients-per-thread", "10000000"], "--clients-per-thread"),
    (["--latency-sampling", "nan"], "is not a finite number"),
    (["--price-per-hour", "nan"], "is not a finite number"),
    (["--price-per-hour", "inf"], "--price-per-hour"),
    (["--price-per-month", "1e999"], "--price-per-month"),
    (["--budget", "1e999", "--precision", "2%"], "expected a time"),
    (["--budget", "nan", "--precision", "2%"], "expected a time"),
    (["--budget", "9999999999d", "--precision", "2%"], "at most 2147483647 s"),
    (["--label", ""], "label '' is empty"),
    (["--label", "vm\x1b]0;owned\x07"], "holds control characters"),
    (["--currency", "\x1b[2J", "--price-per-hour", "1"], "holds control characters"),
])
@pytest.mark.parametrize("command", [["run"], ["study", "check"]])
def test_an_absurd_value_is_refused_at_the_edge(command, argv, said, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code, out, err = invoke([*command, *argv], capsys)
    line = one_line_error(code, err)
    assert said in line
    assert list(tmp_path.iterdir()) == []  # no store, nothing prepared


@pytest.mark.parametrize("body, said", [
    ("[sweep]\nduration_s = 9223372036854775807\n", "duration_s 9223372036854775807 is beyond"),
    ("[sweep]\nlevels = [1, 9223372036854775807]\n", "levels 9223372036854775807 is beyond"),
    ("[sweep]\nlevels = [1000000]\nclients_per_thread = 2\n", "clients (level 1000000 x clients_per_thread 2)"),
    ("[sweep]\nwarmup_s = 4294967296\n", "warmup_s 4294967296 is beyond"),
    ("[sweep]\nrepeats = 100000000\n", "sweep.repeats 100000000 is beyond"),
    ("[datasets]\nscale = 4294967296\n", "scale 4294967296 is beyond"),
    ("[price]\nper_hour = inf\n", "price.per_hour inf is not a finite number"),
    ("[price]\nper_month = 1e300\n", "price.per_month 1e+300 is beyond any price"),
    ('label = "a\\u001b[2Jb"\n', "holds control characters"),
])
def test_a_study_files_absurd_value_is_refused_before_an_estimate(body, said, tmp_path, capsys):
    study = tmp_path / "s.toml"
    study.write_text('schema = 1\nname = "s"\n' + body)
    code, out, err = invoke(["study", "check", "--study", str(study)], capsys)
    line = one_line_error(code, err)
    assert said in line and str(study) in line
    assert " h" not in out  # no estimate of ~27777777777777777311744.0 h


# ------------------------------------------------------------------ a store that is not dbarena's

def _foreign(path: Path) -> Path:
    con = sqlite3.connect(path)
    con.executescript("CREATE TABLE customers (id INTEGER); CREATE TABLE orders (id INTEGER);"
                      "INSERT INTO customers VALUES (1);")
    con.close()
    return path


READERS = [["results"], ["results", "--json"], ["results", "--summary"], ["compare", "a", "b"],
           ["report", "--format", "json"], ["store", "info"], ["store", "migrate"]]
WRITERS = [["import", "f.csv", "--label", "x"], ["merge", "DEMO"]]


@pytest.mark.parametrize("command", READERS + WRITERS, ids=" ".join)
def test_another_programs_sqlite_file_is_refused_and_never_written(command, tmp_path, demo, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "f.csv").write_text("engine,workload,threads,tps\npostgres,pgbench-tpcb,1,100\n")
    other = _foreign(tmp_path / "other.db")
    before = digest(other)
    argv = [str(demo) if a == "DEMO" else a for a in command]
    code, out, err = invoke([*argv, "--store", str(other)], capsys)
    line = one_line_error(code, err)
    assert f"{other} is not a dbarena store (it has tables customers, orders): give another --store" in line
    assert digest(other) == before


@pytest.mark.parametrize("command", READERS, ids=" ".join)
def test_an_empty_file_is_no_store_to_read(command, tmp_path, capsys):
    empty = tmp_path / "empty.db"
    empty.touch()
    code, out, err = invoke([*command, "--store", str(empty)], capsys)
    assert "is not a dbarena store (it is empty)" in one_line_error(code, err)
    assert empty.stat().st_size == 0


def test_an_empty_file_becomes_a_new_store_for_a_writer(tmp_path, demo, capsys):
    empty = tmp_path / "made-by-mktemp.db"
    empty.touch()
    code, out, err = invoke(["merge", str(demo), "--store", str(empty)], capsys)
    assert code == 0 and "merged" in out, err
    with Store(empty) as db:
        assert db.version == SCHEMA_VERSION and db.runs()


def test_a_text_file_is_refused_untouched(tmp_path, capsys):
    text = tmp_path / "notes.db"
    text.write_text("not SQLite at all " * 100)
    before = digest(text)
    for command in (["results"], ["import", str(text), "--label", "x"]):
        code, out, err = invoke([*command, "--store", str(text)], capsys)
        assert "is not a dbarena store (not an SQLite database)" in one_line_error(code, err)
    assert digest(text) == before


def test_an_empty_file_is_no_store_to_merge_from(tmp_path, current, capsys):
    empty = tmp_path / "empty.db"
    empty.touch()
    before = digest(current)
    code, out, err = invoke(["merge", str(empty), "--store", str(current)], capsys)
    assert f"{empty} is not a dbarena store (it is empty)" in one_line_error(code, err)
    assert digest(current) == before


@pytest.mark.parametrize("command", READERS[:-1], ids=" ".join)
def test_reading_never_writes_a_store(command, demo, capsys):
    before = digest(demo)
    invoke([*command, "--store", str(demo)], capsys)
    assert digest(demo) == before
    assert not list(demo.parent.glob("demo.db-*"))  # no journal left either


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("v*.db")), ids=lambda p: p.stem)
def test_an_older_store_is_read_through_a_copy_in_memory(path, tmp_path, capsys):
    copy = tmp_path / path.name
    shutil.copy(path, copy)
    before = digest(copy)
    code, out, err = invoke(["results", "--json", "--store", str(copy)], capsys)
    assert code == 0 and err == "" and json.loads(out)
    assert digest(copy) == before
    code, out, err = invoke(["store", "info", "--json", "--store", str(copy)], capsys)
    assert json.loads(out)["schema_version"] == int(path.stem[1:])  # the file's own version
    code, out, err = invoke(["store", "migrate", "--store", str(copy)], capsys)
    assert code == 0 and f"schema version {SCHEMA_VERSION}" in out
    with sqlite3.connect(copy) as con:
        assert con.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_store_migrate_makes_no_store(tmp_path, capsys):
    code, out, err = invoke(["store", "migrate", "--store", str(tmp_path / "none.db")], capsys)
    assert "no results store at" in one_line_error(code, err)
    assert list(tmp_path.iterdir()) == []
