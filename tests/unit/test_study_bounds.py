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


def test_a_setting_value_of_any_length_is_refused_beyond_its_bound(tmp_path, capsys):
    """A setting's value goes into the server's configuration file and every table that
    shows settings: beyond MAX_SETTING_CHARS it is one line and exit 2, from a study
    file and from the flag alike (the flag builds the same study)."""
    from dbarena.limits import MAX_SETTING_CHARS

    long = "x" * (MAX_SETTING_CHARS + 1)
    study = ('schema = 1\nname = "s"\n[sweep]\nlevels = [1]\nduration_s = 5\n[engines.postgres]\n'
             f'settings = {{ search_path = "{long}" }}\n[[workloads]]\nworkload = "pgbench-select-only"\n')
    code, err, _ = check(study, tmp_path, capsys)
    assert code == ExitStatus.USAGE and err.count("\n") == 1, err[-300:]
    assert f"a setting's value is at most {MAX_SETTING_CHARS:,} characters" in err and long not in err
    code, _, err = invoke(["run", "--engine", "postgres", "--workload", "pgbench-select-only", "--threads", "1",
                           "--duration", "5", "--pg-setting", f"search_path={long}", "--store",
                           str(tmp_path / "x.db")], capsys)
    assert code == ExitStatus.USAGE and long not in err, err[-300:]
    assert f"a setting's value is at most {MAX_SETTING_CHARS:,} characters" in err, err[-300:]
    assert not (tmp_path / "x.db").exists()
    # A line break in a flag's value is refused as in a study file's.
    code, _, err = invoke(["run", "--engine", "postgres", "--workload", "pgbench-select-only", "--pg-setting",
                           "work_mem=1MB\n!include /etc/x", "--store", str(tmp_path / "x.db")], capsys)
    assert code == ExitStatus.USAGE and "a value on one line" in err and not (tmp_path / "x.db").exists()
