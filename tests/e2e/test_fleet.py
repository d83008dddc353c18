"""`dbarena fleet run` over real SSH and real Ansible: two "hosts" (this machine behind
two sshd processes on 127.0.0.2 and 127.0.0.3, each in the working directory dbarena
gives it by default, <dbarena_workdir_base>/<inventory name>) run a tiny study; their
points arrive in the local store under their labels and prices and `report` compares
them. A host that dies half-way does not stop the other, `fleet status` exits 1 while
it is unreachable, and a second `fleet run` completes it without re-running its
finished points. A host whose Python does not start shows its own error. A host
slowed by a CPU cgroup is flagged by its probe. Nothing is left running afterwards."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

import cgroup
from conftest import processes_mentioning
from sshd import ansible_env, inventory, missing, sshd
from test_kill import _within

# A fresh host installs dbarena's dependencies into a virtual environment first.
pytestmark = [pytest.mark.e2e, pytest.mark.fleet, pytest.mark.timeout(900)]

STUDY = """schema = 1
name = "{name}"
[sweep]
levels = {levels}
duration_s = {duration}
repeats = 1
[datasets]
scale = 1
[engines.postgres]
[[workloads]]
workload = "pgbench-select-only"
"""


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """Two hosts, their inventory and environment; their dbarena installs are reused
    by the tests of this module (a fresh virtual environment costs most of a minute)."""
    if missing():
        pytest.fail(missing())
    tmp = tmp_path_factory.mktemp("fleet")
    tmp.chmod(0o755)
    with sshd(("127.0.0.2", "127.0.0.3"), tmp) as hosts:
        # Both "hosts" are this one machine: no dbarena_workdir, only a base under this
        # test's directory, so that each gets its own by default (tmp/hosts/alpha, ...).
        base = tmp / "hosts"
        workdirs = {h.name: base / h.name for h in hosts}
        extra = {"alpha": {"dbarena_workdir_base": str(base), "dbarena_label": "arm",
                           "dbarena_price_per_hour": 0.58},
                 "beta": {"dbarena_workdir_base": str(base), "dbarena_label": "x86",
                          "dbarena_price_per_month": 420, "dbarena_currency": "EUR"}}
        inv = inventory(hosts.hosts, hosts.key, tmp / "hosts.ini", workdirs=workdirs, extra_vars=extra)
        env = ansible_env(tmp)
        # A password the runs could need (a --target's, a shared store's): it reaches the
        # hosts, and nowhere else.
        env["PGPASSWORD"] = "fleet-" + secrets.token_hex(8)
        yield {"hosts": hosts, "inventory": inv, "env": env, "tmp": tmp, "workdirs": workdirs, "base": base}
    # Nothing left running: no sshd, no dbarena, no database server of the hosts' runs.
    assert _within(20, lambda: not processes_mentioning(str(tmp))), processes_mentioning(str(tmp))
    # (Their data directories are in the hosts' TMPDIRs, tests/sshd.py: apart from other
    # tests' servers, which run meanwhile.)
    assert _within(20, lambda: not processes_mentioning(str(hosts.scratch))), processes_mentioning(str(hosts.scratch))


def fleet_cmd(f: dict, *args: str, timeout: float = 600, inv: Path | None = None) -> subprocess.CompletedProcess:
    # The inventory before any `--` (what follows it goes to every host's `dbarena run`).
    ends = args.index("--") if "--" in args else len(args)
    return subprocess.run([sys.executable, "-m", "dbarena", "fleet", *args[:ends], "-i", str(inv or f["inventory"]),
                           *args[ends:]],
                          env=f["env"], capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def study(f: dict, name: str, levels: list[int], duration: int, rate: int | None = None) -> Path:
    """rate: each point offered that many transactions a second (pgbench -R), for a test
    that looks at what runs, arrives and is left, not how fast (conftest.LIGHT's reason)."""
    path = f["tmp"] / f"{name}.toml"
    path.write_text(STUDY.format(name=name, levels=levels, duration=duration)
                    + (f"[workloads.options]\nrate = {rate}\n" if rate is not None else ""))
    return path


def test_two_hosts_run_a_study_and_their_points_arrive_under_their_labels_and_prices(fleet):
    tiny, store = study(fleet, "tiny", [1, 2], 2), fleet["tmp"] / "all.db"
    done = fleet_cmd(fleet, "run", "--study", str(tiny), "--store", str(store))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "alpha (arm): complete; 2/2 points" in done.stdout and "beta (x86): complete; 2/2 points" in done.stdout
    table = done.stdout[done.stdout.index("host "):]
    assert "1 run(s), 2 point(s)" in table and "complete" in table
    db = sqlite3.connect(store)
    runs = db.execute("SELECT label, price_per_hour, currency, status FROM runs ORDER BY label").fetchall()
    assert runs == [("arm", 0.58, "USD", "finished"), ("x86", pytest.approx(420 / 730), "EUR", "finished")]
    assert db.execute("SELECT COUNT(*) FROM points WHERE status = 'ok' AND phase = 'measured'").fetchone()[0] == 4
    report = subprocess.run([sys.executable, "-m", "dbarena", "report", "-o", str(fleet["tmp"] / "r.md"),
                             "--store", str(store)], capture_output=True, text=True, timeout=120)
    assert report.returncode == 0, report.stderr
    text = (fleet["tmp"] / "r.md").read_text()
    assert "arm" in text and "x86" in text
    compared = subprocess.run([sys.executable, "-m", "dbarena", "compare", "arm", "x86", "--json", "--store",
                               str(store)], capture_output=True, text=True, timeout=120)
    assert compared.returncode == 0, compared.stderr
    assert {(c["threads"], c["verdict"]) for c in json.loads(compared.stdout)} == {(1, None), (2, None)}

    # The same command again (one host after the other): both complete, nothing run or added.
    again = fleet_cmd(fleet, "run", "--study", str(tiny), "--serial", "--store", str(store))
    assert again.returncode == 0, again.stdout + again.stderr
    # Said once per host, with what it holds.
    assert again.stdout.count("complete already (2/2 points stored), not run again") == 2, again.stdout
    assert db.execute("SELECT COUNT(*) FROM points").fetchone()[0] == 4

    status = fleet_cmd(fleet, "status")
    assert status.returncode == 0, status.stdout + status.stderr
    assert "alpha (arm): complete; 2/2 points" in status.stdout
    assert "beta (x86): complete; 2/2 points" in status.stdout and "not run again" not in status.stdout
    # Each host worked in its own default directory.
    for workdir in fleet["workdirs"].values():
        assert (workdir / "dbarena.db").is_file() and (workdir / "venv").is_dir()

    # The password is in no file here or on the hosts (stores, logs, Ansible's files).
    password = fleet["env"]["PGPASSWORD"].encode()
    for path in [*fleet["tmp"].rglob("*"), *fleet["hosts"].scratch.rglob("*")]:
        if path.is_file() and not path.is_symlink():
            assert password not in path.read_bytes(), path
    assert not (fleet["workdirs"]["alpha"] / "secrets.json").exists()
    assert password.decode() not in done.stdout + done.stderr + again.stdout + again.stderr


def test_a_host_that_dies_half_way_does_not_stop_the_other_and_a_second_run_completes_it(fleet):
    longer, store = study(fleet, "longer", [1, 2, 3], 3, rate=50), fleet["tmp"] / "second.db"
    beta_dir = fleet["workdirs"]["beta"]
    proc = subprocess.Popen([sys.executable, "-m", "dbarena", "fleet", "run", "-i", str(fleet["inventory"]),
                             "--study", str(longer), "--poll", "2", "--unreachable-timeout", "4",
                             "--store", str(store)], env=fleet["env"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    try:
        def one_done() -> bool:
            try:
                progress = json.loads((beta_dir / "progress.json").read_text())
            except (OSError, ValueError):
                return False
            return progress.get("done", 0) >= 1 and progress.get("planned") == 3
        assert _within(180, one_done), (beta_dir / "run.log").read_text() if (beta_dir / "run.log").exists() else ""
        # beta goes away: its sshd, and the run on it (as a host that lost power would).
        fleet["hosts"]["beta"].kill()
        for line in processes_mentioning(str(beta_dir)):
            os.kill(int(line.split(":", 1)[0]), signal.SIGKILL)
        out, err = proc.communicate(timeout=300)
    finally:
        proc.kill()
    assert proc.returncode == 1, out + err
    # No ETA of 0 before a point has ended; repeats counted from 1.
    assert not [line for line in out.splitlines() if "ETA 0m00s" in line and " 0/3 points" in line], out
    assert "repeat 0" not in out
    table = out[out.index("host "):]
    # (A host's store holds every study it ran here: all of it is merged.)
    assert any(line.startswith("alpha") and " complete " in line and "3/3" in line and "point(s)" in line
               for line in table.splitlines()), out
    assert any(line.startswith("beta") and "unreachable" in line for line in table.splitlines()), table
    db = sqlite3.connect(store)
    assert db.execute("SELECT DISTINCT label FROM runs").fetchall() == [("arm",)]

    # What beta stored before it died stays as it is; a second run adds only the rest.
    host_store = sqlite3.connect(beta_dir / "dbarena.db")
    kept = host_store.execute("SELECT p.threads, p.started_at FROM points p JOIN runs r ON r.id = p.run_id "
                              "JOIN studies s ON s.sha256 = r.study_sha256 WHERE s.name = 'longer' "
                              "AND p.status = 'ok'").fetchall()
    host_store.close()
    assert 1 <= len(kept) < 3
    # While beta is down, `fleet status` says so and exits 1.
    status = fleet_cmd(fleet, "status", timeout=300)
    assert status.returncode == 1, status.stdout + status.stderr
    assert "alpha (arm): complete; 3/3 points" in status.stdout
    assert any(line.startswith("beta (x86): unreachable; ") and "127.0.0.3" in line
               for line in status.stdout.splitlines()), status.stdout
    fleet["hosts"]["beta"].restart()
    again = fleet_cmd(fleet, "run", "--study", str(longer), "--store", str(store))
    assert again.returncode == 0, again.stdout + again.stderr
    assert "alpha (arm): complete already (3/3 points stored), not run again" in again.stdout
    rows = db.execute("SELECT p.threads, p.started_at FROM points p JOIN runs r ON r.id = p.run_id "
                      "JOIN studies s ON s.sha256 = r.study_sha256 WHERE s.name = 'longer' AND r.label = 'x86' "
                      "AND p.status = 'ok' AND p.phase = 'measured'").fetchall()
    assert sorted(t for t, _ in rows) == [1, 2, 3]
    assert set(kept) <= set(rows)  # the points finished before the kill, not measured again


def test_with_a_shared_postgresql_store_every_host_writes_there_itself(fleet):
    from dbarena.engines import postgres
    import psycopg

    tiny = study(fleet, "shared", [1], 2, rate=50)
    with postgres.throwaway() as server:
        password = server.passfile.read_text().strip().rsplit(":", 1)[1]
        with psycopg.connect(server.url, password=password, autocommit=True) as admin:
            admin.execute("CREATE DATABASE results")
        url = server.url.rsplit("/", 1)[0] + "/results"
        env = {**fleet["env"], "PGPASSWORD": password}
        done = subprocess.run([sys.executable, "-m", "dbarena", "fleet", "run", "-i", str(fleet["inventory"]),
                               "--study", str(tiny), "--store", url], env=env, capture_output=True,
                              text=True, timeout=600, stdin=subprocess.DEVNULL)
        assert done.returncode == 0, done.stdout + done.stderr
        with psycopg.connect(url, password=password) as conn:
            rows = conn.execute("SELECT label, COUNT(*) FROM v_points WHERE study = 'shared' AND status = 'ok'"
                                " GROUP BY label ORDER BY label").fetchall()
        assert rows == [("arm", 1), ("x86", 1)]
        # Nothing was fetched: the hosts' own stores do not hold this study.
        for workdir in fleet["workdirs"].values():
            local = sqlite3.connect(workdir / "dbarena.db")
            assert local.execute("SELECT COUNT(*) FROM studies WHERE name = 'shared'").fetchone()[0] == 0
        assert password not in done.stdout + done.stderr
        for workdir in fleet["workdirs"].values():
            assert not (workdir / "secrets.json").exists()
            for path in workdir.rglob("*"):
                if path.is_file() and not path.is_symlink() and "venv" not in path.parts:
                    assert password.encode() not in path.read_bytes(), path


def test_a_host_whose_python_does_not_start_shows_its_own_error(fleet):
    """A host without ansible_python_interpreter behind a pyenv shim: Ansible says only
    "Module result deserialization failed"; the user sees what the host printed."""
    shim = fleet["tmp"] / "pyenv-shim" / "python3.13"
    shim.parent.mkdir(exist_ok=True)
    shim.write_text("#!/bin/sh\n"
                    "echo 'pyenv: python3.13: command not found' >&2\n"
                    "echo '' >&2\n"
                    "echo \"The \\`python3.13' command exists in these Python versions:\" >&2\n"
                    "exit 127\n")
    shim.chmod(0o755)
    hosts = fleet["hosts"]
    workdir = fleet["base"] / "pyenvbox"
    inv = inventory([hosts["alpha"]], hosts.key, fleet["tmp"] / "broken.ini", workdirs={"alpha": workdir},
                    extra_vars={"alpha": {"ansible_python_interpreter": str(shim),
                                          "dbarena_workdir_base": str(fleet["base"])}})
    inv.write_text(inv.read_text().replace("\nalpha ", "\npyenvbox "))
    broken = study(fleet, "broken", [1], 2)

    done = fleet_cmd(fleet, "run", "--study", str(broken), "--store", str(fleet["tmp"] / "b.db"),
                     inv=inv)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("pyenvbox: failed; start failed: "))
    assert 'task "Debian packages the study needs"' in lines[first] and "ansible_python_interpreter" in lines[first]
    assert lines[first + 1] == "    | pyenv: python3.13: command not found", done.stdout
    assert "Permanently added" not in done.stdout  # ssh's noise is not the host's error
    table = done.stdout[done.stdout.index("host "):]
    assert any(line.startswith("pyenvbox") and " failed " in line for line in table.splitlines()), table

    # `fleet status` runs no module of Ansible's on a host (status.yml: python3 on the
    # PATH, then the host's own dbarena): it finds nothing started there, which is so.
    status = fleet_cmd(fleet, "status", inv=inv)
    assert status.returncode == 0, status.stdout + status.stderr
    assert "dbarena is not installed there yet" in status.stdout, status.stdout
    for out in (done, status):
        assert "Traceback" not in out.stdout + out.stderr
        assert fleet["env"]["PGPASSWORD"] not in out.stdout + out.stderr
    assert not (workdir / "venv").exists() and not (workdir / "dbarena.db").exists()  # nothing ran there


def test_a_working_directory_another_user_planted_is_refused_and_nothing_in_it_runs(fleet):
    """The probe's repro: a local user creates the host's working directory first, with a
    venv whose pip, python and dbarena are their own programs. `fleet run` and `fleet
    status` refuse the host in one line and run none of them (the playbooks check the
    directory before anything else: fleet/playbooks/workdir_check.py)."""
    hosts = fleet["hosts"]
    planted, marker = fleet["tmp"] / "planted", fleet["tmp"] / "planted-ran"
    (planted / "venv" / "bin").mkdir(parents=True)
    for tool in ("pip", "python", "python3", "dbarena"):
        program = planted / "venv" / "bin" / tool
        program.write_text(f"#!/bin/sh\necho {tool} >> {marker}\n")
        program.chmod(0o755)
    for path in (planted, *planted.rglob("*")):
        os.chown(path, 65534, 65534)  # nobody's
    inv = inventory([hosts["alpha"]], hosts.key, fleet["tmp"] / "planted.ini",
                    workdirs={"alpha": fleet["tmp"] / "planted-ansible"},
                    extra_vars={"alpha": {"dbarena_workdir": str(planted)}})
    tiny = study(fleet, "planted", [1], 2)

    done = fleet_cmd(fleet, "run", "--study", str(tiny), "--store", str(fleet["tmp"] / "p.db"),
                     inv=inv)
    assert done.returncode == 1, done.stdout + done.stderr
    refusal = f"unsafe working directory: {planted} is owned by nobody, not by root"
    assert any(line.startswith("alpha: failed; start failed: ") for line in done.stdout.splitlines()), done.stdout
    assert refusal in done.stdout, done.stdout
    status = fleet_cmd(fleet, "status", inv=inv)
    assert status.returncode == 1 and refusal in status.stdout, status.stdout + status.stderr
    for out in (done, status):
        assert "Traceback" not in out.stdout + out.stderr
    assert not marker.exists(), marker.read_text()
    assert sorted(p.name for p in planted.iterdir()) == ["venv"]  # no wheel, study or secrets put there


# Its figure is alpha's free probe against beta's throttled one: the other fleet module's
# Ansible and servers, beside it in `make test`'s fleet part, would take from alpha's.
@pytest.mark.alone
def test_a_host_slowed_by_a_cgroup_is_flagged_by_its_probe(fleet):
    """beta's `dbarena run`, and all it starts, on a tenth of one CPU (a CPU cgroup) from
    its start until its probe has ended: its probe before the study lies far below
    alpha's, the other host of its kind (both are this machine), so `fleet run` flags
    beta, alpha not, and the flag reaches beta's runs and the report. --serial: the two
    probes do not share the CPUs. A tenth, not a quarter: under this suite's own load a
    free probe here fell to a quarter of an idle one (2,196 against 8,854 events/s), as
    close to a quarter-CPU host as 2.2x. Only the run, and only until its probe ends:
    the whole of beta (its sshd, Ansible's tasks, initdb, the point, the fetch) at a
    tenth of a CPU made this test take 160 s instead of 50, and the probe is what it is
    about. The run is caught when it starts: it imports for a second or more before
    it probes."""
    if cgroup.missing():
        pytest.fail(cgroup.missing())
    # Run alone (make test's last phase, or -k), the hosts install dbarena in this run's
    # start, at full speed: the cgroup takes beta's `dbarena run`, which starts after it.
    probed, store = study(fleet, "probed", [1], 2), fleet["tmp"] / "probed.db"
    progress = fleet["workdirs"]["beta"] / "progress.json"
    progress.unlink(missing_ok=True)  # (the last run's: its stages are not this one's)
    proc = subprocess.Popen([sys.executable, "-m", "dbarena", "fleet", "run", "-i", str(fleet["inventory"]),
                             "--study", str(probed), "--poll", "2", "--serial", "--store", str(store),
                             "--", "--probe", "6"], env=fleet["env"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    try:
        def beta_run() -> int | None:
            found = [line for line in processes_mentioning(str(progress)) if " -m dbarena run " in line]
            return int(found[0].split(":", 1)[0]) if found else None

        deadline = time.monotonic() + 400
        while beta_run() is None and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        run_pid = beta_run()
        assert run_pid is not None, proc.communicate(timeout=60)
        with cgroup.throttled(run_pid, 0.1):
            def probed_already() -> bool:
                with contextlib.suppress(OSError, ValueError):
                    return str(json.loads(progress.read_text()).get("stage", "")).startswith("host probe: ")
                return False
            assert _within(300, lambda: probed_already() or proc.poll() is not None)
        out, err = proc.communicate(timeout=400)
    finally:
        proc.kill()
    done = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    assert done.returncode == 0, done.stdout + done.stderr
    flags = [line for line in done.stdout.splitlines() if line.startswith("host ") and ": probe" in line]
    assert len(flags) == 1 and flags[0].startswith("host beta: probe CPU (best second) "), done.stdout
    assert "below alpha's, the other host of" in flags[0]
    db = sqlite3.connect(store)
    options = {label: json.loads(o) for label, o in db.execute(
        "SELECT r.label, r.options FROM runs r JOIN studies s ON s.sha256 = r.study_sha256 WHERE s.name = 'probed'")}
    assert set(options) == {"arm", "x86"}
    assert options["x86"]["probe_outlier"] == flags[0].removeprefix("host beta: ")
    assert "probe_outlier" not in options["arm"]
    slow, free = options["x86"]["probe"], options["arm"]["probe"]
    assert slow["cpu_best_events_per_s"] * 3 < free["cpu_best_events_per_s"]
    report = fleet["tmp"] / "probed.md"
    made = subprocess.run([sys.executable, "-m", "dbarena", "report", "-o", str(report), "--store", str(store)],
                          capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    assert "probe: far from its kind" in report.read_text()
