"""A filter that names something the store does not hold is a one-line usage error
naming what it holds (exit 2), not an empty result; an empty store says so kindly."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from dbarena.cli import main
from dbarena.errors import ExitStatus
from dbarena.store.database import Store

DEMO = Path(__file__).parent.parent / "fixtures" / "stores" / "demo-seed-a-quick.db"  # label vm, study seed-a


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as ended:
        main(argv)
    out, err = capsys.readouterr()
    return int(ended.value.code or 0), out, err


@pytest.fixture
def demo(tmp_path) -> str:
    shutil.copy(DEMO, tmp_path / "demo.db")
    return str(tmp_path / "demo.db")


@pytest.mark.parametrize("argv, said", [
    (["results", "--study", "nosuch"], "no study 'nosuch' in the store; stored: seed-a"),
    (["results", "--summary", "--label", "vm", "--label", "vn"], "no label 'vn' in the store; stored: vm"),
    (["results", "--json", "--run", "7"], "no run 7 in the store; stored: 1-2"),
    (["results", "--variant", "tuned"], "no variant 'tuned' in the store; stored: none (no run had variants)"),
    (["compare", "vm", "vm", "--study", "seed-b"], "no study 'seed-b' in the store; stored: seed-a"),
    (["compare", "vm", "other"], "no points labelled 'other' and no variant of that name (labels: vm;"),
    (["report", "--label", "nosuch", "--format", "json"], "no results labelled 'nosuch'"),
])
def test_a_name_that_matches_nothing_is_an_error_naming_what_exists(demo, argv, said, capsys):
    code, out, err = run([*argv, "--store", demo], capsys)
    assert code == ExitStatus.USAGE and out == ""
    assert said in err and len(err.strip().splitlines()) == 1, err


def test_names_that_match_name_what_they_match(demo, capsys):
    # A study by its hash prefix too; names that each exist but match nothing together.
    code, out, _ = run(["results", "--study", "2ed599", "--label", "vm", "--run", "2", "--store", demo], capsys)
    assert code == 0 and "mysqlslap" in out
    code, out, err = run(["results", "--run", "1", "--study", "seed-a", "--label", "vm", "--summary",
                          "--store", demo], capsys)
    assert code == 0 and "pgbench-tpcb" in out


def test_an_empty_store_says_nothing_is_stored_yet(tmp_path, capsys):
    Store(tmp_path / "empty.db").close()
    code, out, err = run(["results", "--label", "vm", "--store", str(tmp_path / "empty.db")], capsys)
    assert (code, out, err) == (0, "", "no points stored yet\n")
