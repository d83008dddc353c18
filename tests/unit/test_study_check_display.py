"""`study check` shows a study file's values as the file holds them, but nothing in them
acts on the terminal (issue 46: a right-to-left override was printed raw, reordering the
line it stood in): control and bidirectional characters show as their escapes."""

from __future__ import annotations

import pytest

from conftest import invoke
from dbarena.limits import visible

BIDI_STUDY = """schema = 1
name = "bidi"
title = "T\u202eitle\\u001b]0;owned\\u0007 and\\nfake: line"
[engines.postgres]
settings = { work_mem = "4MB\u202egnp.exe" }
bindir = "/opt/pg\u2066\u200f/bin"
[[workloads]]
workload = "pgbench-select-only"
levels = [1]
"""


def test_study_check_shows_control_and_bidi_characters_as_escapes(tmp_path, capsys):
    path = tmp_path / "s.toml"
    path.write_text(BIDI_STUDY)
    code, out, err = invoke(["study", "check", str(path), "--allow-commands"], capsys)  # (a study's bindir)
    assert code == 0, err
    assert not any(c in out for c in "\u202e\u2066\u200f\x1b\x07"), ascii(out)
    lines = out.splitlines()
    assert lines[0] == "study bidi: T\\u202eitle\\x1b]0;owned\\x07 and\\nfake: line"  # one line, as written
    assert "  settings: work_mem=4MB\\u202egnp.exe" in lines
    assert any("binaries in /opt/pg\\u2066\\u200f/bin" in line for line in lines), out
    assert not any(line.startswith("fake:") for line in lines)


@pytest.mark.parametrize("text, shown", [
    ("plain text, ünïcödé, 中文, émoji \U0001f600", "plain text, ünïcödé, 中文, émoji \U0001f600"),
    ("a\u202eb\u202cc", "a\\u202eb\\u202cc"),
    ("\x1b[2Jx\x7f\x9b", "\\x1b[2Jx\\x7f\\x9b"),
    ("one\ntwo\r", "one\\ntwo\\r"),
    ("\u061cx\u200e", "\\u061cx\\u200e"),
])
def test_visible_escapes_only_what_acts_on_a_terminal(text, shown):
    assert visible(text) == shown
    assert visible("one\ntwo", keep="\n") == "one\ntwo"
