"""`dbarena run --profile` with real perf and a real throwaway PostgreSQL: a profile per
point whose top functions are PostgreSQL's own (the functions the postgres binary
exports), the backends pgbench's connections forked after perf started among its
samples; and without perf on PATH, one line says so and the points are stored, or,
where the study requires profiles, the run is refused before anything starts."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from conftest import cli_env, dbarena
# `results` only reads the store: run in this process (tests/inprocess.py), not as
# `python -m dbarena`, half a second of CPU each to start. The runs stay processes.
from inprocess import dbarena as dbarena_here
from dbarena.stats import profiles
from dbarena.store.database import Store

pytestmark = pytest.mark.e2e

PERF = shutil.which("perf")


def _exported_functions(binary: str) -> set[str]:
    """The functions a binary exports (its dynamic symbols), as readelf lists them."""
    listed = subprocess.run(["readelf", "--dyn-syms", "-W", binary], capture_output=True, text=True, check=True)
    names = set()
    for line in listed.stdout.splitlines():
        words = line.split()
        if len(words) >= 8 and words[3] == "FUNC" and words[6] != "UND":
            names.add(words[7].split("@")[0])
    return names


def _points(store: Path, env: dict) -> list[dict]:
    shown = dbarena_here("results", "--json", "--store", str(store), env=env)
    assert shown.returncode == 0, shown.stderr
    return json.loads(shown.stdout)


@pytest.mark.skipif(PERF is None or os.geteuid() != 0, reason="needs perf, run as root (perf samples every CPU)")
def test_a_profiled_tpcb_run_stores_a_profile_per_point_of_postgresqls_functions(public_tmp: Path,
                                                                                  tmp_path: Path) -> None:
    store = tmp_path / "r.db"
    env = cli_env(public_tmp)
    done = dbarena("run", "--workload", "pgbench-tpcb", "--threads", "2", "--clients-per-thread", "8", "--scale", "1",
                   "--duration", "5", "--profile", "--store", str(store), env=env)
    assert done.returncode == 0, done.stderr
    assert "no on-CPU profile" not in done.stderr, done.stderr
    assert "the server profiled on CPU by perf at 99 Hz" in done.stderr
    points = _points(store, env)
    assert points and all(p["status"] == "ok" for p in points)
    for point in points:
        profile = point["profile"]
        assert profile["frequency_hz"] == 99.0 and profile["samples"] > 50, profile
        binary = re.match(r"perf version [\d.]+; (/\S+): ", profile["symbols"])
        assert binary is not None, profile["symbols"]
        exported = _exported_functions(binary[1])
        names = [entry["function"] for entry in profile["top"]]
        assert len(names) == profiles.TOP
        # PostgreSQL's own functions by name (not addresses, not only the kernel's).
        own = [n for n in names if n in exported]
        assert len(own) >= 5, (own, names)
        assert not any(re.fullmatch(r"(0x)?[0-9a-f]+", n) for n in names), names
        assert abs(sum(e["share"] for e in profile["top"]) - 1) <= 1 and profile["top"][0]["share"] > 0
    # The stacks: every sample is the server's (the postmaster's tree), most of them the
    # backends forked for pgbench's 16 connections after perf started.
    with Store(store, readonly=True) as db:
        found = db.profiles([p["point_id"] for p in points], folded=True)
        system = db.system_samples(points[0]["point_id"])
    stacks = profiles.parse_folded(found[points[0]["point_id"]].folded or "")
    assert all(stack.split(";")[0] == "postgres" for stack in stacks)
    backends = sum(count for stack, count in stacks.items() if ";PostgresMain;" in f";{stack};")
    assert backends > profiles.samples(stacks) / 2, (backends, profiles.samples(stacks))
    # As much CPU as the server took (the system sampler's figure: each sample's rate over
    # the time since the one before, since on a loaded machine the sampler, at the lowest
    # priority, skips seconds), within what a 5 s point's sampling and whole seconds allow.
    ends = [s.second for s in system]
    server_s = sum((s.server_cpu or 0) * (end - start) for s, start, end in zip(system, [ends[0] - 1, *ends], ends))
    assert 0.4 * server_s <= profiles.samples(stacks) / 99 <= 2.5 * server_s, (profiles.samples(stacks), server_s)


def _path_without_perf(where: Path) -> str:
    """A PATH of every program of /usr/bin but perf (and /usr/sbin, /sbin)."""
    where.mkdir()
    for entry in Path("/usr/bin").iterdir():
        if entry.name != "perf" and not entry.name.startswith("perf_"):
            (where / entry.name).symlink_to(entry)
    return f"{where}:/usr/sbin:/sbin"


def test_a_run_without_perf_says_so_in_one_line_and_stores_its_points(public_tmp: Path, tmp_path: Path) -> None:
    store = tmp_path / "r.db"
    env = cli_env(public_tmp, PATH=_path_without_perf(tmp_path / "bin"))
    done = dbarena("run", "--workload", "pgbench-select-only", "--threads", "1", "--scale", "1", "--duration", "3",
                   "--profile", "--store", str(store), env=env)
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stderr.splitlines() if "on-CPU profile" in line]
    assert said == ["no on-CPU profiles: perf is not installed (not on PATH; Debian and Ubuntu: linux-perf or "
                    "linux-tools); the run goes on without them"], done.stderr
    points = _points(store, env)
    assert points and all(p["status"] == "ok" and "profile" not in p for p in points)
    db = sqlite3.connect(store)
    try:
        (options,) = db.execute("SELECT options FROM runs").fetchone()
        assert db.execute("SELECT count(*) FROM profiles").fetchone() == (0,)
    finally:
        db.close()
    recorded = json.loads(options)["profile"]
    assert recorded["frequency_hz"] == 99 and recorded["perf"] is None
    assert recorded["problem"].startswith("perf is not installed")


def test_a_study_that_requires_profiles_is_refused_without_perf(public_tmp: Path, tmp_path: Path) -> None:
    study = tmp_path / "s.toml"
    study.write_text('schema = 1\nname = "needs-profiles"\n[engines.postgres]\n[[workloads]]\n'
                     'workload = "pgbench-select-only"\nlevels = [1]\nduration_s = 3\nscale = 1\n'
                     '[profile]\nrequired = true\n')
    store = tmp_path / "r.db"
    env = cli_env(public_tmp, PATH=_path_without_perf(tmp_path / "bin"))
    done = dbarena("run", "--study", str(study), "--store", str(store), env=env)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines()[-1] == (
        "dbarena: error: on-CPU profiles are required ([profile] required = true), but perf is not installed (not "
        "on PATH; Debian and Ubuntu: linux-perf or linux-tools)"), done.stderr
    assert "target:" not in done.stderr  # (no server was started)


@pytest.mark.skipif(PERF is None or os.geteuid() != 0, reason="needs perf, run as root (perf samples every CPU)")
def test_a_target_is_not_profiled_and_a_line_says_so(public_tmp: Path, tmp_path: Path) -> None:
    from dbarena.engines import postgres

    with postgres.throwaway() as target:
        password = target.passfile.read_text().strip().rsplit(":", 1)[1]
        env = cli_env(public_tmp, PGPASSWORD=password)
        store = tmp_path / "r.db"
        done = dbarena("run", "--target", target.url, "--workload", "pgbench-select-only", "--threads", "1",
                       "--duration", "2", "--scale", "1", "--profile", "--store", str(store), env=env)
        assert done.returncode == 0, done.stderr
        said = [line for line in done.stderr.splitlines() if "profile" in line]
        assert said == [f"no on-CPU profile of {target.url}: perf samples only a server dbarena started on this "
                        "machine (a throwaway instance), not a --target"], done.stderr
        points = _points(store, env)
        assert points and all(p["status"] == "ok" and "profile" not in p for p in points)
