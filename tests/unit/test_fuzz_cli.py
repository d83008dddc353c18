"""A fuzz suite that keeps issue 30 fixed: every command driven in process with
generated arguments, study files and import files (hypothesis), asserting what a user
is promised whatever they type:

- no traceback: nothing but SystemExit leaves `main`;
- an error is one line (`dbarena: error: ...`) and a non-zero exit status;
- a store is unchanged by a read, and by a write that failed (its bytes hashed);
- no password a user typed is echoed, no control character reaches the terminal.

Nothing here starts a database: `run` is driven only with a store that is not
dbarena's (refused after the flags are checked and before anything starts), and the
other commands start none. Examples per test: DBARENA_FUZZ_EXAMPLES (default 12, for
`make check`'s fast tier); the issue's run used DBARENA_FUZZ_EXAMPLES=400 and more.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import re
import shutil
import sqlite3
import tempfile
from pathlib import Path
from typing import Iterator

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from dbarena.cli import main
from dbarena.errors import ExitStatus
from dbarena.stats import analysis
from dbarena.store.database import Store
from dbarena.study import run_flags

EXAMPLES = int(os.environ.get("DBARENA_FUZZ_EXAMPLES", "12"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize="DBARENA_FUZZ_EXAMPLES" not in os.environ,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                       HealthCheck.data_too_large])
DEMO = Path(__file__).parent.parent / "fixtures" / "stores" / "demo-seed-a-quick.db"
SECRET = "Pw9Secret"
# A time no study takes: ~27777777777777777311744.0 h, 1e+22 s (issue 30).
ABSURD = re.compile(r"~?(?:\d{7,}(?:\.\d+)? h\b|\d{1,3}(?:,\d{3}){2,} h\b|\d(?:\.\d+)?e\+\d+ (?:h|s|min)\b)")


# ------------------------------------------------------------------ running a command


def invoke(argv: list[str], cwd: Path) -> tuple[int, str, str]:
    """main(argv) in `cwd`: (exit status, stdout, stderr). Any exception but SystemExit
    propagates: it would be a traceback on a user's terminal."""
    out, err = io.StringIO(), io.StringIO()
    before = Path.cwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main(argv)
                code = 0
            except SystemExit as ended:
                code = ended.code if isinstance(ended.code, int) else (0 if ended.code is None else 1)
    finally:
        os.chdir(before)
    return code, out.getvalue(), err.getvalue()


def check_outcome(argv: list[str], code: int, out: str, err: str) -> None:
    """What every command promises, whatever its arguments."""
    assert "Traceback" not in out + err, (argv, err)
    assert SECRET not in err, (argv, err)  # (stdout may show a label or a study the user wrote, as written)
    assert "\x1b" not in err and "\x07" not in err, (argv, err)
    if argv[:2] == ["study", "check"] and code == 2 and not err:
        # A plan `run` would refuse here (too big for the disk): shown, with why, and
        # exit 2 (cli/running.py's study check).
        assert out.strip(), argv
        return
    if argv[0] == "import" and code == ExitStatus.POINTS_FAILED:
        check_skipped(err)
        return
    if code != 0:
        lines = err.strip().splitlines()
        errors = [line for line in lines if line.startswith("dbarena: error: ")]
        assert len(errors) == 1 and errors[0] == lines[-1], (argv, code, err)
        assert len(errors[0]) > len("dbarena: error: ") + 3, (argv, err)


# An import that stored what it could read and reports the pieces with figures it did
# not store: `FILE:LINE: why` each, then their count, exit status 1 (docs/import.md).
SKIPPED_PIECE = re.compile(r"[^\n]+:\d+: [^\n]+")
SKIPPED_COUNT = re.compile(r"dbarena: (\d+) piece\(s\) skipped: figures not stored \(--allow-skipped accepts them\)")


def check_skipped(err: str) -> None:
    *pieces, last = err.strip().split("\n")
    count = SKIPPED_COUNT.fullmatch(last)
    assert count is not None and int(count.group(1)) == len(pieces) > 0, err
    assert all(SKIPPED_PIECE.fullmatch(line) and not line.startswith("dbarena:") for line in pieces), err


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else "absent"


@contextlib.contextmanager
def workdir() -> Iterator[Path]:
    """A fresh directory per example (hypothesis runs many in one test call)."""
    with tempfile.TemporaryDirectory(prefix="dbarena-fuzz-") as tmp:
        yield Path(tmp)


@pytest.fixture(scope="module")
def current_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo store at today's schema (a reader then has nothing to migrate in memory,
    and a failed writer nothing to migrate first), copied for each example."""
    path = tmp_path_factory.mktemp("fuzz") / "demo.db"
    shutil.copy(DEMO, path)
    # Today's schema and today's cache of derived figures (ESTIMATOR_VERSION) and session
    # summaries: a read that finds them computed writes nothing (one that does not,
    # caches them: store.md).
    with Store(path) as db:
        analysis.load(db)
        analysis.stored_summaries(db)
    return path


def foreign_store(where: Path) -> Path:
    path = where / "other.db"
    con = sqlite3.connect(path)
    con.executescript("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO customers VALUES "
                      "(1, 'a');")
    con.close()
    return path


# ------------------------------------------------------------------ values


CONTROL = st.sampled_from(["\x1b]0;owned\x07", "\x1b[2J", "\x00", "\n", "\r", "\t", "\x7f", "\u202e", "\x9b"])
NUMBERS = st.one_of(
    st.integers(min_value=-10, max_value=10**30).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["nan", "inf", "-inf", "1e999", "1e23", "1e-300", "", " ", "0x10", "1_000", "\u0661\u0662",
                     "\u00b2", "2147483648", "9223372036854775808", "-0", "1.5", "3%", "50%", "1001%", "20 %"]),
)
TEXT = st.one_of(st.text(max_size=30), st.tuples(st.text(max_size=8), CONTROL, st.text(max_size=8)).map("".join),
                 st.sampled_from(["=HYPERLINK(\"x\")", "+1", "-O2", "@a", "vm", "seed-a", "a,b", ",", " "]))
URLS = st.builds(
    lambda scheme, user, password, host, port, path, query: (
        f"{scheme}://{user}{':' + password if password else ''}@{host}{port}{path}{query}"),
    st.sampled_from(["postgresql", "postgres", "mysql", "postgresx", "mysq", "http", "", "postgresql:"]),
    st.sampled_from(["bench", "", "u%20x", "a@b"]),
    st.sampled_from([None, SECRET, f"{SECRET}@x"]),
    st.sampled_from(["127.0.0.1", "[::1", "[::1]", "::1", "", "h o", "[zz]"]),
    st.sampled_from(["", ":5432", ":99999", ":x", ":-1", ":"]),
    st.sampled_from(["/db", "", "/", "/a/b"]),
    st.sampled_from(["", f"?password={SECRET}", "?sslmode=disable", "?dbname=x"]),
) | st.sampled_from([f"host=127.0.0.1 password={SECRET}", f"host=h password='{SECRET} x' dbname=d",
                     f"dbname=d user=u password={SECRET}"])


def flag_value(flag: object) -> st.SearchStrategy[list[str]]:
    """Generated arguments for one run flag (study/flags.py's table): its option and a
    value of any shape, numbers of every size and text with control characters."""
    from dbarena.study import flags as table

    assert isinstance(flag, table.RunFlag)
    if isinstance(flag.kind, table.Switch):
        return st.just([flag.flag])
    if flag.flag == "--target":
        value: st.SearchStrategy[str] = URLS
    elif isinstance(flag.kind, (table.Int, table.Float)) or flag.flag in ("--threads", "--budget", "--precision"):
        value = NUMBERS
    elif isinstance(flag.kind, table.Choice):
        value = st.sampled_from(flag.kind.choices) | TEXT
    elif isinstance(flag.kind, table.Pairs):
        value = st.builds(lambda k, v: f"{k}={v}", st.sampled_from(["work_mem", "shared_buffers", "", "x y"]),
                          NUMBERS | TEXT) | TEXT
    elif isinstance(flag.kind, table.Directory):
        value = st.sampled_from(["/nonexistent", "/tmp", "", "\x00"]) | TEXT
    else:
        value = TEXT | NUMBERS
    return value.map(lambda v: [flag.flag, v])


FLAGS = run_flags(here=False)
RUN_ARGS = st.lists(st.sampled_from(FLAGS).flatmap(flag_value), max_size=5).map(lambda xs: [a for x in xs for a in x])
STUDY_NAME = st.sampled_from([[], ["--study", "seed-a"], ["--study", "seed-b"], ["--study", "nosuch"]])


def no_nul(argv: list[str]) -> bool:
    """A NUL cannot reach a program's argv (the kernel ends the string there)."""
    return not any("\x00" in a for a in argv)


# ------------------------------------------------------------------ the commands


@FUZZ
@given(study=STUDY_NAME, args=RUN_ARGS.filter(no_nul), quick=st.booleans())
def test_study_check_with_any_flags(study, args, quick):
    argv = ["study", "check", *study, *(["--quick"] if quick else []), *args]
    with workdir() as cwd:
        code, out, err = invoke(argv, cwd)
        check_outcome(argv, code, out, err)
        # 3: what the machine lacks (--pg-bindir /nonexistent: no initdb there).
        assert code in (0, 2, 3), (argv, code, err)
        assert list(cwd.iterdir()) == []  # study check writes nothing
        if code == 0:
            # No estimate past the bounds (limits.MAX_STUDY_SECONDS: ten years, 87,600 h).
            assert not ABSURD.search(out), out


@FUZZ
@given(study=STUDY_NAME, args=RUN_ARGS.filter(no_nul))
def test_run_with_any_flags_starts_nothing_on_a_foreign_store(study, args):
    """`run` checks every flag before anything starts; the store, another program's,
    is refused next, before any server: so the command always fails, in one line, and
    the file is left as it was."""
    with workdir() as cwd:
        other = foreign_store(cwd)
        before = digest(other)
        argv = ["run", *study, *args, "--store", str(other)]
        code, out, err = invoke(argv, cwd)
        check_outcome(argv, code, out, err)
        assert code != 0 and digest(other) == before, (argv, code, err)
        assert sorted(p.name for p in cwd.iterdir()) == ["other.db"]


READ_ARGS = st.lists(st.one_of(
    st.sampled_from([["--summary"], ["--json"], ["--wide"]]),
    st.tuples(st.sampled_from(["--run", "--raw"]), NUMBERS).map(list),
    st.tuples(st.sampled_from(["--label", "--study", "--variant"]), TEXT | st.just("vm")).map(list),
), max_size=4).map(lambda xs: [a for x in xs for a in x])

REPORT_ARGS = st.lists(st.one_of(
    st.tuples(st.sampled_from(["--label", "--baseline"]), TEXT | st.just("vm")).map(list),
    st.tuples(st.just("--price"), st.builds(lambda l, p: f"{l}={p}", st.sampled_from(["vm", "x", ""]),
                                            NUMBERS | st.sampled_from(["1/h", "nan/h", "inf EUR/month", "1e999/month",
                                                                       "-1/h", "1 XX/h", "/month"]))).map(list),
    st.tuples(st.just("--at-threads"), NUMBERS).map(list),
    st.tuples(st.just("--format"), st.sampled_from(["json", "csv", "md", "html", "pdf", ""])).map(list),
), max_size=4).map(lambda xs: [a for x in xs for a in x])


@FUZZ
@given(command=st.sampled_from([["results"], ["store", "info"]]), args=READ_ARGS.filter(no_nul))
def test_reading_commands_never_change_the_store(command, args, current_store):
    with workdir() as cwd:
        store = cwd / "s.db"
        shutil.copy(current_store, store)
        before = digest(store)
        argv = [*command, *args, "--store", str(store)]
        if command == ["store", "info"]:
            argv = [*command, *(["--json"] if "--json" in args else []), "--store", str(store)]
        code, out, err = invoke(argv, cwd)
        check_outcome(argv, code, out, err)
        assert digest(store) == before, argv
        assert "\x1b" not in out


@FUZZ
@given(a=TEXT | st.just("vm"), b=TEXT | st.just("vm"), args=st.lists(st.sampled_from(
    [["--json"], ["--wide"], ["--format", "md"], ["--about", "host"], ["--study", "seed-a"], ["--study", "x"]]),
    max_size=3).map(lambda xs: [a for x in xs for a in x]))
def test_compare_never_changes_the_store(a, b, args, current_store):
    with workdir() as cwd:
        store = cwd / "s.db"
        shutil.copy(current_store, store)
        before = digest(store)
        argv = ["compare", a, b, *args, "--store", str(store)]
        if not no_nul(argv):
            return
        code, out, err = invoke(argv, cwd)
        check_outcome(argv, code, out, err)
        assert digest(store) == before and "\x1b" not in out


@FUZZ
@given(args=REPORT_ARGS.filter(no_nul))
def test_report_never_changes_the_store_and_writes_whole_or_nothing(args, current_store):
    # HTML and Markdown draw charts for seconds: the fast tier asks for the other formats.
    args = [a if a not in ("md", "html") else "json" for a in args]
    with workdir() as cwd:
        store = cwd / "s.db"
        shutil.copy(current_store, store)
        before = digest(store)
        (cwd / "r.out").write_text("the previous report")
        argv = ["report", *args, "--store", str(store), "-o", str(cwd / "r.out")]
        if "--format" not in args:
            argv += ["--format", "json"]
        code, out, err = invoke(argv, cwd)
        check_outcome(argv, code, out, err)
        assert digest(store) == before
        if code != 0:
            assert (cwd / "r.out").read_text() == "the previous report"
        assert sorted(p.name for p in cwd.iterdir()) == ["r.out", "s.db"]


CSV_CELLS = st.one_of(NUMBERS, TEXT, st.sampled_from(["postgres", "mysql", "pgbench-tpcb", "sysbench-read-only",
                                                       "mysqlslap", "1", "100.5"]))
CSV_FILES = st.builds(
    lambda header, rows, bom: ("\ufeff" if bom else "") + "\n".join(
        [",".join(header)] + [",".join(r) for r in rows]) + "\n",
    st.lists(st.sampled_from(["label", "engine", "workload", "threads", "clients", "tps", "qps", "latency_avg_ms",
                              "transactions", "time_s", "price_per_hour", "bogus", '"', ""]), min_size=1, max_size=6),
    st.lists(st.lists(CSV_CELLS, min_size=1, max_size=7), max_size=4),
    st.booleans(),
)
PGBENCH_LINES = st.lists(st.sampled_from([
    "pgbench (16.4)", "transaction type: <builtin: TPC-B (sort of)>", "scaling factor: 10", "query mode: simple",
    "number of clients: 2", "number of threads: 1", "duration: 60 s", "number of transactions actually processed: 100",
    "number of failed transactions: 0 (0.000%)", "latency average = 1.2 ms", "tps = 1234.5 (without initial "
    "connection time)", "tps = nan (without initial connection time)", "number of clients: 1e26", "duration: 1e999 s",
    f"PGPASSWORD={SECRET} pgbench -c 2 -T 60", f"pgbench 'host=h password={SECRET}' -c 1", "progress: 1.0 s, 100.0 "
    "tps, lat 1.0 ms stddev 0.1, 0 failed", "sysbench 1.0.20 (using bundled LuaJIT 2.1.0-beta2)",
    "    transactions:                        100    (10.00 per sec.)", "\x1b[2J", "",
]), max_size=14).map("\n".join)


@FUZZ
@given(text=CSV_FILES | PGBENCH_LINES | st.text(max_size=200), suffix=st.sampled_from([".csv", ".txt", ".log"]),
       args=st.lists(st.sampled_from([["--engine", "postgres"], ["--tool", "pgbench"], ["--tool", "csv"],
                                      ["--workload", "x"], ["--price-per-hour", "nan"], ["--price-per-hour", "2"],
                                      ["--replace"]]), max_size=2).map(lambda xs: [a for x in xs for a in x]),
       label=TEXT)
# Found at 1,000 examples (issue 46): a summary line before its header, and a header
# alone, with a carriage return between them as between any lines: the summary is a
# piece not stored, the header a failed run, exit status 1; not an error line.
@example(text="tps = 0\rtransaction type:", suffix=".txt", args=[], label="0")
@example(text="transaction type:\rA= pgbench\rnumber of transactions actually processed: 0", suffix=".csv",
         args=[], label="0")
def test_import_of_any_file_is_whole_or_nothing(text, suffix, args, label, current_store):
    with workdir() as cwd:
        store = cwd / "s.db"
        shutil.copy(current_store, store)
        before = digest(store)
        source = cwd / f"in{suffix}"
        source.write_text(text)
        argv = ["import", str(source), "--label", label, *args, "--store", str(store)]
        if not no_nul(argv):
            return
        code, out, err = invoke(argv, cwd)
        check_outcome(argv, code, out, err)
        if code not in (0, ExitStatus.POINTS_FAILED):  # (pieces skipped: the rest is stored)
            assert digest(store) == before, (argv, err)
        assert "\x1b" not in out


TOML_VALUES = st.one_of(
    st.integers(min_value=-2**63, max_value=2**63 - 1).map(str),
    st.sampled_from(["inf", "-inf", "nan", "1e300", "0.0", "true", "\"\"", "\"20%\"", "\"1001%\"", "[]", "{}",
                     "[1, 2]", "[0]", "[\"50%\", 4]", "\"2h\"", "\"1e999s\"", "\"\\u001b[2J\"", "\"run\"",
                     f"\"postgresx://u:{SECRET}@h/db\"", f"\"postgresql://u@[::1/db\"", "\"postgresql://u@h/db\""]),
    st.text(max_size=10).map(lambda t: '"' + t.replace("\\", "\\\\").replace('"', '\\"') + '"'),
)
SWEEP_KEYS = ["levels", "duration_s", "warmup_s", "repeats", "clients_per_thread", "datasets", "fail_fast",
              "precision", "max_repeats", "budget", "latency_sampling", "restore", "bogus"]
STUDY_FILES = st.builds(
    lambda name, sweep, datasets, engine, price, label: "\n".join([
        "schema = 1", f"name = {name}", *([f"label = {label}"] if label else []), "[sweep]",
        *(f"{k} = {v}" for k, v in sweep), "[datasets]", *(f"{k} = {v}" for k, v in datasets),
        "[engines.postgres]", *(f"{k} = {v}" for k, v in engine), *(["[price]", *(f"{k} = {v}" for k, v in price)]
                                                                     if price else [])]) + "\n",
    st.sampled_from(['"s"', '""', "1", '"\\u001b"']),
    st.lists(st.tuples(st.sampled_from(SWEEP_KEYS), TOML_VALUES), max_size=4, unique_by=lambda kv: kv[0]),
    st.lists(st.tuples(st.sampled_from(["scale", "tables", "table_size", "queries", "nope"]), TOML_VALUES),
             max_size=2, unique_by=lambda kv: kv[0]),
    st.lists(st.tuples(st.sampled_from(["target", "server_cores", "server_threads", "flavour", "settings"]),
                       TOML_VALUES), max_size=2, unique_by=lambda kv: kv[0]),
    st.lists(st.tuples(st.sampled_from(["per_hour", "per_month", "currency"]), TOML_VALUES), max_size=2,
             unique_by=lambda kv: kv[0]),
    st.one_of(st.none(), TOML_VALUES),
)


@FUZZ
@given(text=STUDY_FILES | st.text(max_size=120))
def test_study_check_of_any_study_file(text):
    with workdir() as cwd:
        (cwd / "s.toml").write_text(text)
        argv = ["study", "check", "s.toml"]
        code, out, err = invoke(argv, cwd)
        check_outcome(argv, code, out, err)
        assert code in (0, 2), (text, code, err)
        if code == 0:
            assert not ABSURD.search(out), out


@FUZZ
@given(content=st.binary(max_size=300) | st.sampled_from([b"", b"SQLite format 3\x00" + b"\x00" * 200]))
def test_merge_of_any_file_is_whole_or_nothing(content, current_store):
    with workdir() as cwd:
        store = cwd / "s.db"
        shutil.copy(current_store, store)
        before = digest(store)
        (cwd / "other.db").write_bytes(content)
        argv = ["merge", str(cwd / "other.db"), "--store", str(store)]
        code, out, err = invoke(argv, cwd)
        check_outcome(argv, code, out, err)
        assert code != 0 and digest(store) == before, (content[:40], err)


@FUZZ
@given(value=URLS | TEXT, command=st.sampled_from([["results"], ["report"], ["store", "info"], ["import", "x.csv",
                                                                                                "--label", "l"]]))
def test_any_store_location_is_one_line_and_no_file_made(value, command):
    with workdir() as cwd:
        (cwd / "x.csv").write_text("engine,workload,threads,tps\n")
        argv = [*command, "--store", value]
        if not no_nul(argv) or not value.strip() or "/" in value.replace("://", ""):
            return  # (a path elsewhere, or one the command may rightly create: not this test's)
        code, out, err = invoke(argv, cwd)
        check_outcome(argv, code, out, err)
        assert sorted(p.name for p in cwd.iterdir()) == ["x.csv"] or command[0] == "import"
