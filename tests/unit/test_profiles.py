"""stats/profiles.py: `perf script`'s text folded and the server's processes found in
`perf report --tasks` (real outputs of this machine's perf 6.1 in tests/fixtures/perf,
captured by its capture.py through run/profiling.py), the folded text read back, a
profile's top functions, and the differential per transaction."""

from __future__ import annotations

from pathlib import Path

import pytest

from dbarena.stats import profiles
from dbarena.stats.profiles import Folded

PERF = Path(__file__).resolve().parent.parent / "fixtures" / "perf"
PG = PERF / "pg15-tpcb-2x8-5s.perf-script.txt"
MARIADB = PERF / "mariadb10.11-read-only-2-3s.perf-script.txt"
# The servers' main processes when they were captured (capture.py says them).
PG_PID, MARIADB_PID = 14697, 15125


def _samples(text: str) -> list[str]:
    return [block for block in text.split("\n\n") if block.strip()]


def test_every_sample_of_a_real_postgres_profile_is_folded_under_its_process() -> None:
    text = PG.read_text()
    stacks = profiles.fold(text)
    headers = [line for line in text.splitlines() if line and not line[0].isspace()]
    assert profiles.samples(stacks) == len(headers) == len(_samples(text)) > 100
    assert all(stack.startswith("postgres;") for stack in stacks)
    frames = {frame for stack in stacks for frame in stack.split(";")}
    # Offsets dropped, functions perf could not name (not exported) named by their binary;
    # [unknown] only where perf knew no binary either.
    assert not any("+0x" in f or ("[unknown]" in f and f != "[unknown]") for f in frames)
    assert {"[postgres]", "PostgresMain", "PostmasterMain", "main", "CommitTransactionCommand"} <= frames
    assert "do_syscall_64" in frames  # the kernel's frames, on the server's behalf


def test_one_real_sample_folded_callers_first() -> None:
    third = _samples(PG.read_text())[2]
    assert profiles.fold(third) == {";".join([
        "postgres", "[unknown]", "pthread_rwlock_rdlock@GLIBC_2.2.5", "asm_exc_page_fault", "exc_page_fault",
        "handle_mm_fault", "__handle_mm_fault", "do_wp_page", "folio_add_new_anon_rmap", "__folio_mod_stat",
        "__lruvec_stat_mod_folio"]): 1}


@pytest.mark.parametrize("script, root", [(PG, PG_PID), (MARIADB, MARIADB_PID)])
def test_the_servers_processes_are_its_main_process_and_its_descendants(script: Path, root: int) -> None:
    """Every CPU was sampled (other servers of the machine, the tool, the rest): the
    samples read are those of the server's main process and of the processes it started,
    before perf or after (PostgreSQL's backends), as `perf report --tasks` saw them."""
    tasks = script.with_name(script.name.replace(".perf-script.txt", ".perf-report-tasks.txt")).read_text()
    found = profiles.descendants(tasks, root)
    rows = [line.split() for line in tasks.splitlines() if line.split() and not line.lstrip().startswith("#")]
    server = "postgres" if script == PG else "mariadbd"
    same_name = {int(r[0]) for r in rows if r[-1] == server}
    assert root in found and found <= same_name
    sampled = {int(line.split()[-1].split("/")[0]) for line in script.read_text().splitlines()
               if line and not line[0].isspace()}
    assert sampled <= found
    if script == PG:
        assert same_name - found, "other PostgreSQL servers ran on the machine: left out"
        assert len(found) > 10  # the postmaster, its auxiliary processes, pgbench's 16 backends
        assert all(int(r[2]) == root for r in rows if int(r[0]) in found - {root})
    assert profiles.descendants(tasks, 999_999_999) == {999_999_999}
    assert profiles.descendants("# pid tid ppid comm\n  1 1 0 | init\n  2 2 1 | a\n  2 3 2 | a\n  3 3 2 | b\n"
                                "garbage line\n", 1) == {1, 2, 3}


def test_a_real_mariadb_profile_keeps_its_cpp_names() -> None:
    stacks = profiles.fold(MARIADB.read_text())
    assert all(stack.startswith("mariadbd;") for stack in stacks)
    frames = {frame for stack in stacks for frame in stack.split(";")}
    assert {"handle_one_connection", "do_command", "dispatch_command", "mysql_execute_command"} <= frames
    assert any("::" in f for f in frames)  # JOIN::exec, Prepared_statement::execute ...


def test_the_top_functions_of_a_real_profile_are_postgresqls_own() -> None:
    stacks = profiles.fold(PG.read_text())
    top = profiles.top(stacks)
    assert len(top) == profiles.TOP
    shares = [entry["share"] for entry in top]
    assert shares == sorted(shares, reverse=True) and 0 < sum(shares) <= 1.0001
    names = {entry["function"] for entry in top}
    # Exported by the postgres binary (its .dynsym), as perf named them.
    assert {"hash_search_with_hash_value", "base_yyparse"} <= names, names


def test_folded_text_reads_back_and_is_sorted() -> None:
    stacks = profiles.fold(PG.read_text())
    text = profiles.folded_text(stacks)
    assert profiles.parse_folded(text) == stacks
    lines = text.splitlines()
    assert lines == sorted(lines, key=lambda line: line.rpartition(" ")[0])
    assert profiles.folded_text(profiles.parse_folded(text)) == text


@pytest.mark.parametrize("text", ["a;b", "a;b x", "a;b -1", " 3", "a;b 1.5"])
def test_folded_text_that_does_not_read_is_refused(text: str) -> None:
    with pytest.raises(profiles.FoldedProblem, match="line 1"):
        profiles.parse_folded(text + "\n")


def test_what_perf_writes_around_the_frames() -> None:
    """A process name with spaces, a C++ name with parentheses, a deleted binary, a name
    with `;`, an offset, a frame perf could not place, a sample without frames, and
    perf's own warnings between samples."""
    text = (
        "Warning:\nProcessed 3 events and lost 1 chunks!\n\n"
        "my worker 7 12/13 \n"
        "\t    1000 foo(int, char const*)+0x1f (/opt/x (deleted))\n"
        "\t    2000 a;b (/usr/lib/libz.so.1)\n"
        "\t    3000 [unknown] ([unknown])\n"
        "\t    4000 [unknown] (/usr/sbin/mariadbd)\n"
        "\n"
        "lonely 5/5 \n"
        "\n")
    assert profiles.fold(text) == {"my worker 7;[mariadbd];[unknown];a:b;foo(int, char const*)": 1, "lonely": 1}


def test_differential_per_transaction() -> None:
    a = Folded({"p;main;f": 100, "p;main;g": 50, "p;main": 10}, frequency_hz=100.0)
    b = Folded({"p;main;f": 100, "p;main;h": 40}, frequency_hz=50.0)
    # A: f 1 s over 1000 tx = 1000 us/tx, g 500, main 100; B: f 2 s over 2000 tx = 1000, h 400.
    changes = profiles.differential(a, b, 1000, 2000)
    assert [(c.function, round(c.a_us_per_tx, 6), round(c.b_us_per_tx, 6)) for c in changes] == [
        ("g", 500.0, 0.0), ("h", 0.0, 400.0), ("main", 100.0, 0.0), ("f", 1000.0, 1000.0)]
    assert changes[0].change_us_per_tx == -500.0
    assert changes[0].as_json()["change_us_per_tx"] == -500.0
    inclusive = {c.function: c for c in profiles.differential(a, b, 1000, 2000, inclusive=True)}
    assert inclusive["main"].a_us_per_tx == pytest.approx(1600.0)
    assert inclusive["main"].b_us_per_tx == pytest.approx(1400.0)
    assert len(profiles.differential(a, b, 1000, 2000, limit=2)) == 2
    with pytest.raises(ValueError):
        profiles.differential(a, b, 0, 2000)


def test_differential_of_a_real_profile_against_itself_at_twice_the_transactions() -> None:
    stacks = profiles.fold(PG.read_text())
    one = Folded(stacks, 99.0)
    changes = profiles.differential(one, one, 1000, 2000)
    top = profiles.top(stacks, 1)[0]["function"]
    assert changes[0].function == top  # the most time, the most halved
    for c in changes:
        assert c.b_us_per_tx == pytest.approx(c.a_us_per_tx / 2)
    assert profiles.samples(profiles.merged([stacks, stacks])) == 2 * profiles.samples(stacks)
