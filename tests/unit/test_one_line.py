"""limits.one_line: the one way an exception becomes a line to show or keep (issue 57:
eight helpers did it, masking differently)."""

from __future__ import annotations

import ast
from pathlib import Path

import dbarena
from dbarena.limits import one_line

SRC = Path(dbarena.__file__).parent


def test_a_drivers_message_over_lines_is_one_line_with_its_password_masked():
    exc = RuntimeError("connection to postgresql://bench:s3cret@db/x failed\n  FATAL:\tpassword PGPASSWORD=s3cret")
    line = one_line(exc)
    assert "s3cret" not in line and "\n" not in line and "\t" not in line
    assert line == "connection to postgresql://bench:***@db/x failed FATAL: password PGPASSWORD=***"


def test_nothing_that_acts_on_a_terminal_is_kept():
    assert one_line(OSError("bad \x1b]0;retitled\x07 name \u202egnp.exe")) == "bad ]0;retitled name gnp.exe"


def test_an_exception_that_says_nothing_is_named_by_its_type_and_a_limit_cuts_with_an_ellipsis():
    assert one_line(TimeoutError()) == "TimeoutError"
    assert one_line(" \n ") == ""
    assert one_line(ValueError("x" * 40), 10) == "x" * 9 + "…"
    assert one_line(ValueError("x" * 10), 10) == "x" * 10


# Helpers of the same kind that stay, each with why: none may be added.
KNOWN = {
    # (issue 57's store and serve changes are another branch's: they go to one_line there)
    ("serve/app.py", "_one_line"), ("store/postgres.py", "_first_line"),
    # perf's first line that says something, not an exception's message
    ("run/profiling.py", "_first_line"),
}


def test_no_module_but_limits_defines_a_one_line_helper_of_its_own():
    found = set()
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and node.name.strip("_") in ("one_line", "first_line", "oneline"):
                found.add((str(path.relative_to(SRC)), node.name))
    assert found - KNOWN == {("limits.py", "one_line")}
