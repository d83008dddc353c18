"""Study files: the bundled studies expand to the protocols they describe, --quick and
flags layer over them in order, and a bad file is one clear error naming the file and
the key (in the library and through the real CLI)."""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from dbarena import study, workloads
from dbarena.run import dataset_lifecycle, plan, preflight, studycheck
from dbarena.engines.postgres import PostgresEngine
from dbarena.interfaces import Client
from dbarena.model import Connection
from dbarena.study import Overrides, StudyError
from dbarena.study.apply import _size_bytes
from dbarena.errors import UsageError

import inprocess

BUNDLED = ("seed-a", "seed-b", "seed-c", "seed-d", "seed-e", "capacity-e")
TIMED = lambda name: workloads.WORKLOADS[name].tool.timed  # noqa: E731
STUDY_A_LEVELS_AT_128 = [1, 2, 25, 51, 76, 102, 126]
PG_WORKLOADS_A = ["pgbench-tpcb", "pgbench-select-only", "pgbench-simple-update",
                  "sysbench-read-only", "sysbench-write-only", "sysbench-read-write"]
MY_WORKLOADS_A = ["sysbench-read-only", "sysbench-write-only", "sysbench-read-write", "mysqlslap"]
PG_CONN = Connection(protocol="postgresql", host="127.0.0.1", port=5432, user="bench", dbname="db",
                     url="postgresql://bench@127.0.0.1:5432/db")
MY_CONN = Connection(protocol="mysql", host="127.0.0.1", port=3306, user="bench", dbname="db",
                     url="mysql://bench@127.0.0.1:3306/db")


def expand(s: study.Study, hardware_threads: int | None = 128) -> dict[str, plan.EnginePlan]:
    return {p.engine.name: p for p in plan.expand(s, lambda engine: hardware_threads)}


def by_workload(engine_plan: plan.EnginePlan) -> dict[str, list]:
    out: dict[str, list] = {}
    for p in engine_plan.points:
        out.setdefault(p.workload, []).append(p)
    return out


def _pg_available() -> bool:
    try:
        return PostgresEngine().available()
    except Exception:
        return False


needs_postgres = pytest.mark.skipif(not _pg_available(), reason="needs the PostgreSQL server binaries")


# ------------------------------------------------------------------ bundled studies


def test_the_bundled_studies_are_there():
    assert set(BUNDLED) <= set(study.bundled())


@pytest.mark.parametrize("name", sorted(study.bundled()))
@pytest.mark.parametrize("threads", [1, 2, 128])
def test_every_bundled_study_parses_and_expands(name, threads):
    s = study.load(name)
    assert s.name == name and s.source == f"bundled study {name}" and s.title
    assert s.text == study.bundled()[name] and len(s.sha256) == 64
    assert study.parse(s.text, "x").workloads == s.workloads
    plans = expand(s, threads)
    assert set(plans) == {e.name for e in s.engines}
    for engine_plan in plans.values():
        assert engine_plan.points, engine_plan.engine.name
        for p in engine_plan.points:
            assert p.threads >= 1 and p.clients >= p.threads and p.duration_s >= 1
            assert {k for k, _ in p.params} == {q.name for q in workloads.WORKLOADS[p.workload].tool.params}
        # Every dataset a point needs is prepared before it runs (pure: no server).
        prepared: set[tuple] = set()
        for spec, (before, after) in zip(engine_plan.points, dataset_lifecycle.dataset_steps(engine_plan.points)):
            for action, step in before:
                if action in ("prepare", "cleanup"):  # snapshot / restore keep what is prepared
                    (prepared.add if action == "prepare" else prepared.discard)(dataset_lifecycle.dataset_key(step))
            assert dataset_lifecycle.dataset_key(spec) in prepared, spec
            for action, step in after:
                prepared.discard(dataset_lifecycle.dataset_key(step))


def test_study_a_levels_clients_and_durations_at_128_threads():
    s = study.load("seed-a")
    plans = expand(s, 128)
    assert set(plans) == {"postgres", "mysql"}
    assert list(by_workload(plans["postgres"])) == PG_WORKLOADS_A
    assert list(by_workload(plans["mysql"])) == MY_WORKLOADS_A
    pgbench = workloads.TOOLS["pgbench"]
    for engine, engine_plan in plans.items():
        assert engine_plan.levels == tuple(STUDY_A_LEVELS_AT_128)
        assert dict(engine_plan.engine.settings) == {"max_connections": "300"}
        for name, points in by_workload(engine_plan).items():
            assert [p.threads for p in points] == STUDY_A_LEVELS_AT_128, (engine, name)
            assert {(p.engine, p.repeat, p.variant, p.warmup_s) for p in points} == {(engine, 0, "", 0)}
            if TIMED(name):
                assert {p.duration_s for p in points} == {600}, name
            if name.startswith("pgbench"):
                assert [p.clients for p in points] == [2 * t for t in STUDY_A_LEVELS_AT_128]
                assert {p.params for p in points} == {(("scale", 10000),)}
                for p in points:
                    argv = pgbench.point_argv(Client("pgbench", PG_CONN), p, workloads.WORKLOADS[name].mode_args)
                    t = p.threads
                    assert argv[1:7] == ["-j", str(t), "-c", str(2 * t), "-T", "600"]
            else:
                assert [p.clients for p in points] == [p.threads for p in points]
            if name.startswith("sysbench"):
                # prepare / run / cleanup around each test
                assert {p.datasets for p in points} == {"point"}
    slap = by_workload(plans["mysql"])["mysqlslap"]
    assert {p.params for p in slap} == {(("iterations", 1), ("queries", 100000))}
    assert not workloads.WORKLOADS["mysqlslap"].tool.timed


def test_study_a_pgbench_point_argv_runs_two_clients_per_thread():
    (p,) = [p for p in expand(study.load("seed-a"), 128)["postgres"].points
            if p.workload == "pgbench-select-only" and p.threads == 51]
    argv = workloads.TOOLS["pgbench"].point_argv(Client("pgbench", PG_CONN), p, ["-S"])
    assert argv == ["pgbench", "-j", "51", "-c", "102", "-T", "600", "-P", "1", "-S", PG_CONN.url]


def test_study_d():
    s = study.load("seed-d")
    (engine,) = s.engines
    assert engine.name == "mysql" and engine.target is None
    assert dict(engine.settings) == {"sync_binlog": "1000", "innodb_flush_log_at_trx_commit": "2",
                                     "innodb_flush_method": "O_DIRECT", "innodb_buffer_pool_size": "6G"}
    plans = expand(s, 4)  # numbers only: the machine does not matter
    assert set(plans) == {"mysql"}
    points = by_workload(plans["mysql"])
    assert set(points) == {"sysbench-read-write", "sysbench-read-only", "sysbench-write-only"}
    sysbench = workloads.TOOLS["sysbench"]
    for name, ps in points.items():
        assert [p.threads for p in ps] == [2, 4, 8, 16, 32, 64, 128]
        for p in ps:
            assert dict(p.params) == {"tables": 10, "table_size": 10_000_000}
            assert p.duration_s == 600 and p.datasets == "run"
            options = dict(p.options)
            assert options["percentile"] == "99" and options["report-interval"] == "20"
            assert ("skip-trx" in options) == (name == "sysbench-read-only")
            argv = sysbench.point_argv(Client("sysbench", MY_CONN, "/private/sb.cnf"), p,
                                       workloads.WORKLOADS[name].mode_args)
            assert {"--percentile=99", "--report-interval=20", "--tables=10", "--table-size=10000000"} <= set(argv)
            assert "--percentile=95" not in argv and "--report-interval=1" not in argv
            assert ("--skip-trx=on" in argv) == (name == "sysbench-read-only")


def test_study_e():
    s = study.load("seed-e")
    assert [e.name for e in s.engines] == ["mysql"] and s.engines[0].settings == ()
    points = expand(s, 2)["mysql"].points
    assert {p.workload for p in points} == {"sysbench-read-write"}
    assert workloads.WORKLOADS["sysbench-read-write"].mode_args == ("oltp_read_write",)
    assert [p.threads for p in points] == [2, 4, 8, 16, 24, 32, 48, 64, 96, 128]
    assert {p.duration_s for p in points} == {300}
    assert {p.params for p in points} == {(("table_size", 1_000_000), ("tables", 10))}


def test_capacity_e():
    from dbarena.stats.capacity import Objective

    s = study.load("capacity-e")
    assert [e.name for e in s.engines] == ["postgres"] and s.engines[0].settings == ()
    assert s.slo == Objective("p99", 20.0, errors=0.001, precision=0.02, max_rates=12)
    assert (s.price_per_hour, s.currency, s.sessions, s.latency_sampling) == (0.159, "USD", 2, 1.0)
    points = expand(s, 2)["postgres"].points
    assert [(p.workload, p.threads, p.clients) for p in points] == [
        (w, t, 2 * t) for w in ("pgbench-tpcb", "pgbench-select-only") for t in (4, 16, 64)]
    assert {p.duration_s for p in points} == {60} and {p.params for p in points} == {(("scale", 100),)}
    assert not any("rate" in dict(p.options) for p in points)  # the search sets it
    # It asks for what --slo needs and nothing else: applied without flags, nothing changes.
    assert study.apply(s, Overrides()).changes == ()
    # A managed service through --target: the objective stays.
    target = study.apply(s, Overrides(targets={"postgres": "postgresql://bench@db.example:5432/bench"}))
    assert target.slo == s.slo and target.engines[0].target is not None


@needs_postgres
def test_study_check_capacity_e_through_the_cli():
    done = cli("study", "check", "capacity-e")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("study capacity-e: Capacity E: ")
    assert "6 points a session, 12 in 2 sessions, estimated machine time ~" in done.stdout
    assert ("then a search for each point's capacity at p99 <= 20 ms: about 8 offered rates a point (at most 12), "
            "about 96 points and ~96 min of machine time more (at most 144 points, ~2.4 h)") in lines
    summary = json.loads(cli("study", "check", "capacity-e", "--json").stdout)
    assert summary["slo"]["objective"] == "p99=20ms" and summary["slo"]["points"] == 96
    assert summary["in_all"]["points"] == 12


# ------------------------------------------------------------------ --quick and flags


def _shape(s: study.Study, threads: int = 128, variants: set[str] | None = None) -> dict:
    # The report interval is not the shape: --quick cuts it to keep a series in its short points.
    return {e: [(p.workload, p.threads, p.clients, p.datasets,
                 tuple(o for o in p.options if o[0] != "report-interval"), p.variant) for p in engine_plan.points
                if variants is None or p.variant in variants]
            for e, engine_plan in expand(s, threads).items()}


@pytest.mark.parametrize("name", BUNDLED)
def test_quick_keeps_the_shape_and_shrinks_time_and_data(name):
    full = study.load(name)
    quick = study.apply(full, Overrides(quick=True))
    assert quick.quick and not full.quick
    assert [w.levels for w in quick.workloads] == [w.levels for w in full.workloads]
    assert [(w.workload, w.engines) for w in quick.workloads] == [(w.workload, w.engines) for w in full.workloads]
    # The engines are the same, but memory settings sized for a big server are capped
    # (and listed among the changes).
    assert [(e.name, e.flavour, e.target) for e in quick.engines] == [(e.name, e.flavour, e.target)
                                                                       for e in full.engines]
    for fe, qe in zip(full.engines, quick.engines):
        for (k, v), (_, qv) in zip(fe.settings, qe.settings):
            if v != qv:
                assert k in study.QUICK_MEMORY_CAPS and qv == study.QUICK_MEMORY_CAPS[k]
                assert f"{fe.name} {k}: {v} -> {qv} (--quick)" in quick.changes
    # [cpus] variants of more cores than this machine has are left out, and said so.
    kept = {v.name for v in quick.variants}
    for v in full.variants:
        if v.name not in kept:
            assert v.cores and any(c.startswith(f"variant {v.name}: left out") for c in quick.changes)
    assert _shape(quick) == _shape(full, variants=kept or None)
    for w in quick.workloads:
        params = dict(w.params)
        if TIMED(w.workload):
            assert w.duration_s == study.QUICK_DURATION_S == 5
        if "scale" in params:
            assert params["scale"] == 1
        if "table_size" in params:
            assert params["table_size"] <= 1000
        if "queries" in params:
            assert params["queries"] <= 1000
    assert quick.changes and all(c.endswith("(--quick)") for c in quick.changes)
    timed = [w.workload for w in full.workloads if TIMED(w.workload) and w.duration_s != 5]
    for workload in timed:
        assert any(c.startswith(f"{workload} duration_s: ") and "-> 5 (--quick)" in c for c in quick.changes)


def test_flags_override_the_file_and_quick_and_are_listed():
    s = study.apply(study.load("seed-a"), Overrides(duration_s=7, quick=True))
    for w in s.workloads:
        if TIMED(w.workload):
            assert w.duration_s == 7, w.workload
            assert f"{w.workload} duration_s: 600 -> 5 (--quick)" in s.changes
            assert f"{w.workload} duration_s: 5 -> 7 (--duration)" in s.changes
        else:
            # mysqlslap runs a number of queries: --duration does not apply to it.
            assert not any(c.startswith(f"{w.workload} duration_s") and "--duration" in c for c in s.changes)
    assert dict(next(w for w in s.workloads if w.workload == "pgbench-tpcb").params) == {"scale": 1}

    e = study.apply(study.load("seed-e"), Overrides(duration_s=7, levels=(3, 1), params={"table_size": 50}))
    (w,) = e.workloads
    assert (w.duration_s, w.levels, dict(w.params)) == (7, (3, 1), {"tables": 10, "table_size": 50})
    assert set(e.changes) == {"sysbench-read-write duration_s: 300 -> 7 (--duration)",
                              "sysbench-read-write levels: 2,4,8,16,24,32,48,64,96,128 -> 3,1 (--threads)",
                              "sysbench-read-write table_size: 1000000 -> 50 (--table-size)"}
    assert [p.threads for p in expand(e)["mysql"].points] == [1, 3]
    # Flags that change nothing are not listed.
    assert study.apply(study.load("seed-e"), Overrides(duration_s=300)).changes == ()


def test_quick_leaves_what_is_already_small():
    text = study.bundled()["seed-e"].replace("duration_s = 300", "duration_s = 3").replace(
        "table_size = 1000000", "table_size = 100")
    s = study.apply(study.parse(text, "small.toml"), Overrides(quick=True))
    (w,) = s.workloads
    assert w.duration_s == 3 and dict(w.params)["table_size"] == 100
    assert s.changes == ()


# ------------------------------------------------------------------ bad files

HEAD = 'schema = 1\nname = "bad"\n'
BAD = {
    "unknown-top-level-key": (HEAD + "colour = 1\n", ["colour", "unknown key"]),
    "unknown-workload-key": (HEAD + '[[workloads]]\nworkload = "pgbench-tpcb"\ncolour = 2\n',
                             ["workloads[0].colour", "unknown key"]),
    "wrong-type": (HEAD + '[sweep]\nduration_s = "ten"\n', ["sweep.duration_s", "whole number", "'ten'"]),
    "empty-levels": (HEAD + "[sweep]\nlevels = []\n", ["sweep.levels", "empty"]),
    "bad-percentage": (HEAD + '[sweep]\nlevels = [1, "20"]\n', ["sweep.levels[1]", "'20'", "percentage"]),
    "unknown-workload": (HEAD + '[[workloads]]\nworkload = "pgbench-tcpb"\n',
                         ["workloads[0].workload", "unknown workload 'pgbench-tcpb'"]),
    "workload-on-wrong-engine": (HEAD + '[engines.postgres]\n[engines.mysql]\n[[workloads]]\n'
                                 'workload = "pgbench-tpcb"\nengines = ["mysql"]\n',
                                 ["workloads[0].engines", "pgbench-tpcb cannot run on mysql"]),
    "workload-no-study-engine-runs": (HEAD + '[[workloads]]\nworkload = "mysqlslap"\n',
                                      ["workloads[0].workload", "mysqlslap runs on mysql"]),
    "unknown-pgbench-option": (HEAD + '[[workloads]]\nworkload = "pgbench-tpcb"\noptions = { colour = "red" }\n',
                               ["workloads[0].options", "unknown pgbench option 'colour'"]),
    "reserved-sysbench-option": (HEAD + '[engines.mysql]\n[[workloads]]\nworkload = "sysbench-read-only"\n'
                                 "options = { threads = 4 }\n",
                                 ["workloads[0].options", "'threads'", "set by dbarena"]),
    "price-both": (HEAD + "[price]\nper_hour = 1.5\nper_month = 400\n", ["price", "either per_hour or per_month"]),
    "invalid-toml": (HEAD + "[sweep]\nduration_s = = 3\n", ["not valid TOML", "line 4"]),
    "precision-not-a-percentage": (HEAD + "[sweep]\nprecision = 0.02\n", ["sweep.precision", "percentage"]),
    "precision-too-wide": (HEAD + '[sweep]\nprecision = "80%"\n', ["sweep.precision", "'80%'", "at most 50%"]),
    "precision-and-repeats": (HEAD + '[sweep]\nprecision = "2%"\nrepeats = 3\n',
                              ["sweep.precision", "either repeats", "not both"]),
    "budget-without-precision": (HEAD + '[sweep]\nbudget = "2h"\n', ["sweep.budget", "give sweep.precision"]),
    "bad-budget": (HEAD + '[sweep]\nprecision = "2%"\nbudget = "2 fortnights"\n', ["sweep.budget", "90m"]),
    "max-repeats-below-three": (HEAD + '[sweep]\nprecision = "2%"\nmax_repeats = 2\n',
                                ["sweep.max_repeats", "at least 3"]),
    "unknown-cluster-option": (HEAD + '[engines.postgres]\ncluster = { checksums = true }\n',
                               ["engines.postgres.cluster", "unknown PostgreSQL cluster option 'checksums'"]),
    "bad-wal-segsize": (HEAD + '[variants.big]\ncluster.postgres = { wal_segsize = 48 }\n',
                        ["variants.big.cluster.postgres", "power of 2", "'48'"]),
    "cluster-of-a-target": (HEAD + '[engines.postgres]\ntarget = "postgresql://u@db:5432/x"\n'
                                   'cluster = { data_checksums = true }\n',
                            ["engines.postgres.cluster", "throwaway instance only"]),
    "mysql-cluster-option": (HEAD + '[engines.mysql]\n[variants.small]\ncluster.mysql = { innodb_page_size = "5k" }\n',
                             ["variants.small.cluster.mysql", "innodb_page_size", "'5k'"]),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_study_file_names_the_file_and_the_key(case, tmp_path):
    text, expected = BAD[case]
    path = tmp_path / f"{case}.toml"
    path.write_text(text)
    with pytest.raises(StudyError) as caught:
        study.load(str(path))
    message = str(caught.value)
    assert message.startswith(f"{path}: ")
    for fragment in expected:
        assert fragment in message, (fragment, message)
    assert caught.value.exit_status == 2


def test_the_good_variants_of_the_bad_files_are_accepted(tmp_path):
    # The bad files differ from good ones only in the key they name.
    good = [
        HEAD + '[[workloads]]\nworkload = "pgbench-tpcb"\nscale = 2\n',
        HEAD + "[sweep]\nduration_s = 10\nlevels = [1, \"20%\"]\n",
        HEAD + '[engines.postgres]\n[engines.mysql]\n[[workloads]]\nworkload = "pgbench-tpcb"\n'
               '[[workloads]]\nworkload = "mysqlslap"\n',
        HEAD + '[[workloads]]\nworkload = "pgbench-tpcb"\noptions = { protocol = "prepared" }\n',
        HEAD + '[engines.mysql]\n[[workloads]]\nworkload = "sysbench-read-only"\noptions = { skip-trx = true }\n',
        HEAD + "[price]\nper_month = 730\n",
    ]
    for text in good:
        study.parse(text, "good.toml")
    s = study.parse(good[-1], "good.toml")
    assert s.price_per_hour == pytest.approx(1.0) and s.currency == "USD"


def cli(*args: str, cwd=None) -> subprocess.CompletedProcess:
    """The command, in process (tests/inprocess.py): what it prints and its exit status."""
    return inprocess.dbarena(*args, cwd=cwd)


def _one_error_line(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and done.stderr.endswith("\n"), done.stderr
    assert lines[0].startswith("dbarena: error: ")
    assert "Traceback" not in done.stderr and done.stdout == ""
    return lines[0]


@pytest.mark.parametrize("case", sorted(BAD))
def test_study_check_of_a_bad_file_is_one_error_line_and_exit_2(case, tmp_path):
    text, expected = BAD[case]
    path = tmp_path / f"{case}.toml"
    path.write_text(text)
    line = _one_error_line(cli("study", "check", str(path)))
    assert f"{path}: " in line
    for fragment in expected:
        assert fragment in line, (fragment, line)


def test_study_check_of_a_missing_file_is_a_usage_error(tmp_path):
    line = _one_error_line(cli("study", "check", str(tmp_path / "nope.toml")))
    assert "nope.toml" in line and "seed-a" in line  # and the bundled ones it could have meant


# ------------------------------------------------------------------ the study commands


def test_study_list_names_the_bundled_studies():
    done = cli("study", "list")
    assert done.returncode == 0, done.stderr
    listed = [line.split()[0] for line in done.stdout.splitlines() if line.strip()]
    assert set(BUNDLED) <= set(listed)
    for name in BUNDLED:
        (line,) = [l for l in done.stdout.splitlines() if l.split()[0] == name]
        assert study.load(name).title in line


def test_study_show_prints_a_file_the_parser_accepts(tmp_path):
    done = cli("study", "show", "seed-a")
    assert done.returncode == 0, done.stderr
    shown = study.parse(done.stdout, "shown.toml")
    original = study.load("seed-a")
    assert (shown.name, shown.workloads, shown.engines) == (original.name, original.workloads, original.engines)
    # Saved and edited, it is a study file like any other.
    path = tmp_path / "mine.toml"
    path.write_text(done.stdout.replace("duration_s = 600", "duration_s = 30"))
    assert {w.duration_s for w in study.load(str(path)).workloads} == {30}


def assert_bounded_by_queries(line: str) -> None:
    """mysqlslap runs a number of queries: its line may give an estimate ("about N s
    each"), never a fixed number of seconds per point as the timed tools' lines do."""
    assert "bounded by queries" in line, line
    assert not re.search(r"(?<!about )\b\d+(\.\d+)? (s|min|h) each", line), line


def test_study_check_render_says_mysqlslap_is_bounded_by_queries():
    s = study.apply(study.load("seed-a"), Overrides(quick=True))
    summary = studycheck.summarise(s, list(expand(s, 8).values()))
    text = studycheck.render(summary)
    (slap,) = [l for l in text.splitlines() if l.strip().startswith("mysqlslap:")]
    assert_bounded_by_queries(slap)
    for line in text.splitlines():
        if line.strip().startswith(("pgbench-", "sysbench-")):
            assert "; 5 s each;" in line, line
    n = sum(len(p.points) for p in expand(s, 8).values())
    assert summary["points"] == n and f"{n} points, estimated machine time ~" in text


@needs_postgres
def test_study_check_seed_a_quick_through_the_cli():
    done = cli("study", "check", "seed-a", "--quick")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    expected = preflight.expand(study.apply(study.load("seed-a"), Overrides(quick=True)))
    n = sum(len(p.points) for p in expected)
    assert re.search(rf"^{n} points, estimated machine time ~\d+(\.\d+)? (s|min|h)\b", out, re.M), out
    assert "--quick" in out and "changed: pgbench-tpcb scale: 10000 -> 1 (--quick)" in out
    (slap,) = [l for l in out.splitlines() if l.strip().startswith("mysqlslap:")]
    assert_bounded_by_queries(slap)
    as_json = cli("study", "check", "seed-a", "--quick", "--json")
    assert as_json.returncode == 0, as_json.stderr
    summary = json.loads(as_json.stdout)
    assert summary["points"] == n and summary["quick"] is True and summary["estimated_s"] > 0
    assert [e["engine"] for e in summary["engines"]] == ["postgres", "mysql"]


# ------------------------------------------------------------------ adaptive repeats and --resume


def test_precision_keys_and_flags():
    s = study.parse(HEAD + '[sweep]\nprecision = "2.5%"\nmax_repeats = 6\nbudget = "90m"\n', "p.toml")
    assert (s.precision, s.max_repeats, s.budget_s) == (0.025, 6, 5400)
    # The plan starts with the 3 rounds every point runs.
    assert {p.repeat for p in expand(s)["postgres"].points} == {0, 1, 2}
    # --repeat replaces the study's precision; --precision replaces its repeats.
    fixed = study.apply(s, Overrides(repeats=4))
    assert (fixed.precision, fixed.budget_s, fixed.repeats) == (None, None, 4)
    assert study.apply(study.load("seed-a"), Overrides(precision=0.05)).repeats == 1
    with pytest.raises(UsageError, match="not both"):
        study.apply(s, Overrides(repeats=3, precision=0.02))
    with pytest.raises(UsageError, match="give --precision or --slo too"):
        study.apply(study.load("seed-a"), Overrides(budget_s=60))
    assert study.parse_duration("2h") == 7200 and study.parse_duration("45") == 45
    assert study.parse_precision(" 0.5% ") == 0.005


def test_a_stored_study_rebuilds_to_the_same_plan_and_changes_are_named():
    flags = Overrides(levels=(1, 2), duration_s=30, precision=0.02, quick=True)
    original = study.apply(study.load("seed-a"), flags)
    stored_flags = json.loads(json.dumps(dict(original.flags)))  # as the store keeps them
    rebuilt = study.rebuild(original.text, original.source, stored_flags)
    assert study.differences(original, rebuilt) == []
    assert expand(rebuilt) == expand(original)
    other = study.apply(study.load("seed-a"), Overrides(levels=(1, 2), duration_s=20, precision=0.02, quick=True))
    assert study.differences(original, other) == ["flags.duration_s: 30 -> 20"]
    implicit = study.implicit(Overrides(workloads=("pgbench-select-only",), repeats=2))
    again = study.rebuild(implicit.text, implicit.source, json.loads(json.dumps(dict(implicit.flags))))
    assert study.differences(implicit, again) == [] and expand(again) == expand(implicit)
    with pytest.raises(UsageError, match="flag 'colour'"):
        study.rebuild(implicit.text, implicit.source, {"colour": 1})


def test_cluster_options_per_variant_reach_the_plan_and_initdb():
    from dbarena.engines import postgres

    s = study.parse(HEAD + '[engines.postgres]\ncluster = { wal_segsize = 64 }\n[[workloads]]\n'
                           'workload = "pgbench-select-only"\n[variants.off]\ncluster.postgres = { data_checksums = false }\n'
                           '[variants.on]\ncluster.postgres = { data_checksums = true }\n', "b.toml")
    (p,) = plan.expand(s, lambda e: 2)
    # Each variant its own cluster: the engine's options and the variant's.
    assert p.cluster == {"off": {"wal_segsize": "64", "data_checksums": "off"},
                         "on": {"wal_segsize": "64", "data_checksums": "on"}}
    assert postgres.initdb_args(p.cluster["on"], (15, 18)) == ["-E", "UTF8", "--no-locale", "--data-checksums",
                                                               "--wal-segsize", "64"]
    # Off is initdb's default before 18; from 18 (on by default) it takes a flag.
    assert "--no-data-checksums" not in postgres.initdb_args(p.cluster["off"], (15, 18))
    assert "--no-data-checksums" in postgres.initdb_args(p.cluster["off"], (18, 1))
    assert postgres.initdb_args({"locale": "C.UTF-8", "encoding": "LATIN1"}, (16, 4)) == [
        "-E", "LATIN1", "--locale", "C.UTF-8"]


def test_a_setting_that_initdb_decides_says_how_to_give_it():
    from dbarena.engines import postgres
    from dbarena.errors import UsageError

    with pytest.raises(UsageError, match=r"data_checksums is decided when the cluster is created.*"
                                         r"cluster = \{ data_checksums = \.\.\. \}"):
        postgres.check_settings({"data_checksums": "on"})


def test_quick_caps_the_memory_a_big_servers_settings_ask_for():
    quick = study.apply(study.load("seed-b"), Overrides(quick=True))
    settings = dict(quick.engines[0].settings)
    assert settings["shared_buffers"] == "128MB" and settings["effective_cache_size"] == "1GB"
    assert settings["checkpoint_timeout"] == "1h" and settings["wal_compression"] == "on"  # the rest as the study
    assert "postgres shared_buffers: 32GB -> 128MB (--quick)" in quick.changes
    assert _size_bytes("6G") == 6 * 2 ** 30 and _size_bytes("300") is None


def test_restore_is_for_throwaway_instances_of_either_engine():
    head = 'schema = 1\nname = "r"\n[sweep]\nlevels = [1]\nrestore = "point"\n[[workloads]]\nworkload = "tpcc-like"\n'
    both = study.parse(head + '[engines.postgres]\n[engines.mysql]\n', "r.toml")
    assert {w.restore for w in both.workloads} == {"point"}
    with pytest.raises(study.StudyError, match=r"restore puts back a throwaway instance's data directory: not "
                                               r"possible on mysql's target"):
        study.parse(head + '[engines.mysql]\ntarget = "mysql://u@db/x"\n', "r.toml")


def test_a_tools_own_parameter_keeps_its_own_default_and_size(monkeypatch):
    """Two tools may name a parameter alike (sysbench-tpcc's --scale is warehouses of
    about 100 MB, pgbench's 16 MB units): each workload gets its own tool's default and
    its own tool's size estimate, not the first tool's."""
    from dbarena.model import ToolParam
    from dbarena.workloads.base import ToolBase

    class Warehouses(ToolBase):
        name = "fake-tpcc"
        binary = "sysbench"
        params = (ToolParam("scale", 1, "warehouses", quick=1, bytes_per_unit=100_000_000),)

    fake = workloads.Workload("fake-tpcc", ("postgres",), Warehouses(), (), "a tool with its own scale", ())
    monkeypatch.setitem(workloads.WORKLOADS, "fake-tpcc", fake)
    monkeypatch.setitem(workloads.TOOLS, "fake-tpcc", fake.tool)
    s = study.parse('schema = 1\nname = "two-scales"\n[engines.postgres]\n'
                    '[[workloads]]\nworkload = "fake-tpcc"\n[[workloads]]\nworkload = "pgbench-tpcb"\n', "t.toml")
    params = {w.workload: dict(w.params) for w in s.workloads}
    assert params == {"fake-tpcc": {"scale": 1}, "pgbench-tpcb": {"scale": 10}}
    assert fake.tool.dataset_bytes(params["fake-tpcc"]) == 100_000_000
    assert workloads.TOOLS["pgbench"].dataset_bytes(params["pgbench-tpcb"]) == 160_000_000


def test_a_target_is_measured_with_its_own_settings_not_the_studys():
    """Study A's server settings are for the servers it starts: with --target they are
    left out, and said so; a setting given by flag with --target is still refused."""
    from dbarena.errors import UsageError

    base = study.load("seed-a")
    mysql = next(e for e in base.engines if e.name == "mysql")
    assert mysql.settings  # the study sets some
    url = "mysql://admin@mydb.example:3306/bench"
    s = study.apply(base, Overrides(targets={"mysql": url}, engines=("mysql",)))
    (entry,) = s.engines
    assert entry.target == url and entry.settings == ()
    assert any(c.startswith("mysql settings: ") and c.endswith("-> none: a --target is measured with its own "
                                                                 "(--target)") for c in s.changes), s.changes
    with pytest.raises(UsageError, match="applies to a throwaway mysql instance only"):
        study.apply(base, Overrides(targets={"mysql": url}, engines=("mysql",),
                                    settings={"mysql": {"max_connections": "500"}}))


def test_a_shortened_point_keeps_a_per_second_series():
    """Seed D reports every 20 s; --quick's 5 s points would store no series at all (and
    no steady state): the interval is cut to a fifth of the point, and said so."""
    quick = study.apply(study.load("seed-d"), Overrides(quick=True))
    sysbench = [w for w in quick.workloads if w.workload.startswith("sysbench-")]
    assert sysbench
    for w in sysbench:
        assert dict(w.options)["report-interval"] == "1"
        assert f"{w.workload} report-interval: 20 -> 1 (--quick)" in quick.changes
    longer = study.apply(study.load("seed-d"), Overrides(duration_s=60))
    assert {dict(w.options)["report-interval"] for w in longer.workloads if w.workload.startswith("sysbench-")} \
        == {"12"}
    # The study's own durations keep the study's interval.
    assert {dict(w.options)["report-interval"] for w in study.load("seed-d").workloads
            if w.workload.startswith("sysbench-")} == {"20"}
    assert not any("report-interval" in c for c in study.apply(study.load("seed-d"), Overrides()).changes)


def test_a_study_for_several_load_generators():
    text = ('schema = 1\nname = "tg"\n[fleet]\ntogether = true\n'
            '[[workloads]]\nworkload = "pgbench-select-only"\nlevels = [2]\n')
    s = study.parse(text, "tg.toml")
    assert s.together and not study.load("seed-a").together
    assert "fleet: together" in studycheck.render(studycheck.summarise(s, list(expand(s, 8).values())))
    assert "this host is its one load generator" in preflight.together_note(s)
    assert preflight.together_note(study.load("seed-a")) is None
    for bad, message in (("together = 3", "fleet.together: expected true or false"),
                         ("togethr = true", "fleet.togethr: unknown key")):
        with pytest.raises(StudyError, match=message):
            study.parse(text.replace("together = true", bad), "tg.toml")


def test_a_variants_settings_are_left_out_and_said_where_target_points_at_a_server_it_does_not_start():
    """seed-b's variants differ by a cluster option (data checksums), which only a server
    the study initialises can take: against --target they are measured with the target's
    own, so they are not recorded as if applied, and study check says so."""
    from dbarena.study import arguments

    found = arguments.study_from_args(["--study", "seed-b", "--target", "postgresql://dbarena@db.example:5432/x"])
    assert [v.name for v in found.variants] == ["checksums-off", "checksums-on"]
    assert all(v.cluster == () and v.settings == () for v in found.variants)
    assert "variant checksums-on postgres cluster options: data_checksums=on -> none: a --target is measured " \
           "with its own (--target)" in found.changes
    throwaway = arguments.study_from_args(["--study", "seed-b"])
    assert [v.cluster_for("postgres") for v in throwaway.variants] == [{"data_checksums": "off"},
                                                                      {"data_checksums": "on"}]
