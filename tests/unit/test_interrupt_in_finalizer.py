"""A Ctrl-C or SIGTERM that lands while a finalizer runs (pymysql's MySQLResult.__del__
under a kill-anywhere test's Ctrl-C: Python printed "Exception ignored in ...", a
traceback, and the run went on as if no interrupt came) is raised again in the main
thread, not printed (cli/app.py's sys.unraisablehook)."""

from __future__ import annotations

import signal
import sys
import time

import pytest

from dbarena.cli import app
from dbarena.errors import Interrupted


class _Finalised:
    def __init__(self, raised: BaseException) -> None:
        self.raised = raised

    def __del__(self) -> None:
        raise self.raised


def _steps() -> None:
    deadline = time.monotonic() + 10  # the main thread's next steps, where a pending signal is handled
    while time.monotonic() < deadline:
        pass


def test_a_ctrl_c_in_a_finalizer_is_raised_again_not_printed(monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "unraisablehook", app._unraisable)
    with pytest.raises(KeyboardInterrupt):
        _Finalised(KeyboardInterrupt())
        _steps()
    assert "Traceback" not in capsys.readouterr().err


def test_a_sigterm_in_a_finalizer_is_raised_again_as_interrupted(monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "unraisablehook", app._unraisable)
    before = signal.signal(signal.SIGTERM, app._raise_on_sigterm)
    try:
        with pytest.raises(Interrupted):
            _Finalised(Interrupted())
            _steps()
    finally:
        signal.signal(signal.SIGTERM, before)
    assert "Traceback" not in capsys.readouterr().err


def test_another_exception_in_a_finalizer_is_said_as_python_says_it(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[object] = []
    monkeypatch.setattr(sys, "__unraisablehook__", seen.append)
    monkeypatch.setattr(sys, "unraisablehook", app._unraisable)
    _Finalised(ValueError("x"))
    assert len(seen) == 1 and isinstance(getattr(seen[0], "exc_value"), ValueError)
