"""Plays run as forks of one helper that has imported Ansible (fleet/playforks.py), with
the real ansible-playbook's code over a local connection: a play's output and exit code
come back; one that hangs is killed with what it started, and the helper serves the
next; the passwords reach the play but not the helper's environment; a play interrupted
on the controller is let end before the interrupt goes on."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

from dbarena.fleet import controller, playforks

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def local(tmp_path: Path) -> dict:
    inventory = tmp_path / "inventory.ini"
    inventory.write_text(f"h1 ansible_connection=local ansible_python_interpreter={sys.executable}\n")
    forks = playforks.PlayForks()
    (tmp_path / "scratch").mkdir(mode=0o700)
    yield {"inventory": inventory, "forks": forks, "tmp": tmp_path}
    forks.close()


def book(tmp: Path, name: str, command: str) -> Path:
    path = tmp / f"{name}.yml"
    path.write_text(f"- hosts: all\n  gather_facts: false\n  tasks:\n    - raw: {command!r}\n")
    return path


def argv(local: dict, playbook: Path) -> list[str]:
    """ansible-playbook's, -v: the default callback shows each task's output."""
    return [controller.ansible_command("ansible-playbook"), "-v", "-i", str(local["inventory"]), str(playbook)]


def environment(**more: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PGPASSWORD", "MYSQL_PWD")}
    env.update({"ANSIBLE_NOCOLOR": "1", "ANSIBLE_RETRY_FILES_ENABLED": "False"}, **more)
    return env


def play(local: dict, argv: list[str], env: dict[str, str], timeout_s: float = 120,
         secret: frozenset[str] = frozenset()) -> playforks.Played | None:
    return local["forks"].play(argv, env, folder=local["tmp"] / "scratch", timeout_s=timeout_s, let_end_s=60,
                               secret=secret)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split(")")[1].split()[0] != "Z"


def test_a_plays_output_and_exit_code_and_the_passwords_only_in_the_play(local):
    forks, tmp = local["forks"], local["tmp"]
    said = play(local, argv(local, book(tmp, "echo", "echo password=$PGPASSWORD")),
                environment(PGPASSWORD="s3cret-of-the-play"), secret=frozenset({"PGPASSWORD"}))
    assert said is not None and said.returncode == 0, said
    assert "password=s3cret-of-the-play" in said.stdout
    assert forks.proc is not None
    helper = Path(f"/proc/{forks.proc.pid}/environ").read_bytes()
    assert b"s3cret-of-the-play" not in helper and b"PGPASSWORD" not in helper
    failed = play(local, argv(local, book(tmp, "fail", "exit 3")), environment())
    assert failed is not None and failed.returncode == 2 and "FAILED" in failed.stdout, failed
    # Output files in the scratch directory only while a play runs.
    assert list((tmp / "scratch").iterdir()) == []


def test_one_helper_serves_every_play_of_one_environment_and_another_is_started_for_another(local):
    forks, tmp = local["forks"], local["tmp"]
    quick = argv(local, book(tmp, "true", "true"))
    assert play(local, quick, environment()) is not None
    first = forks.proc
    assert play(local, quick, environment(PGPASSWORD="another"), secret=frozenset({"PGPASSWORD"})) is not None
    assert forks.proc is first  # a password is sent with the play: the same helper
    assert play(local, quick, environment(ANSIBLE_TIMEOUT="7")) is not None
    assert forks.proc is not first and first is not None and first.poll() is not None  # Ansible's settings: another
    forks.close()
    assert forks.proc is None


def test_a_play_that_hangs_is_killed_with_what_it_started_and_the_next_play_runs(local):
    forks, tmp = local["forks"], local["tmp"]
    pidfile = tmp / "sleeper.pid"
    hanging = argv(local, book(tmp, "hang", f"sh -c 'echo $$ > {pidfile}; exec sleep 120'"))
    began = time.monotonic()
    assert play(local, hanging, environment(), timeout_s=5) is None
    assert time.monotonic() - began < 60
    sleeper = int(pidfile.read_text())
    deadline = time.monotonic() + 10
    while alive(sleeper) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(sleeper)
    said = play(local, argv(local, book(tmp, "after", "echo after")), environment())
    assert said is not None and said.returncode == 0 and "after" in said.stdout


class Interrupted(Exception):
    pass


def test_an_interrupted_play_is_let_end_before_the_interrupt_goes_on(local):
    forks, tmp = local["forks"], local["tmp"]
    ended = tmp / "ended"
    slow = argv(local, book(tmp, "slow", f"sleep 3; touch {ended}"))
    play(local, argv(local, book(tmp, "warm", "true")), environment())  # the helper started

    def interrupt(*_: object) -> None:
        raise Interrupted()

    before = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 1.0)
        with pytest.raises(Interrupted):
            play(local, slow, environment())
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)
    assert ended.exists()  # the play had ended when the interrupt went on
    said = play(local, argv(local, book(tmp, "next", "echo next")), environment())
    assert said is not None and "next" in said.stdout


def test_an_exchange_cut_short_before_its_first_answer_is_let_end_and_the_next_play_gets_its_own(local, monkeypatch):
    """An interrupt while waiting for the helper's first answer (the play's process):
    the play is let end all the same, and its answers, read or not, are never taken
    for the next play's."""
    forks, tmp = local["forks"], local["tmp"]
    ended = tmp / "ended"
    play(local, argv(local, book(tmp, "warm", "true")), environment())
    answer = forks._answer
    cut = []

    def cut_once(field, number, timeout_s):
        if field == "pid" and not cut:
            cut.append(number)
            raise Interrupted()
        return answer(field, number, timeout_s)

    monkeypatch.setattr(forks, "_answer", cut_once)
    with pytest.raises(Interrupted):
        play(local, argv(local, book(tmp, "slow", f"sleep 2; touch {ended}; echo first")), environment())
    assert cut and ended.exists()
    said = play(local, argv(local, book(tmp, "second", "echo second")), environment())
    assert said is not None and "second" in said.stdout and "first" not in said.stdout


def test_without_the_helper_each_play_is_a_process_of_its_own(local):
    local["forks"] = playforks.PlayForks(forking=False)
    tmp = local["tmp"]
    said = play(local, argv(local, book(tmp, "echo", "echo process")), environment())
    assert said is not None and said.returncode == 0 and "process" in said.stdout
    assert local["forks"].proc is None
    pidfile = tmp / "sleeper.pid"
    hanging = argv(local, book(tmp, "hang", f"sh -c 'echo $$ > {pidfile}; exec sleep 120'"))
    assert play(local, hanging, environment(), timeout_s=5) is None
    sleeper = int(pidfile.read_text())
    deadline = time.monotonic() + 10
    while alive(sleeper) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(sleeper)
