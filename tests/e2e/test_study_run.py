"""Studies end to end: a bundled study in one command on real PostgreSQL and MariaDB,
variants, and points of different configurations kept apart."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from conftest import LIGHT, SEED_A, cli_env, dbarena, error_line, left_in_ram, processes_mentioning, server_segments
# results, report, compare and study check only read the store and the study: run in
# this process (tests/inprocess.py), not as `python -m dbarena`, half a second of CPU each
# to start. The runs and cleanups stay processes.
from inprocess import dbarena as dbarena_here

pytestmark = pytest.mark.e2e


# The run is the session's shared one (conftest.seed_a_quick, also published by
# test_exchange_seed.py): its checks are the same as if this test had run it, taken by
# the fixture as soon as it ended. The timeout covers waiting for the other module's
# worker to finish it.
@pytest.mark.timeout(900)
def test_seed_a_quick_runs_every_workload_of_study_a_in_one_command(seed_a_quick, public_tmp, tmp_path):
    assert seed_a_quick.returncode == 0, seed_a_quick.stderr[-3000:]
    assert seed_a_quick.left_processes == [] and seed_a_quick.left_files == []
    store = seed_a_quick.copy_to(tmp_path / "r.db")
    db = sqlite3.connect(store)
    stored = {}
    for engine, workload, status, variant, key in db.execute(
            "SELECT engine, workload, status, variant, config_key FROM points WHERE phase = 'measured'"):
        assert status == "ok" and variant == "" and key
        stored.setdefault(engine, set()).add(workload)
    assert stored == SEED_A
    # The study is stored with every run, text and hash, and can be filtered on.
    runs = db.execute("SELECT r.engine, r.flavour, s.name, s.text FROM runs r JOIN studies s "
                      "ON s.sha256 = r.study_sha256").fetchall()
    assert {(e, n) for e, _, n, _ in runs} == {("postgres", "seed-a"), ("mysql", "seed-a")}
    assert {f for _, f, _, _ in runs} == {"postgresql", "mariadb"}
    assert all('name = "seed-a"' in text for *_, text in runs)
    # --quick: 5 s points, mysqlslap bounded by its (scaled-down) number of queries.
    assert {d for (d,) in db.execute("SELECT DISTINCT duration_s FROM points WHERE workload != 'mysqlslap'")} == {5}
    slap = db.execute("SELECT params, command FROM points WHERE workload = 'mysqlslap'").fetchone()
    assert json.loads(slap[0])["queries"] == 1000 and "--number-of-queries=1000" in json.loads(slap[1])
    # sysbench datasets were prepared and cleaned up around every point (study A's protocol).
    listed = dbarena_here("results", "--store", str(store), "--study", "seed-a", "--json", env=cli_env(public_tmp))
    assert listed.returncode == 0 and len(json.loads(listed.stdout)) == db.execute(
        "SELECT COUNT(*) FROM points").fetchone()[0]
    # One report of it all: a section per engine and workload, each with its parameters.
    md, csv_out = tmp_path / "r.md", tmp_path / "r.csv"
    for out in (md, csv_out):
        assert dbarena_here("report", "--store", str(store), "-o", str(out), env=cli_env(public_tmp)).returncode == 0
    text = md.read_text()
    # The engine x workload sections, between the page's own (the decision, what differs,
    # how to read it) and the provenance.
    own = ("Provenance", "How to read this", "Decision", "What differs")
    sections = [s for s in text.split("\n## ")[1:] if not s.startswith(own)]
    assert {tuple(s.splitlines()[0].split()) for s in sections} == {
        (engine, workload) for engine, found in SEED_A.items() for workload in found}
    assert all("### Parameters" in s for s in sections)
    slap = next(s for s in sections if s.startswith("mysql mysqlslap"))
    assert "lower is better" in slap and "seconds" in slap
    header = csv_out.read_text().splitlines()[0].split(",")
    assert {"latency_p95_ms", "latency_p99_ms", "seconds", "server_cpu"} <= set(header)


VARIANT_STUDY = """
schema = 1
name = "two-variants"

[sweep]
levels = [1, 2]
duration_s = 3
repeats = 2

[datasets]
scale = 1

[engines.postgres]
settings = { max_connections = "50" }

[[workloads]]
workload = "pgbench-select-only"
options = { protocol = "prepared" }

[variants.small]
postgres = { shared_buffers = "16MB" }

[variants.large]
postgres = { shared_buffers = "64MB" }
"""


def test_a_two_variant_study_stores_both_and_compare_gives_the_variant_ratio(public_tmp, tmp_path):
    store = tmp_path / "r.db"
    study = tmp_path / "v.toml"
    study.write_text(VARIANT_STUDY)
    env = cli_env(public_tmp)
    checked = dbarena_here("study", "check", str(study), env=env)
    assert checked.returncode == 0, checked.stderr
    assert "variant small: max_connections=50, shared_buffers=16MB" in checked.stdout
    assert "8 points" in checked.stdout  # 2 levels x 2 variants x 2 repeats
    done = dbarena("run", "--study", str(study), "--store", str(store), "--label", "box", env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    db = sqlite3.connect(store)
    runs = db.execute("SELECT variant, target_facts FROM runs ORDER BY id").fetchall()
    assert [v for v, _ in runs] == ["small", "large"]
    assert [json.loads(f)["non_default_settings"]["shared_buffers"] for _, f in runs] == ["16MB", "64MB"]
    order = [(v, r) for v, r in db.execute("SELECT variant, repeat FROM points ORDER BY id")]
    # Interleaved: repeat 0 of both variants, then repeat 1 of both.
    assert order == [("small", 0)] * 2 + [("large", 0)] * 2 + [("small", 1)] * 2 + [("large", 1)] * 2
    commands = [json.loads(c) for (c,) in db.execute("SELECT command FROM points")]
    assert all(c[c.index("-M") + 1] == "prepared" for c in commands)
    compared = dbarena_here("compare", "small", "large", "--store", str(store), "--json", env=env)
    assert compared.returncode == 0, compared.stderr
    rows = json.loads(compared.stdout)
    assert [(r["threads"], r["by"], r["a_n"], r["b_n"]) for r in rows] == [(1, "variant", 2, 2), (2, "variant", 2, 2)]
    assert all(r["ratio"] > 0 and r["verdict"] is None and r["reason"] == "inconclusive: 1 session a side" for r in rows)
    summary = dbarena_here("results", "--store", str(store), "--summary", "--json", "--variant", "large", env=env)
    groups = json.loads(summary.stdout)
    assert {(g["variant"], g["threads"], g["n"]) for g in groups} == {("large", 1, 2), ("large", 2, 2)}


def test_runs_of_other_parameters_are_never_pooled_or_compared(public_tmp, tmp_path):
    store = tmp_path / "r.db"
    env = cli_env(public_tmp)
    common = ("run", "--workload", "pgbench-select-only", "--threads", "1", "--store", str(store))
    for args in (("--scale", "1", "--duration", "2", "--label", "a"), ("--scale", "1", "--duration", "2", "--label", "a"),
                 ("--scale", "2", "--duration", "3", "--label", "a"), ("--scale", "2", "--duration", "3",
                                                                        "--label", "b")):
        done = dbarena(*common, *args, env=env, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads(dbarena_here("results", "--store", str(store), "--summary", "--json", "--label", "a",
                                      env=env).stdout)
    # Label a holds two configurations: two repeats of scale 1 / 2 s, one of scale 2 / 3 s.
    assert sorted(g["n"] for g in summary) == [1, 2]
    assert len({g["config_key"] for g in summary}) == 2
    compared = dbarena_here("compare", "a", "b", "--store", str(store), "--json", env=env)
    assert compared.returncode == 0, compared.stderr
    rows = json.loads(compared.stdout)
    matched = [r for r in rows if r["ratio"] is not None]
    refused = [r for r in rows if r["ratio"] is None]
    assert len(matched) == 1 and matched[0]["a_n"] == 1  # only a's scale-2 / 3 s point meets b's
    assert len(refused) == 1 and "params.scale" in refused[0]["differs"] and "duration_s" in refused[0]["differs"]
    assert refused[0]["verdict"] is None
    assert "not comparable: duration_s 2 vs 3; params.scale 1 vs 2" == refused[0]["reason"]
    # Wide enough that the reason's cell does not wrap: at a pipe's 100 columns, its line
    # broke between "not" and "comparable" where the measured figures made the others wider.
    table = dbarena_here("compare", "a", "b", "--store", str(store), env={**env, "COLUMNS": "250"})
    assert "not comparable" in table.stdout


CHECKSUMS_STUDY = """
schema = 1
name = "checksums"
[sweep]
levels = [1]
duration_s = 2
repeats = 1
[datasets]
scale = 1
[[workloads]]
workload = "pgbench-select-only"
[variants.off]
cluster.postgres = { data_checksums = false }
[variants.on]
description = "study B: data checksums on"
cluster.postgres = { data_checksums = true }
"""


def _run_study(text: str, tmp_path, env: dict, *flags: str):
    """The study file written, `dbarena run --study` on it, which must succeed: (its
    output, the store, the study file)."""
    store, study = tmp_path / "r.db", tmp_path / "study.toml"
    study.write_text(text)
    done = dbarena("run", "--study", str(study), "--store", str(store), *flags, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done, store, study


def test_a_variant_pair_of_cluster_options_gets_two_clusters_and_a_ratio(public_tmp, tmp_path):
    env = cli_env(public_tmp)
    done, store, _ = _run_study(CHECKSUMS_STUDY, tmp_path, env, "--label", "box")
    assert processes_mentioning(str(public_tmp)) == [] and list(public_tmp.iterdir()) == []
    db = sqlite3.connect(store)
    runs = db.execute("SELECT variant, target_facts, options FROM runs ORDER BY id").fetchall()
    # The server says what initdb made of each: checksums off, then on.
    assert [(v, json.loads(f)["data_checksums"], json.loads(o)["cluster"]) for v, f, o in runs] == [
        ("off", "off", {"data_checksums": "off"}), ("on", "on", {"data_checksums": "on"})]
    keys = [json.loads(c)["settings"] for (c,) in db.execute("SELECT config FROM points ORDER BY id")]
    assert keys == [{"cluster.data_checksums": "off"}, {"cluster.data_checksums": "on"}]
    compared = dbarena_here("compare", "off", "on", "--store", str(store), "--json", env=env)
    assert compared.returncode == 0, compared.stderr
    (row,) = json.loads(compared.stdout)
    assert row["by"] == "variant" and row["ratio"] > 0
    # Asked for as a setting, it is refused with the way to give it.
    refused = dbarena("run", "--workload", "pgbench-select-only", "--threads", "1", "--duration", "1",
                      "--pg-setting", "data_checksums=on", "--store", str(store), env=env)
    assert refused.returncode == 2 and "cluster = { data_checksums = ... }" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_a_mariadb_cluster_option_creates_its_data_directory_with_it():
    from dbarena import execute
    from dbarena.engines.mariadb import MariaDB

    with MariaDB().throwaway(settings={}, max_connections=151, bindir=None, keep=False, executor=execute.LOCAL,
                             cluster={"innodb_page_size": "8k"}) as target:
        assert target.facts()["key_variables"]["innodb_page_size"] == "8192"


def _own_instance(state: Path) -> tuple[Path, set[Path]]:
    """The throwaway instance of a run going on, from the record in its private state
    directory: its directory, and the shared memory segments its server maps now (and
    those recorded). What it may leave on the RAM disk, with nothing of another test's
    or another session's servers, which keep theirs in /dev/shm too."""
    (record,) = [json.loads(p.read_text()) for p in (state / "records").glob("instance-*.json")]
    return Path(record["top"]), server_segments(record["top"]) | {Path(s) for s in record.get("shm", ())}


def test_data_on_a_ram_disk_is_recorded_and_nothing_is_left_there(public_tmp, tmp_path):
    from test_run import _start, _wait_for_line

    env = cli_env(public_tmp, DBARENA_STATE_DIR=str(tmp_path / "state"))
    store, study = tmp_path / "r.db", tmp_path / "study.toml"
    study.write_text(CHECKSUMS_STUDY.replace('name = "checksums"', 'name = "ram"').split("[variants.off]")[0]
                     + '[engines.postgres]\ndata_dir = "tmpfs"\n')
    proc = _start(["run", "--study", str(study), "--store", str(store), "--label", "box", *LIGHT], env)
    seen = _wait_for_line(proc, "target: throwaway PostgreSQL")
    top, segments = _own_instance(tmp_path / "state")
    assert top.parent == Path("/dev/shm") and segments, (top, segments)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, ("".join(seen) + err)[-3000:]
    (options,) = [json.loads(o) for (o,) in sqlite3.connect(store).execute("SELECT options FROM runs")]
    assert options["data_dir"]["choice"] == "tmpfs" and options["data_dir"]["fs"] == "tmpfs"
    # The instance and its shared memory are gone.
    assert not top.exists() and left_in_ram(segments) == set() and processes_mentioning(str(top)) == []
    # A dataset larger than the RAM disk is refused before anything starts, in one line.
    study.write_text(study.read_text().replace("scale = 1", "scale = 10000000"))
    refused = dbarena("run", "--study", str(study), "--store", str(tmp_path / "other.db"), env=env)
    assert refused.returncode == 2 and "the RAM disk has" in refused.stderr and len(refused.stderr.splitlines()) == 1
    assert not (tmp_path / "other.db").exists() or sqlite3.connect(tmp_path / "other.db").execute(
        "SELECT COUNT(*) FROM runs").fetchone() == (0,)


RESTORE_STUDY = """
schema = 1
name = "restore"
[sweep]
levels = [1, 2]
duration_s = 2
restore = "point"
[datasets]
scale = 1
[[workloads]]
workload = "pgbench-tpcb"
"""


def test_restore_puts_the_prepared_dataset_back_before_each_point(public_tmp, tmp_path):
    import re
    import subprocess

    env = cli_env(public_tmp, DBARENA_STATE_DIR=str(tmp_path / "state"))
    done, store, _ = _run_study(RESTORE_STUDY, tmp_path, env, "--keep", *LIGHT)
    assert "saved the prepared data directory in" in done.stderr
    assert "restored the prepared data directory in" in done.stderr
    kept = re.search(r"connect with PGPASSFILE=(\S+) psql '([^']+)'", done.stderr)
    assert kept, done.stderr[-2000:]
    try:
        # pgbench empties pgbench_history before each run, but not the balances: they hold
        # the deltas of every transaction since the dataset was made. Equal sums: the
        # second point started from the prepared data, not from the first point's.
        out = subprocess.run(["psql", kept[2], "-Atc", "SELECT sum(abalance) = (SELECT sum(delta) FROM "
                              "pgbench_history), (SELECT count(*) FROM pgbench_history) FROM pgbench_accounts"],
                             env={**env, "PGPASSFILE": kept[1]}, capture_output=True, text=True, check=True,
                             timeout=60).stdout.strip()
    finally:
        cleaned = dbarena("cleanup", env=env)
    same, history = out.split("|")
    assert same == "t" and int(history) > 0, out
    assert cleaned.returncode == 0 and "stopped and removed the postgres instance" in cleaned.stderr + cleaned.stdout
    db = sqlite3.connect(store)
    restored = [json.loads(d).get("restore_s") for (d,) in db.execute("SELECT details FROM points ORDER BY id")]
    assert restored[0] is None and restored[1] > 0  # stored apart, with the point it preceded
    assert processes_mentioning(str(public_tmp)) == [] and list(public_tmp.iterdir()) == []


MYSQL_RESTORE_STUDY = """
schema = 1
name = "restore-mysql"
[engines.mysql]
[sweep]
levels = [1, 2]
duration_s = 2
restore = "point"
[datasets]
warehouses = 1
[[workloads]]
workload = "tpcc-like"
"""


def test_restore_puts_a_mariadb_dataset_back_before_each_point(public_tmp, tmp_path):
    import re
    import subprocess

    env = cli_env(public_tmp, DBARENA_STATE_DIR=str(tmp_path / "state"))
    done, store, _ = _run_study(MYSQL_RESTORE_STUDY, tmp_path, env, "--keep")
    assert "restored the prepared data directory in" in done.stderr
    kept = re.search(r"connect with (mysql --defaults-extra-file=\S+ -h \S+ -P \d+ -u \S+ \S+);", done.stderr)
    assert kept, done.stderr[-2000:]
    try:
        # The dataset has 3000 orders per district; every New-Order adds one. After the
        # second point, the orders beyond those are the second point's alone: the first
        # point's went with the restore.
        out = subprocess.run([*kept[1].split(), "-N", "-e", "SELECT COUNT(*) FROM orders WHERE o_id > 3000"],
                             env=env, capture_output=True, text=True, check=True, timeout=60).stdout.strip()
    finally:
        cleaned = dbarena("cleanup", env=env)
    assert cleaned.returncode == 0 and "stopped and removed the mysql instance" in cleaned.stderr + cleaned.stdout
    db = sqlite3.connect(store)
    details = [json.loads(d) for (d,) in db.execute("SELECT details FROM points ORDER BY id")]
    first, second = (d["new_orders_committed"] for d in details)
    assert first > 0 and int(out) == second, (out, first, second)
    assert details[0].get("restore_s") is None and details[1]["restore_s"] > 0
    assert processes_mentioning(str(public_tmp)) == [] and list(public_tmp.iterdir()) == []


CPUS_STUDY = """
schema = 1
name = "cores"
[sweep]
levels = [1]
duration_s = 2
[datasets]
scale = 1
[[workloads]]
workload = "pgbench-select-only"
[cpus]
server = [1, 2]
"""


def test_a_cpus_axis_pins_each_variants_server_and_reports_per_core(public_tmp, tmp_path):
    import os

    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs 2 CPUs")
    env = cli_env(public_tmp)
    done, store, _ = _run_study(CPUS_STUDY, tmp_path, env, "--label", "box")
    assert "(variant 1core) on CPUs 0, load generator on 1" in done.stderr
    db = sqlite3.connect(store)
    placed = {v: json.loads(o)["cpus"] for v, o in db.execute("SELECT variant, options FROM runs")}
    assert (placed["1core"]["server"], placed["1core"]["load_generator"], placed["1core"]["server_cores"]) == \
        ("0", "1", 1)
    assert placed["2cores"]["server"] == "0-1" and "no CPU left" in placed["2cores"]["note"]
    # Every point's configuration holds the CPU sets.
    keys = {json.loads(c)["variant"]: json.loads(c)["settings"] for (c,) in db.execute("SELECT config FROM points")}
    assert keys["1core"] == {"cpus.server": "0", "cpus.load_generator": "1"}
    report = tmp_path / "r.json"
    assert dbarena_here("report", "--store", str(store), "-o", str(report), env=env).returncode == 0
    rows = {r["label"]: r for r in json.loads(report.read_text())["rows"]}
    # Per core: of the cores the variant's server had, not of the machine.
    one, two = rows["box [1core]"], rows["box [2cores]"]
    assert one["physical_cores"] == 1 and one["tps_per_core"] == pytest.approx(one["tps"])
    assert two["physical_cores"] == 2 and two["tps_per_core"] == pytest.approx(two["tps"] / 2)


KERNEL_SMT_STUDY = """
schema = 1
name = "smt"
[sweep]
levels = [1]
duration_s = 1
[datasets]
scale = 1
[[workloads]]
workload = "pgbench-select-only"
[cpus]
server = [1]
smt = ["off", "on"]
"""


def test_an_smt_axis_on_this_vm_is_refused_in_one_line(public_tmp, tmp_path):
    from dbarena.host import smt

    if smt.read() != "notsupported":
        pytest.skip(f"this machine's SMT switch says {smt.read()}, not notsupported")
    env = cli_env(public_tmp)
    study = tmp_path / "smt.toml"
    study.write_text(KERNEL_SMT_STUDY)
    refused = dbarena("run", "--study", str(study), "--store", str(tmp_path / "r.db"), env=env)
    assert refused.returncode == 2 and error_line(refused.stderr), refused.stderr
    assert "[cpus] smt: this machine cannot switch SMT (the kernel says notsupported" in refused.stderr
    assert processes_mentioning(str(public_tmp)) == [] and list(public_tmp.iterdir()) == []


@pytest.mark.parametrize("ctrl_c", [False, True], ids=["to-the-end", "ctrl-c"])
def test_a_kernel_smt_axis_switches_before_each_modes_servers_and_puts_it_back(public_tmp, tmp_path, monkeypatch,
                                                                               ctrl_c):
    """In process, with a file standing in for the kernel's switch (this VM has none):
    what dbarena writes there and when, around real servers and points."""
    import tempfile

    from dbarena import study
    from dbarena.run import session
    from dbarena.host import smt
    from dbarena.lifecycle import state
    from dbarena.errors import ExitStatus
    from dbarena.store.database import Store

    import os

    if os.geteuid() != 0:
        pytest.skip("the switch needs root")
    control = tmp_path / "control"
    control.write_text("on\n")
    monkeypatch.setattr(smt, "CONTROL", control)
    monkeypatch.setattr(tempfile, "tempdir", str(public_tmp))
    monkeypatch.setenv(state.ENV, str(tmp_path / "state"))

    class Seen(session.SilentReporter):
        stages: list[str] = []
        finished: list[tuple[str, str]] = []

        def stage(self, text: str) -> None:
            self.stages.append(text)

        def point_finished(self, index, result) -> None:
            self.finished.append((result.spec.variant, control.read_text().strip()))
            if ctrl_c:
                raise KeyboardInterrupt  # what SIGINT raises in dbarena's main thread

    seen = Seen()
    with Store(tmp_path / "r.db") as db:
        outcome = session.run(study.parse(KERNEL_SMT_STUDY, "smt.toml"), store=db, reporter=seen)
        options = [db.run(r).options["cpus"] for r in outcome.run_ids]
    assert control.read_text().strip() == "on" and state.records() == []  # as the machine had it
    assert processes_mentioning(str(public_tmp)) == [] and list(public_tmp.iterdir()) == []
    if ctrl_c:
        assert outcome.exit_status == ExitStatus.INTERRUPTED and seen.finished == [("1core_smt-off", "off")]
        return
    assert outcome.exit_status == ExitStatus.OK
    # Each mode's point ran with the switch in that mode, the "off" variant's first.
    assert seen.finished == [("1core_smt-off", "off"), ("1core_smt-on", "on")]
    switched = [s for s in seen.stages if s.startswith("SMT switched")]
    assert [s.split(" (")[0] for s in switched] == ["SMT switched from on to off", "SMT switched from off to on"]
    # The server of each mode started after its switch: its target line follows it.
    targets = [i for i, s in enumerate(seen.stages) if s.startswith("target:")]
    assert seen.stages.index(switched[0]) < targets[0] < seen.stages.index(switched[1]) < targets[1]
    assert [(o["smt"], o["smt_by"]) for o in options] == [("off", f"kernel ({control})"),
                                                           ("on", f"kernel ({control})")]
    assert seen.stages[-1] == f"SMT is on again, as before the study ({control})"


CTRL_C_STUDY = """
schema = 1
name = "ctrl-c"
[engines.postgres]
data_dir = "tmpfs"
[sweep]
levels = [1, 2]
duration_s = 3
restore = "point"
[datasets]
scale = 1
[[workloads]]
workload = "pgbench-tpcb"
[cpus]
server = [1]
"""


def test_ctrl_c_in_a_study_on_a_ram_disk_with_restore_and_pinned_cpus_leaves_nothing(public_tmp, tmp_path):
    """Ctrl-C while a point runs on a server pinned to a core, with its data and its
    saved copy on /dev/shm: the finished point is kept, the run marked interrupted,
    and nothing is left running or in RAM."""
    import os
    import signal
    import time
    from pathlib import Path

    from test_run import _start, _wait_for_line

    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs 2 CPUs")
    study, store = tmp_path / "c.toml", tmp_path / "r.db"
    study.write_text(CTRL_C_STUDY)
    proc = _start(["run", "--study", str(study), "--store", str(store), *LIGHT],
                  cli_env(public_tmp, DBARENA_STATE_DIR=str(tmp_path / "state")))
    seen = _wait_for_line(proc, "restored the prepared data directory in")  # before the second point
    time.sleep(1.5)  # into it
    top, segments = _own_instance(tmp_path / "state")
    assert top.parent == Path("/dev/shm") and segments, (top, segments)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, "".join(seen) + err
    assert "finished point(s) kept" in err and "Traceback" not in err
    assert not top.exists() and left_in_ram(segments) == set() and processes_mentioning(str(top)) == []
    assert not list((tmp_path / "state" / "records").glob("*.json"))
    db = sqlite3.connect(store)
    assert db.execute("SELECT status FROM runs").fetchall() == [("interrupted",)]
    assert [s for (s,) in db.execute("SELECT status FROM points")] == ["ok"]


def test_study_check_names_a_variants_unknown_postgres_setting(tmp_path):
    """Its settings are checked against the server's own list (postgres
    --describe-config of the installed binaries)."""
    path = tmp_path / "variant.toml"
    path.write_text('schema = 1\nname = "bad"\n[variants.x]\npostgres = { no_such_setting = "1" }\n')
    done = dbarena_here("study", "check", str(path))
    assert done.returncode == 2 and done.stdout == "", (done.returncode, done.stdout, done.stderr)
    line = error_line(done.stderr)
    assert done.stderr == line and f"{path}: variants.x.postgres: " in line and "no_such_setting" in line
