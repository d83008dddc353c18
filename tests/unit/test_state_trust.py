"""A state record proves what it names before reaping acts on it as root (issue 46): a
process only while the one with its pid is the one recorded (start time, executable,
command line), the SMT switch only if it is the kernel's and the state one it may be set
back to, and records only from a directory and files no other user can write. Each
refusal is one line, and nothing is touched."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

from dbarena.errors import EnvironmentProblem
from dbarena.host import smt
from dbarena.lifecycle import cleanup, state

NOBODY = 65534


@pytest.fixture(autouse=True)
def private_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(state.ENV, str(tmp_path / "state"))


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    """A live process that is not dbarena's to stop."""
    proc = subprocess.Popen(["sleep", "300"])
    yield proc
    proc.kill()
    proc.wait()


def dead_owner() -> dict[str, Any]:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    started = state.start_time(child.pid)
    child.wait()
    return {"owner_pid": child.pid, "owner_start": started, **state.machine()}


def plant(tmp_path: Path, name: str, record: dict[str, Any]) -> Path:
    folder = tmp_path / "state" / "records"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    path.write_text(json.dumps({**record, **dead_owner()}))
    return path


def run_record(tmp_path: Path, **fields: Any) -> Path:
    return plant(tmp_path, "run-x", {"kind": "run", "store": str(tmp_path / "none.db"), "run_id": 1, "target": None,
                                     "leftovers": [], **fields})


def reaped(say: list[str] | None = None) -> list[str]:
    said: list[str] = [] if say is None else say
    cleanup.reap_dead(said.append)
    return said


def running(proc: subprocess.Popen[bytes]) -> bool:
    return proc.poll() is None


def test_a_recorded_tool_still_running_is_stopped(tmp_path: Path, sleeper: subprocess.Popen[bytes]) -> None:
    run_record(tmp_path, **state.process_fields("tool_pid", sleeper.pid))
    said = reaped()
    assert sleeper.wait(timeout=10) == -signal.SIGKILL
    assert said == [f"stopped the load generator (pid {sleeper.pid}) of run 1 in {tmp_path / 'none.db'}"]


def test_a_tool_that_a_wrapper_exec_d_is_the_recorded_one(tmp_path: Path, sleeper: subprocess.Popen[bytes]) -> None:
    """taskset -c CPUS TOOL (execute.pinned) execs TOOL: the command line's end."""
    fields = state.process_fields("tool_pid", sleeper.pid)
    fields["tool_cmdline"] = ["taskset", "-c", "0", *fields["tool_cmdline"]]
    fields["tool_exe"] = "/usr/bin/taskset"
    run_record(tmp_path, **fields)
    reaped()
    assert sleeper.wait(timeout=10) == -signal.SIGKILL


def test_a_process_recorded_as_it_starts_is_recorded_with_its_program() -> None:
    """Right after Popen the new program's command line is often not there yet (empty):
    the record waits for it, or it could prove nothing and the process would be left
    running by a reaper. Twenty starts: each misses it more often than not unless waited for."""
    for _ in range(20):
        proc = subprocess.Popen(["sleep", "300"])
        try:
            fields = state.process_fields("tool_pid", proc.pid)
        finally:
            proc.kill()
            proc.wait()
        assert fields["tool_cmdline"] == ["sleep", "300"] and fields["tool_exe"], fields


@pytest.mark.parametrize("edit, why", [
    ({"tool_cmdline": ["pgbench", "-c", "4"]}, "its command line (sleep 300) is not the one recorded"),
    ({"tool_cmdline": None, "tool_exe": None}, "the record does not say which program it runs"),
    ({"tool_start": 1}, "another process has that pid now (it started at another time)"),
    ({"tool_exe": "/usr/bin/pgbench"}, "it runs "),
])
def test_a_process_that_is_not_the_recorded_one_is_left_alone(tmp_path: Path, sleeper: subprocess.Popen[bytes],
                                                              edit: dict[str, Any], why: str) -> None:
    """A record edited to name a live process (or one whose pid was recycled): the
    process runs on, and one line says why."""
    run_record(tmp_path, **{**state.process_fields("tool_pid", sleeper.pid), **edit})
    said = reaped()
    assert running(sleeper)
    (line,) = [s for s in said if "alone" in s]
    assert line.startswith(f"left process {sleeper.pid} alone: {why}"), line


@pytest.mark.parametrize("pid", [-1, 0, 1, "1234", "self"])
def test_a_pid_that_names_more_than_a_process_is_never_signalled(tmp_path: Path, pid: Any,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """kill(-1) signals every process, kill(0) this process group: never from a record."""
    signalled: list[tuple[int, int]] = []
    monkeypatch.setattr(os, "kill", lambda p, s: signalled.append((p, s)))
    me = os.getpid()
    run_record(tmp_path, tool_pid=me if pid == "self" else pid, tool_start=state.start_time(me),
               tool_cmdline=["x"], tool_exe=None)
    said = reaped()
    assert signalled == []
    assert any("alone: " in line and "is not a process of its own" in line for line in said), said


def test_an_initialisation_and_a_server_that_are_not_the_recorded_ones_are_left_alone(
        tmp_path: Path, sleeper: subprocess.Popen[bytes]) -> None:
    top = tmp_path / "dbarena-pg-x"
    top.mkdir()
    state.mark(top)
    fields = {**state.process_fields("init_pid", sleeper.pid), **state.process_fields("server_pgid", sleeper.pid)}
    fields.update(init_cmdline=["initdb", "-D", str(top / "data")], server_cmdline=["postgres", "-D", str(top)])
    plant(tmp_path, "instance-x", {"kind": "instance", "engine": "postgres", "top": str(top), **fields})
    said = reaped()
    assert running(sleeper) and not top.exists()
    assert len([s for s in said if s.startswith(f"left process {sleeper.pid} alone: its command line")]) == 2, said


def test_a_server_recorded_with_its_program_is_stopped(tmp_path: Path) -> None:
    top = tmp_path / "dbarena-my-y"
    top.mkdir()
    state.mark(top)
    server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", str(top)],
                              start_new_session=True)  # (a server leads its process group)
    try:
        path = plant(tmp_path, "instance-y", {"kind": "instance", "engine": "mysql", "top": str(top),
                                              **state.process_fields("server_pgid", server.pid)})
        owner = json.loads(path.read_text())["owner_pid"]
        said = reaped()
        assert server.wait(timeout=20) in (-signal.SIGTERM, -signal.SIGKILL)
        assert said == [f"stopped and removed the mysql instance in {top} (server pid {server.pid}), "
                        f"left by process {owner}"]
    finally:
        server.kill()
        server.wait()


@pytest.fixture
def control(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "smt" / "control"
    path.parent.mkdir()
    path.write_text("off\n")
    monkeypatch.setattr(smt, "CONTROL", path)  # the kernel's switch, to the reaper
    return path


@pytest.mark.parametrize("name, original, why", [
    ("victim", "on", "is not the kernel's SMT switch"),
    ("control", "forceoff", "'forceoff' is not a state the kernel's SMT switch is set back to"),
    ("control", "on\nx", "is not a state"),
])
def test_an_smt_record_writes_only_the_kernels_switch_and_only_its_states(
        tmp_path: Path, control: Path, name: str, original: str, why: str) -> None:
    target = control.parent / name
    if name == "victim":
        target.write_text("root's file\n")
    path = plant(tmp_path, "smt-x", {"kind": "smt", "control": str(target), "original": original})
    said = reaped()
    assert target.read_text() in ("root's file\n", "off\n")
    assert len(said) == 1 and said[0].startswith("left SMT alone: ") and why in said[0], said
    assert not path.exists()  # said once, then forgotten


def test_the_kernels_switch_is_set_back(tmp_path: Path, control: Path) -> None:
    plant(tmp_path, "smt-x", {"kind": "smt", "control": str(control), "original": "on"})
    said = reaped()
    assert control.read_text() == "on" and said[0].startswith("set SMT back to on")


def _owned_by_nobody(path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("giving a file to another user needs root")
    os.chown(path, NOBODY, NOBODY)


@pytest.mark.parametrize("how", ["records writable by others", "records another user's", "state writable by group",
                                 "parent writable by others"])
def test_records_from_a_directory_others_can_write_are_not_read(tmp_path: Path, sleeper: subprocess.Popen[bytes],
                                                               how: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A record planted there with everything of the process forged (all of it can be read
    in /proc) would be obeyed: none is read from such a directory."""
    base = tmp_path / "shared"
    base.mkdir()
    monkeypatch.setenv(state.ENV, str(base / "state"))
    folder = base / "state" / "records"
    folder.mkdir(parents=True)
    (folder / "run-x.json").write_text(json.dumps({
        "kind": "run", "store": str(tmp_path / "none.db"), "run_id": 1, "target": None, "leftovers": [],
        **state.process_fields("tool_pid", sleeper.pid), **dead_owner()}))
    weak = {"records writable by others": (folder, 0o777), "state writable by group": (folder.parent, 0o770),
            "parent writable by others": (base, 0o777), "records another user's": (folder, 0o700)}[how]
    weak[0].chmod(weak[1])
    if how == "records another user's":
        _owned_by_nobody(folder)
    said = reaped()
    assert running(sleeper)
    assert len(said) == 1 and said[0].startswith("left every record in ") and said[0].endswith(
        f"set {state.ENV} to a directory of your own"), said
    assert (f"{weak[0]} is owned by uid {NOBODY}" if how == "records another user's"
            else f"{weak[0]} is writable by ") in said[0]
    # And nothing this process starts is recorded there.
    with pytest.raises(EnvironmentProblem, match="state directory cannot be trusted"):
        state.scratch(tmp_path / "dbarena-scratch")


def test_a_sticky_directory_of_roots_may_hold_a_private_state_directory(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    if os.geteuid() != 0:
        pytest.skip("a directory of root's")
    base = tmp_path / "tmp"
    base.mkdir()
    base.chmod(0o1777)  # as /tmp
    monkeypatch.setenv(state.ENV, str(base / "me"))
    record = state.scratch(tmp_path / "dbarena-s")
    assert state.untrusted(base / "me" / "records") is None and [p for p, _ in state.records()] == [record.path]
    assert (record.path.stat().st_mode & 0o777, record.path.parent.stat().st_mode & 0o777) == (0o600, 0o700)
    record.remove()


@pytest.mark.parametrize("how", ["writable by its group", "another user's", "a symbolic link", "not JSON of a record"])
def test_a_record_file_others_could_write_is_not_read(tmp_path: Path, sleeper: subprocess.Popen[bytes],
                                                      how: str) -> None:
    path = run_record(tmp_path, **state.process_fields("tool_pid", sleeper.pid))
    if how == "writable by its group":
        path.chmod(0o660)
    elif how == "another user's":
        _owned_by_nobody(path)
    elif how == "a symbolic link":
        real = tmp_path / "elsewhere.json"
        path.rename(real)
        path.symlink_to(real)
    else:
        path.write_text(json.dumps({"kind": "run", "store": 3}))
    said = reaped()
    assert running(sleeper)
    assert len(said) == 1 and said[0].startswith(f"left {path} alone: "), said
