"""A `dbarena site` or `verify` stopped by Ctrl-C or SIGTERM, to the process or to its
whole group (a terminal's Ctrl-C reaches the site's workers too), ends in one line and
leaves nothing in TMPDIR: no bundle's throwaway store (dbarena-bundle-*), no template
store (dbarena-bundle-template-*, which forked workers left behind at every site), and
no half-written site beside the output's previous one (issue 53). The bundles: the demo
store's run published, no server needed."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import cli_env

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
