"""A study file is bounded before it is parsed (issue 46): nesting that made tomllib raise
RecursionError, a dotted key whose parts it handles in quadratic time and a file of any
size are one line and exit 2, at once; dots and brackets inside strings and comments
are text and count for nothing. Through the CLI in process (conftest.invoke)."""

from __future__ import annotations

import time

import pytest

from conftest import invoke
from dbarena.errors import ExitStatus
from dbarena.study import StudyError
from dbarena.study.reader import MAX_NESTING, MAX_STUDY_BYTES, parse

DEEP = 100_000


def check(text: str, tmp_path, capsys) -> tuple[int, str, float]:
    path = tmp_path / "s.toml"
    path.write_text(text)
    started = time.monotonic()
    code, _, err = invoke(["study", "check", str(path)], capsys)
    return code, err, time.monotonic() - started


@pytest.mark.parametrize("text, said", [
    ("a = " + "[" * DEEP + "]" * DEEP + "\n", "nested deeper than 16 arrays and inline tables"),
    ("a = " + "{b = " * DEEP + "1" + "}" * DEEP + "\n", "nested deeper than 16 arrays and inline tables"),
    ("a" + ".a" * DEEP + " = 1\n", "nested deeper than 16 parts of a dotted key"),
    ('schema = 1\n"a"' + '."a"' * DEEP + " = 1\n", "line 2: nested deeper than 16 parts of a dotted key"),
    ("[" + ".".join(["t"] * DEEP) + "]\n", "nested deeper than 16 parts of a dotted key"),
], ids=["arrays", "inline-tables", "dotted-key", "quoted-dotted-key", "table-header"])
def test_a_deep_study_file_is_one_line_at_once(text, said, tmp_path, capsys):
    code, err, seconds = check(text, tmp_path, capsys)
    assert code == ExitStatus.USAGE and "Traceback" not in err, err[-500:]
    assert err.count("\n") == 1 and said in err, err
    assert seconds < 5, f"{seconds:.1f} s"  # on main: a RecursionError, or minutes for the dotted key


def test_a_study_file_beyond_the_limit_is_refused_unread(tmp_path, capsys):
    code, err, _ = check("# " + "x" * MAX_STUDY_BYTES + "\n", tmp_path, capsys)
    assert code == ExitStatus.USAGE and f"bytes long (a study file is at most {MAX_STUDY_BYTES:,})" in err, err


def test_nesting_at_the_limit_and_dots_in_text_are_read():
    """What the bounds refuse is structure: the same dots and brackets in strings and
    comments, a float, and arrays nested as deep as allowed reach the schema check."""
    text = "\n".join([
        'schema = 1',
        'name = "' + "." * 100 + "[" * 100 + '"  # ' + "{." * 100,
        "description = '''" + ".'" * 100 + "'''",
        'title = """' + '\\"."' * 100 + '"""',
        "label = '" + "[{." * 100 + "'",
        "x = " + "[" * MAX_NESTING + "1.5" + "]" * MAX_NESTING,
        "y." * (MAX_NESTING - 1) + "z = 1",
    ])
    with pytest.raises(StudyError) as refused:
        parse(text, "s.toml")
    assert str(refused.value).startswith("s.toml: x: unknown key"), refused.value  # the schema's own error


@pytest.mark.parametrize("text", ["a = " + '"x\\' * 300_000, 'a = """' + 'x"' * 400_000, "a = '''x" + "'" * 2])
def test_a_string_never_closed_is_read_once(text, tmp_path, capsys):
    """The bounds' own pass is linear: a quote never closed runs to its line's end, not
    read again from each quote after it (a quadratic minute for the first case)."""
    code, err, seconds = check(text, tmp_path, capsys)
    assert code == ExitStatus.USAGE and "not valid TOML" in err and err.count("\n") == 1, err
    assert seconds < 5, f"{seconds:.1f} s"
