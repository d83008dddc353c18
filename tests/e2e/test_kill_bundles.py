"""A `dbarena site` or `verify` stopped by Ctrl-C or SIGTERM, to the process or to its
whole group (a terminal's Ctrl-C reaches the site's workers too), ends in one line and
leaves nothing in TMPDIR: no bundle's throwaway store (dbarena-bundle-*), no template
store (dbarena-bundle-template-*, which forked workers left behind at every site), and
no half-written site beside the output's previous one (issue 53). A `verify` or `import`
killed with SIGKILL (and its watchdog) leaves its directories to the next dbarena command,
which removes them; a live one's are left alone. The bundles: the demo store's run
published, no server needed."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import cli_env, dbarena

from dbarena.exchange.publish import publish
from dbarena.store.database import Store

pytestmark = pytest.mark.e2e
DEMO = Path(__file__).resolve().parents[1] / "fixtures" / "stores" / "demo-seed-a-quick.db"


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    base = tmp_path_factory.mktemp("bundles")
    shutil.copyfile(DEMO, base / "demo.db")
    with Store(base / "demo.db") as db:
        data = publish(db, run_ids=[1], signer=None, secrets={}).data
    out = []
    for i in range(12):
        (base / f"b{i:02d}.tar").write_bytes(data)
        out.append(base / f"b{i:02d}.tar")
    return out


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # (a child of a shell's background job ignores it)


def _stopped(args: list[str], tmp: Path, how: signal.Signals, group: bool) -> subprocess.CompletedProcess[str]:
    """The command, signalled once it verifies a bundle (a throwaway store is in TMPDIR)."""
    proc = subprocess.Popen([sys.executable, "-m", "dbarena", *args], env=cli_env(tmp), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True, preexec_fn=_default_sigint)
    deadline = time.monotonic() + 60
    while not any(p.name.startswith("dbarena-bundle-") for p in tmp.iterdir()) and proc.poll() is None:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    (os.killpg if group else os.kill)(proc.pid, how)
    out, err = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


@pytest.mark.parametrize("command", ["site", "verify"])
@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.parametrize("group", [False, True], ids=["process", "group"])
def test_a_stopped_command_leaves_nothing_in_tmpdir(command, how, group, bundles, tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    out = tmp_path / "site"
    args = ([command, *map(str, bundles), "-o", str(out), "--jobs", "2"] if command == "site"
            else [command, *map(str, bundles)])
    done = _stopped(args, tmp, how, group)
    assert "Traceback" not in done.stderr, done.stderr
    if done.returncode != 0:  # (a command that ended before the signal landed: exit 0)
        assert done.returncode == (130 if how == signal.SIGINT else 143), done.stderr
        assert done.stderr.strip().splitlines()[-1:] in ([], ["dbarena: error: aborted"]), done.stderr
    assert sorted(os.listdir(tmp)) == []
    if out.exists():
        assert not [p.name for p in out.iterdir() if p.name.startswith(".dbarena-site-new-")]


# ------------------------------------------------------------------ SIGKILL


# What each of the command's directories holds while it works with it.
HOLDS = {"dbarena-bundle-": "bundle.db", "dbarena-merge-": "other.db"}


def _paused_in(args: list[str], env: dict[str, str], tmp: Path, prefix: str) -> tuple[subprocess.Popen[str], Path]:
    """The command, started and stopped (SIGSTOP: alive, doing nothing) as soon as a
    directory named `prefix`... holding its file is in TMPDIR; and that directory."""
    proc = subprocess.Popen([sys.executable, "-m", "dbarena", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 60
    while not (made := list(tmp.glob(f"{prefix}*/{HOLDS[prefix]}"))):
        assert proc.poll() is None, f"it ended before a {prefix}* directory was seen: {proc.communicate()}"
        assert time.monotonic() < deadline
        time.sleep(0.001)
    os.kill(proc.pid, signal.SIGSTOP)
    assert made[0].exists()  # (not removed in the moment before it stopped)
    return proc, made[0].parent


def _watchdogs_of(pid: int, wait_s: float) -> list[int]:
    """Its watchdog (state._Watchdog), waited for up to `wait_s`: started as the record is
    written, its command line is read a moment after."""
    import psutil

    deadline = time.monotonic() + wait_s
    while True:
        found = []
        for proc in psutil.process_iter(["pid", "cmdline"]):
            argv = proc.info.get("cmdline") or []
            if argv[-3:-1] == ["dbarena.lifecycle.watchdog", str(pid)]:
                found.append(int(proc.info["pid"]))
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


@pytest.mark.parametrize("command, prefix", [("verify", "dbarena-bundle-"), ("import", "dbarena-bundle-"),
                                             ("import", "dbarena-merge-")],
                         ids=["verify", "import-verifying", "import-merging"])
def test_sigkill_of_verify_or_import_and_its_watchdog_leaves_nothing_after_the_next_command(
        command, prefix, bundles, tmp_path):
    """SIGKILL of the command and of its watchdog while a bundle's throwaway store (or,
    for import, the copy merged from) is in TMPDIR: nothing removes it then; the next
    dbarena command, whatever it is, does (its state record, state.temporary), saying so."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = cli_env(tmp, DBARENA_STATE_DIR=str(tmp_path / "state"))
    args = ["verify", *map(str, bundles)] if command == "verify" else \
        ["import", *map(str, bundles), "--store", str(tmp_path / "r.db")]
    proc, made = _paused_in(args, env, tmp, prefix)
    for watchdog in _watchdogs_of(proc.pid, wait_s=5):  # (today's dbarena: none)
        os.kill(watchdog, signal.SIGKILL)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    time.sleep(0.5)
    assert made.is_dir()  # left: its owner and the watchdog are gone
    after = dbarena("results", "--store", str(tmp_path / "none.db"), env=env)  # (fails: no store; reaps first)
    assert sorted(os.listdir(tmp)) == [], after.stderr
    assert f"dbarena: removed {made}, left by process {proc.pid}" in after.stderr.splitlines()
    assert not list((tmp_path / "state" / "records").iterdir())


def test_sigkill_of_verify_alone_its_watchdog_removes_its_directory(bundles, tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = cli_env(tmp, DBARENA_STATE_DIR=str(tmp_path / "state"))
    proc, made = _paused_in(["verify", *map(str, bundles)], env, tmp, "dbarena-bundle-")
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    records = tmp_path / "state" / "records"
    # The watchdog removes the directory, then the record that named it: wait for both
    # (a Python process of its own, on a loaded machine).
    deadline = time.monotonic() + 60
    while (os.listdir(tmp) or list(records.iterdir())) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert sorted(os.listdir(tmp)) == []
    assert not list(records.iterdir())


def test_a_live_verifys_directory_is_left_alone_by_other_commands(bundles, tmp_path):
    """A verify at work (stopped, to hold it there) while other dbarena commands run with
    the same TMPDIR and state directory, `dbarena cleanup` among them: its throwaway store
    stays, named as in use, and the verify then ends as it would have."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = cli_env(tmp, DBARENA_STATE_DIR=str(tmp_path / "state"))
    proc, made = _paused_in(["verify", *map(str, bundles)], env, tmp, "dbarena-bundle-")
    try:
        held = sorted(p.name for p in made.iterdir())
        assert "bundle.db" in held
        other = dbarena("verify", str(bundles[0]), env=env)
        assert other.returncode == 0, other.stderr
        cleanup = dbarena("cleanup", env=env)
        assert cleanup.returncode == 0, cleanup.stderr
        assert f"in use by process {proc.pid}: {made}" in cleanup.stdout.splitlines()
        assert sorted(p.name for p in made.iterdir()) == held
    finally:
        os.kill(proc.pid, signal.SIGCONT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert out.count("verified") >= len(bundles), out
    assert sorted(os.listdir(tmp)) == []


# A process that takes in the orphans of its descendants (PR_SET_CHILD_SUBREAPER), runs
# the command and prints how many it had to collect once the command ended: the
# processes the command left to PID 1.
_ADOPTING = """
import ctypes, os, subprocess, sys
assert ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0
done = subprocess.run([sys.executable, "-m", "dbarena", *sys.argv[1:]], capture_output=True, text=True)
assert done.returncode == 0, done.stderr
orphans = 0
while True:
    try:
        pid, _ = os.waitpid(-1, 0)
    except ChildProcessError:
        break
    orphans += 1
print(orphans)
"""


def test_a_site_leaves_no_watchdog_of_its_workers_to_pid_1(bundles, tmp_path):
    """Each worker of `site` records its bundles' throwaway stores, which starts a watchdog
    of its own; a worker ends without atexit (where dbarena collects its watchdog), and
    its watchdog was left to PID 1, a zombie for good under one that does not reap."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = cli_env(tmp, DBARENA_STATE_DIR=str(tmp_path / "state"))
    done = subprocess.run([sys.executable, "-c", _ADOPTING, "site", *map(str, bundles), "-o", str(tmp_path / "site"),
                           "--jobs", "2"], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0"]
    assert sorted(os.listdir(tmp)) == []
