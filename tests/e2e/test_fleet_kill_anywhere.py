"""Kill anything, anywhere, lose nothing (issue 45), for `fleet run --together`: the
controller of a run whose throwaway PostgreSQL is on the inventory's [server] host
(gamma) and whose load generators are alpha and beta (sshd on loopback addresses,
tests/sshd.py) killed three times, with SIGINT (to its process group, as a terminal's
Ctrl-C), SIGTERM and SIGKILL, each at a seeded random moment: while the server starts or
is ready, or while the second point runs. Each kill is followed by `fleet cleanup` and
the same command again, which is itself the next one killed; the last runs to the end.
After each cleanup: no throwaway server left, no dbarena process on a host, no run
`running` in the store, the points stored ok before the kill kept; at the end every
level stored exactly once with status ok."""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import rows_of, processes_mentioning
from sshd import ansible_env, missing, sshd
from test_fleet_together import STUDY, _data_dir, _postmasters, _server_inventory
from test_kill import _within
from test_run import _default_sigint

pytestmark = [pytest.mark.e2e, pytest.mark.fleet, pytest.mark.timeout(900)]

LEVELS = [2, 4]

# Where each kill may fall: after the event named (the server host says it is starting
# or ready; a load generator's pgbench runs the second point, the first one stored), and
# a random part of a few seconds more.
MOMENTS = [(signal.SIGINT, "starting"), (signal.SIGTERM, "ready"), (signal.SIGKILL, "second point")]


def _server_state(workdirs: dict) -> str | None:
    with contextlib.suppress(OSError, ValueError):
        return json.loads((workdirs["gamma"] / "server" / "status.json").read_text()).get("state")
    return None


def _measuring(workdirs: dict) -> bool:
    return any("pgbench" in line.split(" ", 2)[1] for h in ("alpha", "beta")
               for line in processes_mentioning(str(workdirs[h] / "point")))


def _host_servers() -> set[int]:
    """The throwaway PostgreSQL servers the hosts' dbarena runs (their data directories
    in /tmp: sshd gives its sessions no TMPDIR), not those of other tests (in theirs)."""
    found = set()
    for pid in _postmasters():
        with contextlib.suppress(OSError, ValueError):
            if _data_dir(pid).parent.parent == Path("/tmp"):
                found.add(pid)
    return found


def _throwaway_dirs() -> set[Path]:
    """The throwaway instances' directories the hosts' dbarena made (in their TMPDIR,
    /tmp: sshd gives its sessions none)."""
    return {*Path("/tmp").glob("dbarena-pg-*"), *Path("/tmp").glob("dbarena-mysql-*")}


def _ok(store: Path) -> dict[int, tuple]:
    """The points stored ok: id -> (threads, repeat)."""
    return {r[0]: r[1:] for r in rows_of(store, "SELECT id, threads, repeat FROM points WHERE status = 'ok'")}


def test_three_kills_of_a_together_controller_lose_nothing(tmp_path_factory):
    if missing():
        pytest.fail(missing())
    seed = int(os.environ.get("DBARENA_KILL_SEED") or random.randrange(1 << 30))
    print(f"DBARENA_KILL_SEED={seed}")
    rng = random.Random(seed)
    tmp = tmp_path_factory.mktemp("killanywhere")
    tmp.chmod(0o755)
    before, dirs_before = _host_servers(), _throwaway_dirs()
    with sshd(("127.0.0.2", "127.0.0.3", "127.0.0.4"), tmp) as hosts:
        base = tmp / "hosts"
        workdirs = {h.name: base / h.name for h in hosts}
        extra: dict[str, dict[str, object]] = {h.name: {"dbarena_workdir_base": str(base)} for h in hosts}
        extra["alpha"]["dbarena_server_address"] = "127.0.0.1"
        inv = _server_inventory(tmp, hosts, workdirs, extra)
        study = tmp / "kill.toml"
        study.write_text(STUDY.format(name="kill", levels=LEVELS, duration=4, sampling=0.1))
        store = tmp / "kill.db"
        env = ansible_env(tmp)
        command = [sys.executable, "-m", "dbarena", "fleet", "run", "-i", str(inv), "--study", str(study),
                   "--together", "--poll", "1", "--store", str(store)]
        kept: dict[int, tuple] = {}
        hit = []
        for number, (how, after) in enumerate(MOMENTS, 1):
            log = tmp / f"moment{number}.log"
            with open(log, "w") as out:
                run = subprocess.Popen(command, env=env, stdout=out, stderr=out, stdin=subprocess.DEVNULL,
                                       start_new_session=True, preexec_fn=_default_sigint)
            try:
                event = {"starting": lambda: _server_state(workdirs) in ("starting", "ready"),
                         "ready": lambda: _server_state(workdirs) == "ready",
                         "second point": lambda: bool(_ok(store)) and _measuring(workdirs)}[after]
                # (the status of the previous server is gone: serve() removes it first)
                assert _within(300, lambda: event() or run.poll() is not None), log.read_text()[-3000:]
                assert run.poll() is None, log.read_text()[-3000:]
                delay = rng.random() * 3
                time.sleep(delay)
                assert run.poll() is None, log.read_text()[-3000:]
                if how == signal.SIGINT:
                    os.killpg(run.pid, how)
                else:
                    run.send_signal(how)
                code = run.wait(timeout=300)
            finally:
                run.kill()
            out_text = log.read_text(errors="replace")
            assert "Traceback" not in out_text, out_text[-3000:]
            cleaned = subprocess.run([sys.executable, "-m", "dbarena", "fleet", "cleanup", "-i", str(inv)], env=env,
                                     capture_output=True, text=True, timeout=400, stdin=subprocess.DEVNULL)
            assert cleaned.returncode == 0, cleaned.stdout + cleaned.stderr
            assert "Traceback" not in cleaned.stdout + cleaned.stderr
            if how != signal.SIGKILL:  # it stopped what it had started on the hosts itself
                assert "stopped the" not in cleaned.stdout, cleaned.stdout
            # No server, no point on a host, nothing running in the store.
            assert _within(30, lambda: _host_servers() <= before), _host_servers() - before
            assert _within(30, lambda: not processes_mentioning(str(base))), processes_mentioning(str(base))
            assert _within(30, lambda: _throwaway_dirs() <= dirs_before), _throwaway_dirs() - dirs_before
            assert _server_state(workdirs) in (None, "stopped", "failed"), _server_state(workdirs)
            runs = rows_of(store, "SELECT id, status FROM runs")
            assert [r for r in runs if r[1] == "running"] == [], runs
            points = _ok(store)
            assert {i: p for i, p in points.items() if i in kept} == kept, "a point stored before a kill is gone"
            assert len(set(points.values())) == len(points), sorted(points.values())
            kept = points
            hit.append(f"{number} {how.name} {delay:.1f} s after the {after} event: exit {code}; then "
                       f"{len(points)} points ok, runs {[s for _, s in runs]}; cleanup said: "
                       f"{' / '.join(cleaned.stdout.splitlines())[:300]}")
            print(hit[-1])
        assert len(kept) == 1, kept  # the first point, stored before the SIGKILL
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        assert f"resuming: 1 of {len(LEVELS)} points stored already" in done.stdout, done.stdout
        points = _ok(store)
        assert sorted(points.values()) == [(level, 0) for level in LEVELS], points
        assert {i: p for i, p in points.items() if i in kept} == kept
        assert [s for (s,) in rows_of(store, "SELECT status FROM runs")] == ["finished"]
        assert _within(30, lambda: _host_servers() <= before), _host_servers() - before
        assert _within(30, lambda: _throwaway_dirs() <= dirs_before), _throwaway_dirs() - dirs_before
        print("\n".join(["moments:", *hit]))
    assert _within(30, lambda: not processes_mentioning(str(tmp))), processes_mentioning(str(tmp))
