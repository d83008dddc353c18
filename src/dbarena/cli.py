"""The command line: parse options, call the library, map errors to exit statuses.

Every anticipated error becomes one line on stderr (`dbarena: error: ...`) and the
exit status of errors.ExitStatus; no traceback.
"""

from __future__ import annotations

import hashlib
import json
import signal
import sqlite3
import sys
import threading
from collections import Counter
from pathlib import Path

import click

from dbarena import __version__, engines, importer, plan, session, workloads
from dbarena.stats import analysis
from dbarena.stats import configkey
from dbarena.host import hostinfo
from dbarena.lifecycle import state
from dbarena.lifecycle.cleanup import reap, reap_dead
from dbarena import study as study_mod
from dbarena.errors import DbarenaError, ExitStatus, Interrupted, StoreError, UsageError
from dbarena.interfaces import Reporter
from dbarena.model import RunInfo
from dbarena.report import terminal
from dbarena.store import postgres as pgstore
from dbarena.store import database as store_mod
from dbarena.store.database import Store, now_utc

DEFAULT_STORE = "dbarena.db"

class StoreLocation(click.ParamType):
    """An SQLite file (an absolute Path), or a postgresql:// URL (checked: no password)."""

    name = "FILE|URL"

    def convert(self, value, param, ctx):
        if isinstance(value, Path):
            return value.resolve()
        if pgstore.is_url(value):
            try:
                return pgstore.check_url(value)
            except UsageError as exc:
                self.fail(str(exc).removeprefix("--store "), param, ctx)
        if "://" in value:
            self.fail(f"{value!r}: expected a file, or postgresql://USER@HOST[:PORT]/DATABASE", param, ctx)
        if Path(value).is_dir():
            self.fail(f"{value!r} is a directory", param, ctx)
        return Path(value).resolve()


store_option = click.option(
    "--store",
    type=StoreLocation(),
    default=DEFAULT_STORE,
    envvar="DBARENA_STORE",
    show_default=True,
    help="Where results are kept: an SQLite file, or a shared PostgreSQL database "
         "postgresql://USER@HOST[:PORT]/DATABASE (password from PGPASSWORD or ~/.pgpass); or set DBARENA_STORE.",
)


def _levels(ctx, param, value):
    if value is None:
        return None
    try:
        return plan.parse_levels(value)
    except UsageError as exc:
        raise click.BadParameter(str(exc).removeprefix("--threads: ")) from None


def _settings(ctx, param, values):
    settings = {}
    for item in values:
        name, sep, val = item.partition("=")
        if not sep or not name.strip():
            raise click.BadParameter(f"{item!r} is not NAME=VALUE")
        settings[name.strip()] = val
    return settings


def _names(ctx, param, value):
    if value is None:
        return None
    names = [n.strip() for n in value.split(",") if n.strip()]
    if not names:
        raise click.BadParameter("expected a comma-separated list of workload names")
    return names


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="dbarena")
def cli():
    """Benchmark PostgreSQL and MySQL/MariaDB across machines and settings; store every result.

    Start with `dbarena run` (a throwaway local PostgreSQL, pgbench at every
    concurrency level of this machine), then `dbarena results`.
    """
    # Whatever the command: first undo what a killed dbarena left (state.py).
    reap_dead(lambda line: click.echo(f"dbarena: {line}", err=True))


def _engine_list(ctx, param, value):
    if value is None:
        return None
    names = [n.strip() for n in value.split(",") if n.strip()]
    for name in names:
        engines.check_name(name)  # UsageError for an unknown one
    return tuple(dict.fromkeys(names))


def _overrides(o: dict) -> study_mod.Overrides:
    """The flags given (None where not given), as overrides of a study."""
    target_of: dict[str, str] = {}
    for url in o["targets"]:
        engine = engines.engine_of_url(url)
        if engine in target_of:
            raise UsageError(f"two --target URLs for engine {engine!r}; give one per engine")
        target_of[engine] = engines.first(engine).check_target_url(url)
    if o["engine_names"] is not None:
        for engine in target_of:
            if engine not in o["engine_names"]:
                raise UsageError(f"--target {target_of[engine]} is a {engine} server, but --engine does not include "
                                 f"{engine}")
    params = {k: o[flag] for k, flag in (("scale", "scale"), ("tables", "tables"), ("table_size", "table_size"),
                                         ("warehouses", "warehouses"), ("iterations", "iterations"),
                                         ("queries", "number_of_queries")) if o[flag] is not None}
    settings = {k: o[flag] for k, flag in (("postgres", "pg_settings"), ("mysql", "mysql_settings")) if o[flag]}
    return study_mod.Overrides(
        engines=o["engine_names"], workloads=tuple(o["workload_names"]) if o["workload_names"] else None,
        levels=tuple(o["levels"]) if o["levels"] else None, duration_s=o["duration"], warmup_s=o["warmup_s"],
        repeats=o["repeats"], precision=o["precision"], max_repeats=o["max_repeats"], budget_s=o["budget"],
        clients_per_thread=o["clients_per_thread"], params=params, settings=settings,
        targets=target_of, flavours={"mysql": o["mysql_flavour"]} if o["mysql_flavour"] else {},
        bindirs={"postgres": str(o["pg_bindir"])} if o["pg_bindir"] else {}, server_cores=o["server_cores"],
        server_threads=o["server_threads"], label=o["label"], price_per_hour=o["price_per_hour"],
        price_per_month=o["price_per_month"], currency=o["currency"],
        fail_fast=True if o["fail_fast"] else None, latency_sampling=o["latency_sampling"], quick=o["quick"],
    )


def _precision(ctx, param, value):
    try:
        return None if value is None else study_mod.parse_precision(value)
    except UsageError as exc:
        raise UsageError(f"--precision {exc}") from None


def _budget(ctx, param, value):
    try:
        return None if value is None else study_mod.parse_duration(value)
    except UsageError as exc:
        raise UsageError(f"--budget {exc}") from None


def _make_study(study_name: str | None, overrides: study_mod.Overrides) -> study_mod.Study:
    if study_name is None:
        return study_mod.implicit(overrides)
    return study_mod.apply(study_mod.load(study_name), overrides)


def run_options(f):
    """The options `run` and `study check` share: a study, and flags over it."""
    for option in reversed([
        click.option("--study", "study_name", metavar="FILE|NAME",
                     help="A study file, or a bundled study (see `dbarena study list`). Flags given with it "
                          "override the file's values."),
        click.option("--quick", is_flag=True,
                     help=f"Same shape, {study_mod.QUICK_DURATION_S} s per point and tiny datasets: a trial of the "
                          "whole protocol in minutes."),
        click.option("--engine", "engine_names", callback=_engine_list, metavar="LIST",
                     help=f"Engines to benchmark, comma-separated ({', '.join(engines.ENGINES)}); with --study, "
                          "a subset of the study's [default: the engines of --target, else postgres]."),
        click.option("--mysql-flavour", type=click.Choice((engines.AUTO, *engines.FLAVOURS["mysql"])),
                     help="Which MySQL-family server a throwaway instance runs: whichever is installed (auto, "
                          "MariaDB first), mariadb or mysql [default: auto]."),
        click.option("--target", "targets", multiple=True, metavar="URL",
                     help="Benchmark an existing server instead of a throwaway instance (repeatable, one per engine): "
                          "postgresql://user@host:5432/db (password from PGPASSWORD or ~/.pgpass) or "
                          "mysql://user@host:3306/db (password from MYSQL_PWD or ~/.my.cnf); never a password in the "
                          "URL. pgbench tables are dropped and recreated unless --no-init."),
        click.option("--workload", "workload_names", callback=_names, metavar="LIST",
                     help=f"Comma-separated workloads ({', '.join(workloads.WORKLOADS)}); with --study, a subset of "
                          "the study's [default: postgres: the pgbench ones; mysql: the sysbench ones and mysqlslap]."),
        click.option("--threads", "levels", callback=_levels, metavar="LIST",
                     help="Thread levels, e.g. 1,4,16 [default: 1, 2, then 20/40/60/80/99 % of the "
                          f"{hostinfo.hardware_threads()} hardware threads dbarena may use here (its CPU affinity "
                          "and cgroup quota)]."),
        click.option("--clients-per-thread", type=click.IntRange(min=1),
                     help="pgbench clients per thread (-c = threads x this) [default: 2]; sysbench and mysqlslap "
                          "use one per thread."),
        click.option("--duration", type=click.IntRange(min=1),
                     help="Seconds per point [default: 60] (pgbench, sysbench; mysqlslap runs a number of queries)."),
        click.option("--scale", type=click.IntRange(min=1), help="pgbench scale factor (100,000 accounts rows each) "
                                                                 "[default: 10]."),
        click.option("--tables", type=click.IntRange(min=1), help="sysbench tables [default: 4]."),
        click.option("--table-size", type=click.IntRange(min=1),
                     help="sysbench rows per table [default: 10000] (the studies used 1000000 and 10000000)."),
        click.option("--warehouses", type=click.IntRange(min=1),
                     help="tpcc-like scale: warehouses (about 100 MB each) [default: 1]."),
        click.option("--iterations", type=click.IntRange(min=1), help="mysqlslap --iterations [default: 1]."),
        click.option("--number-of-queries", type=click.IntRange(min=1),
                     help="mysqlslap --number-of-queries (in total over all clients) [default: 100000]."),
        click.option("--repeat", "repeats", type=click.IntRange(min=1),
                     help="Run every point this many times, interleaved across points (not back to back) "
                          "[default: 1]."),
        click.option("--precision", callback=_precision, metavar="PCT",
                     help="Instead of --repeat: run the plan in rounds until the 95 % interval of each point's mean "
                          "over runs is within +-PCT, e.g. 2% (at least 3 runs a point; see the README on how)."),
        click.option("--max-repeats", type=click.IntRange(min=3), metavar="N",
                     help="With --precision: at most N runs of a point [default: 10]."),
        click.option("--budget", callback=_budget, metavar="TIME",
                     help="With --precision: start no round past this much time, e.g. 90m or 2h; points not "
                          "reached by then say so."),
        click.option("--warmup", "warmup_s", type=click.IntRange(min=0), metavar="SECONDS",
                     help="Before each point, a run with the same parameters for this long (stored apart, not a "
                          "result), then a CHECKPOINT (PostgreSQL) or FLUSH TABLES (MySQL) [default: 0]."),
        click.option("--pg-setting", "pg_settings", multiple=True, callback=_settings, metavar="NAME=VALUE",
                     help="PostgreSQL setting for the throwaway instance (repeatable)."),
        click.option("--mysql-setting", "mysql_settings", multiple=True, callback=_settings, metavar="NAME=VALUE",
                     help="MySQL/MariaDB server variable for the throwaway instance (repeatable)."),
        click.option("--pg-bindir", type=click.Path(file_okay=False, path_type=Path),
                     help="Use the PostgreSQL binaries in this directory [default: the newest installed]."),
        click.option("--label", help="Name for this run's results, e.g. the machine type [default: the study's, "
                                     "else the host name]."),
        click.option("--price-per-hour", type=click.FloatRange(min=0, min_open=True), metavar="PRICE",
                     help="Hourly price of what is measured (instance, managed service), for price/performance "
                          "in `dbarena report`."),
        click.option("--price-per-month", type=click.FloatRange(min=0, min_open=True), metavar="PRICE",
                     help="Monthly price instead (a rented server): stored per hour, at 730 hours a month."),
        click.option("--currency", metavar="CODE", help="Currency of the price [default: USD]."),
        click.option("--server-cores", type=click.IntRange(min=1), metavar="N",
                     help="Physical cores of a --target's server (not visible from here), for per-core figures."),
        click.option("--server-threads", type=click.IntRange(min=1), metavar="N",
                     help="Hardware threads (vCPUs) of a --target's server, for per-thread figures and \"N%\" "
                          "levels."),
        click.option("--fail-fast", is_flag=True, help="Stop at the first failed point."),
        click.option("--latency-sampling", type=click.FloatRange(min=0, max=1), metavar="SHARE",
                     help="The share of transactions pgbench logs (-l --sampling-rate) for the latency "
                          "percentiles; 1: every transaction; 0: no per-transaction log [default: 0.1, which costs about "
                          "1 % of a CPU-bound machine where logging all costs 3.5 %]."),
    ]):
        f = option(f)
    return f


def _study_from_options(kwargs: dict) -> study_mod.Study:
    study_name = kwargs.pop("study_name")
    return _make_study(study_name, _overrides(kwargs))


@cli.command()
@run_options
@store_option
@click.option("--no-init", is_flag=True,
              help="Reuse the datasets already in the target instead of preparing them.")
@click.option("--keep", is_flag=True, help="Leave the throwaway instances running and their directories in place.")
@click.option("--resume", is_flag=False, flag_value="latest", metavar="[RUN]",
              help="Continue an interrupted or partly failed run (RUN, or the latest such run in the store): its "
                   "plan as stored, only the points not stored ok, into the same runs. Flags or --study given "
                   "with it must describe the same plan.")
@click.option("--progress-file", type=click.Path(dir_okay=False, path_type=Path), hidden=True,
              help="Also write the progress as JSON to this file (what `dbarena fleet` reads on a host).")
@click.option("--no-system-metrics", is_flag=True, hidden=True,
              help="No once-a-second CPU, disk and memory sampling (bench/overhead measures its cost).")
def run(store, no_init, keep, resume, progress_file, no_system_metrics, **kwargs):
    """Run a study, or the workloads of the flags, across a concurrency sweep; store every point.

    Exit status: 0 all points ok, 1 some point failed, 2 bad option or study file,
    3 missing binaries or unreachable target, 130 interrupted (finished points are kept;
    `dbarena run --resume` continues).
    """
    # Everything the user could get wrong is checked before anything starts.
    store_path = store
    invocation = None
    if resume is not None:
        the_study, invocation = _resumed_study(store_path, resume, kwargs)
    else:
        the_study = _study_from_options(kwargs)
    if keep and all(e.target for e in the_study.engines):
        raise UsageError("--keep applies to throwaway instances only, not to --target")
    out = terminal.console()
    err = terminal.console(stderr=True)
    with Store(store_path) as db:
        reporter: Reporter = terminal.TerminalReporter(err)
        if progress_file is not None:
            from dbarena.fleet.progress import ProgressFile, Tee

            reporter = Tee(reporter, ProgressFile(progress_file))
        outcome = session.run(the_study, store=db, reporter=reporter, keep=keep, init=not no_init,
                              resume=invocation, system_metrics=not no_system_metrics)
        for note in outcome.notes:
            err.print(note, markup=False, soft_wrap=True)
        if outcome.exit_status in (ExitStatus.INTERRUPTED, ExitStatus.TERMINATED):
            stored = sum(len(db.points(run_id=r)) for r in outcome.run_ids)
            err.print(f"interrupted: {stored} finished point(s) kept in {store_path}; continue with: "
                      f"dbarena run --resume --store {store_path}", markup=False, soft_wrap=True)
            raise SystemExit(outcome.exit_status)
        rows = [row for r in outcome.run_ids for row in analysis.load(db, run_id=r)]
        label = the_study.label or hostinfo.host_facts()["hostname"]
        if outcome.skipped:
            err.print(f"resumed: {outcome.skipped} point(s) were stored already and not run again", markup=False)
        out.print(terminal.points_table(rows, title=f"{label}: run {', '.join(map(str, outcome.run_ids))}"))
        if outcome.precision:
            out.print(terminal.precision_table(outcome.precision, the_study.precision))
        if the_study.repeats > 1 or the_study.precision or len(the_study.variants) > 1:
            groups = analysis.summaries(rows, histograms=db.latency_histograms)
            out.print(terminal.summary_table(groups))
            for line in terminal.warning_lines(groups):
                out.print(line)
    out.print(f"Results stored in {store_path} (run {', '.join(map(str, outcome.run_ids))}); show them with: "
              f"dbarena results --store {store_path}", markup=False, soft_wrap=True)
    if outcome.failed:
        err.print(f"{outcome.failed} point(s) failed; see the status column", markup=False)
    raise SystemExit(outcome.exit_status)


def _resumed_study(store_path: Path | str, resume: str, kwargs: dict) -> tuple[study_mod.Study, str]:
    """The stored plan of the run to resume, and its invocation. A study or flags given
    with --resume must describe the same plan."""
    if resume != "latest" and not resume.isdigit():
        raise UsageError(f"--resume {resume!r}: expected a run number (see `dbarena results`)")
    if isinstance(store_path, Path) and not store_path.is_file():
        raise UsageError(f"--resume: no store {store_path}")
    with Store(store_path) as db:
        invocation, runs = session.resumable(db, None if resume == "latest" else int(resume))
        first = runs[0]
        record = db.study_text(first["study_sha256"]) if first["study_sha256"] else None
    if record is None:
        raise UsageError(f"--resume: run {first['id']} has no stored study")
    stored = study_mod.rebuild(record["text"], first["options"].get("source") or record["source"],
                               first["options"]["flags"])
    study_name = kwargs.pop("study_name")
    overrides = _overrides(kwargs)
    if study_name is not None or overrides.flags():
        given = _make_study(study_name, overrides)
        changed = study_mod.differences(stored, given)
        if changed:
            raise UsageError(f"--resume: the study differs from what run {first['id']} ran: {'; '.join(changed)}")
    return stored, invocation


@cli.command()
@click.option("--dry-run", is_flag=True, help="List what would be removed; change nothing.")
def cleanup(dry_run):
    """Remove what dbarena runs left behind: throwaway instances kept with --keep, and
    those of killed runs (which every command removes anyway), marking their runs
    interrupted. Instances of runs still going are listed and left alone."""
    say = click.echo
    found = 0
    for path, data in state.records():
        if data.get("kept") or state.orphaned(data):
            reap(path, data, say, dry_run=dry_run)
            found += 1
        else:
            what = data.get("top") or data.get("path") or (
                f"SMT switched from {data.get('original')} ({data.get('control')})" if data.get("kind") == "smt"
                else f"run {data.get('run_id')} in {data.get('store')}")
            say(f"in use by process {data['owner_pid']}: {what}")
    if not found:
        say(f"nothing to clean up (state directory {state.state_dir()})")


@cli.command()
@click.argument("others", nargs=-1, required=True, type=StoreLocation(), metavar="STORE...")
@store_option
def merge(others, store):
    """Bring other stores' runs into this one: points, per-second series, raw outputs,
    studies, hosts. Runs already here are skipped (merging twice adds nothing); an older
    store is read through a migrated copy, a newer one is refused; each file is merged
    whole or not at all. Either side may be an SQLite file or a PostgreSQL URL."""
    target = store
    with Store(target) as db:
        for other in others:
            runs, points = store_mod.merge(db, other)
            click.echo(f"{other}: {runs} run(s), {points} point(s) merged into {target}"
                       + ("" if runs else " (all its runs were here already)"))


@cli.group("store")
def store_group():
    """The results store itself."""


@store_group.command("info")
@store_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def store_info(store, as_json):
    """Schema version, counts, size and labels of a store."""
    with _open_store(store) as db:
        facts = store_mod.info(db)
    if as_json:
        click.echo(json.dumps(facts, indent=2))
        return
    for key, value in facts.items():
        shown = ", ".join(value) if isinstance(value, list) else f"{value:,}" if isinstance(value, int) else value
        click.echo(f"{key:28} {shown}")


@cli.group("study")
def study_group():
    """Study files: a whole benchmark protocol in one TOML file (see `dbarena study show seed-a`)."""


@study_group.command("list")
def study_list():
    """The bundled studies, one line each."""
    for name, text in study_mod.bundled().items():
        s = study_mod.parse(text, f"bundled study {name}")
        click.echo(f"{name:10} {s.title}")


@study_group.command("show")
@click.argument("name")
def study_show(name):
    """Print a bundled study (or a study file) as an editable, commented TOML file."""
    text, _, _ = study_mod.read_text(name)
    click.echo(text, nl=False)


@study_group.command("check")
@click.argument("file", metavar="FILE|NAME")
@run_options
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
def study_check(file, as_json, **kwargs):
    """Check a study file and show the plan it expands to on this machine: engines,
    workloads, levels, points, and the estimated machine time. Flags are applied as
    `run` would apply them (lowest first: defaults < file < --quick < flags)."""
    from dbarena import studycheck

    if kwargs.get("study_name"):
        raise UsageError("give the study as the argument of `study check`, not with --study")
    kwargs["study_name"] = file
    the_study = _study_from_options(kwargs)
    session.check_settings(the_study)
    summary = studycheck.summarise(the_study, session.expand(the_study))
    if as_json:
        click.echo(json.dumps(summary, indent=2))
    else:
        click.echo(studycheck.render(summary))


@cli.command()
@store_option
@click.option("--run", "run_id", type=int, help="Only this run's points.")
@click.option("--label", "labels", multiple=True, help="Only points with this label (repeatable).")
@click.option("--study", "study_name", metavar="NAME", help="Only points of this study (its name or hash prefix).")
@click.option("--variant", "variants", multiple=True, help="Only points of this variant (repeatable).")
@click.option("--summary", is_flag=True,
              help="One line per label and configuration over its repeats: median, mean, stdev, "
                   "95 % interval, coefficient of variation and warnings. Points of different "
                   "configurations (parameters, settings, variant, server version, host) are never pooled.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.option("--wide", is_flag=True, help="Every column (clients, repeat, QPS, intervals, latencies, failed "
                                           "transactions, errors; config key, mean, stdev) [default: the columns "
                                           "that fit a 120-column terminal].")
@click.option("--raw", "raw_point", type=int, metavar="POINT",
              help="Print one point's raw tool output (stderr, then stdout) as the tool printed it.")
def results(store, run_id, labels, study_name, variants, summary, as_json, wide, raw_point):
    """List stored points (or their summaries), with steady-state figures and warnings."""
    if raw_point is not None:
        with _open_store(store) as db:
            out, err = db.raw_output(raw_point)
        click.echo(err + out, nl=False)
        return
    with _open_store(store) as db:
        rows = analysis.load(db, run_id=run_id, labels=tuple(labels), study=study_name, variants=tuple(variants))
        if summary:
            rows = analysis.summaries(rows, histograms=db.latency_histograms)
    if as_json:
        click.echo(json.dumps([analysis.public(r) for r in rows], indent=2))
    elif not rows:
        click.echo("no points stored yet" if not (labels or study_name or variants or run_id) else
                   "no points match", err=True)
    elif summary:
        out = terminal.console()
        out.print(terminal.summary_table(rows, wide=wide))
        for line in terminal.warning_lines(rows):
            out.print(line)
    else:
        terminal.console().print(terminal.points_table(rows, wide=wide))


@cli.command()
@store_option
@click.argument("a")
@click.argument("b")
@click.option("--about", "about", multiple=True, type=click.Choice(sorted(configkey.ABOUT)),
              help="What else the comparison is about, so that keys may differ in it too (repeatable) "
                   "[default: host for two labels, variant for two variants].")
@click.option("--study", "study_name", metavar="NAME", help="Only points of this study (its name or hash prefix).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def compare(store, a, b, about, study_name, as_json):
    """Compare B against A: two labels (hosts), or two variants of a study.

    Only points whose configuration keys match apart from what the comparison is about
    are compared; elsewhere the row names the fields that differ instead of a ratio.
    The ratio is B / A of the steady-state throughput. With 3 or more repeats on both
    sides it comes with a 95 % interval and a verdict from Welch's t-test on the run
    means ("not significant": the data cannot tell them apart); with fewer, the row
    says "no verdict" (JSON: verdict null and the reason).
    """
    with _open_store(store) as db:
        rows = analysis.load(db, study=study_name)
    comparisons = analysis.compare(rows, a, b, about)
    if not comparisons:
        raise UsageError(f"{a!r} and {b!r} have no point (engine, workload, threads) in common")
    if as_json:
        click.echo(json.dumps(comparisons, indent=2))
    else:
        terminal.console().print(terminal.comparison_table(comparisons))


@cli.command("import")
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--label", required=True, help="Label for the imported results (a CSV 'label' column overrides it).")
@click.option("--engine", type=click.Choice(sorted(engines.ENGINES)),
              help="Engine of runs whose output does not say (sysbench without a --db-driver command line).")
@click.option("--tool", type=click.Choice(("auto", *importer.TOOLS)), default="auto", show_default=True,
              help="Tool that wrote the files [default: recognised from the text].")
@click.option("--workload", help="Workload name for runs whose output does not say which (e.g. sysbench-tpcc).")
@click.option("--price-per-hour", type=click.FloatRange(min=0, min_open=True), metavar="USD",
              help="Hourly price of what was measured (a CSV 'price_per_hour' column overrides it).")
@click.option("--replace", is_flag=True,
              help="Import a file imported before again, with these options: what it brought is replaced, in one "
                   "transaction.")
@store_option
def import_command(files, label, engine, tool, workload, price_per_hour, replace, store):
    """Bring results measured elsewhere into the store: pgbench, sysbench or mysqlslap
    outputs (one run or many appended in a file, with or without the command lines
    that produced them) and CSV files of summary rows (see the README for columns).

    A line that cannot be read is reported as FILE:LINE and nothing from that file is
    stored (exit 2); importing the same file twice adds nothing the second time, unless
    --replace (e.g. with the right --workload).
    """
    failed = False
    with Store(store) as db:
        for path in files:
            raw = path.read_bytes()
            sha256 = hashlib.sha256(raw).hexdigest()
            try:
                text = raw.decode("utf-8")
                points = importer.read(path.name, text, label=label, engine=engine, tool=tool, workload=workload)
            except UnicodeDecodeError as exc:
                click.echo(f"dbarena: error: {path.name}: not UTF-8 text (byte {exc.start})", err=True)
                failed = True
                continue
            except importer.ImportProblem as exc:
                click.echo(f"dbarena: error: {exc}", err=True)
                failed = True
                continue
            if not points:
                click.echo(f"{path}: no benchmark run found; nothing imported")
                continue
            groups: dict[tuple[str, str], list] = {}
            for p in points:
                groups.setdefault((p.label, p.result.spec.engine), []).append(p)
            runs = []
            for (run_label, run_engine), members in groups.items():
                tools = sorted({p.tool for p in members})
                runs.append((RunInfo(
                    label=run_label, host="imported", engine=run_engine, target=f"imported from {path.name}",
                    started_at=now_utc(), server_version=next((p.server_version for p in members if p.server_version),
                                                              None),
                    tool_versions={t: "imported" for t in tools},
                    options={"imported": {"file": str(path), "sha256": sha256, "tool": tools}},
                    host_facts={}, price_per_hour=next((p.price_per_hour for p in members if p.price_per_hour), None)
                    or price_per_hour,
                ), [(p.result, {"file": path.name, "lines": [p.first_line, p.last_line], "sha256": sha256})
                    for p in members]))
            options = json.dumps([label, engine, tool, workload, price_per_hour])
            stored = db.import_points(sha256, str(path), runs,
                                      replace=hashlib.sha256(options.encode()).hexdigest()[:16] if replace else None)
            if stored is None:
                click.echo(f"{path}: already imported (same content); nothing added (--replace imports it again)")
            else:
                run_ids, replaced = stored
                if replaced:
                    click.echo(f"{path}: the {replaced} point(s) of its earlier import removed")
                for run_id in run_ids:  # derived figures cached now: the SQL views show them
                    analysis.load(db, run_id=run_id)
                ok = sum(p.result.ok for p in points)
                click.echo(f"{path}: imported {len(points)} point(s) ({ok} ok, {len(points) - ok} failed) "
                           f"as run {', '.join(map(str, run_ids))}, label {', '.join(sorted({k[0] for k in groups}))}")
                for note, count in Counter(p.note for p in points if p.note).items():
                    click.echo(f"{path}: {count} run(s): {note}")
    if failed:
        raise SystemExit(ExitStatus.USAGE)


def _prices(ctx, param, values):
    from dbarena.stats import price

    prices = {}
    for item in values:
        label, sep, value = item.rpartition("=")
        if not sep or not label:
            raise click.BadParameter(f"{item!r} is not LABEL=PRICE (e.g. arm=0.58/h, ax41=420 EUR/month)")
        try:
            prices[label] = price.parse(value)
        except ValueError as exc:
            raise click.BadParameter(str(exc)) from None
    return prices


REPORT_FORMATS = ("html", "md", "csv", "json")


@cli.command()
@store_option
@click.option("--label", "labels", multiple=True, help="Labels to include, in this order (repeatable) [default: all].")
@click.option("--baseline", help="Label the others are compared against [default: the first label].")
@click.option("--price", "prices", multiple=True, callback=_prices, metavar="LABEL=PRICE",
              help="Price of a label (repeatable): per hour (0.58 or 0.58/h) or per month (420/month, 730 hours), "
                   "in a currency (420 EUR/month; default USD); overrides the one stored with the run. Prices in "
                   "different currencies are shown, never compared.")
@click.option("--at-threads", type=click.IntRange(min=1), metavar="N",
              help="Thread level of the price table (that level only, cheapest first, the cheapest named) and the "
                   "per-second chart (study E used 16) [default: prices at every level].")
@click.option("--format", "fmt", type=click.Choice(REPORT_FORMATS), help="[default: from -o's extension, else html]")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="File to write [default: dbarena-report.FORMAT]; Markdown charts go to FILE_files/.")
@click.option("--png", is_flag=True,
              help="Charts also as PNG (200 dpi), for sites that take no SVG: Markdown links the PNG files, HTML "
                   "offers them for saving.")
def report(store, labels, baseline, prices, at_threads, fmt, output, png):
    """Charts and tables to publish: throughput, latency, price/performance, per core,
    scaling (USL), differences against a baseline, provenance."""
    from dbarena.report import charts, data, export, html, markdown

    if fmt is None:
        suffix = output.suffix.lstrip(".").lower() if output else ""
        fmt = {"htm": "html", "markdown": "md"}.get(suffix, suffix) if suffix in (*REPORT_FORMATS, "htm", "markdown") \
            else "html"
    output = output or Path(f"dbarena-report.{fmt}")
    with _open_store(store) as db:
        stored = {r["label"] for r in db.runs()}
        for label in (*labels, *prices, *([baseline] if baseline else [])):
            if label not in stored:
                raise UsageError(f"no results labelled {label!r} in {store} (labels: {', '.join(sorted(stored))})")
        if baseline and labels and baseline not in labels:
            labels = (baseline, *labels)
        rows = analysis.load(db, labels=tuple(labels))
        if not rows:
            raise UsageError(f"no points to report in {store}")
        levels = sorted({r["threads"] for r in rows})
        if at_threads is not None and at_threads not in levels:
            raise UsageError(f"--at-threads {at_threads}: no point was measured at {at_threads} threads "
                             f"(levels: {', '.join(map(str, levels))})")
        order = list(labels) or list(dict.fromkeys(r["label"] for r in rows))
        built = data.build(rows, db.runs(), baseline=baseline, prices=prices, at_threads=at_threads, labels=order,
                           histograms=db.latency_histograms)
        drawn = {}
        pngs: dict[tuple[str, str], dict[str, bytes]] | None = {} if png else None
        if fmt in ("html", "md"):
            for section in built.sections:
                samples = {label: db.samples(info["point_id"]) for label, info in section.series.items() if info}
                raster = pngs.setdefault((section.engine, section.workload), {}) if pngs is not None else None
                drawn[(section.engine, section.workload)] = charts.charts(section, samples, png=raster)
        elif png:
            raise UsageError(f"--png: {fmt} has no charts (give -o FILE.md or FILE.html)")
    if fmt == "html":
        text = html.render(built, drawn, pngs)
    elif fmt == "md":
        text = markdown.render(built, drawn, output, pngs)
    elif fmt == "csv":
        text = export.to_csv(built)
    else:
        text = export.to_json(built)
    output.write_text(text)
    click.echo(f"wrote {output} ({len(built.sections)} engine/workload sections, labels: {', '.join(built.labels)})")


@cli.command("hostinfo")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def hostinfo_command(as_json):
    """Print what dbarena records about this machine (CPU, cores vs threads, memory ...)."""
    facts = hostinfo.host_facts()
    if as_json:
        click.echo(json.dumps(facts, indent=2, sort_keys=True))
    else:
        terminal.console().print(terminal.facts_table(facts))


@cli.group("fleet")
def fleet_group():
    """One study on many hosts through Ansible (see the README's "Many hosts")."""


inventory_option = click.option("-i", "--inventory", "inventory", required=True,
                                type=click.Path(dir_okay=False, path_type=Path),
                                help="An Ansible inventory; host vars dbarena_label, dbarena_price_per_hour or "
                                     "dbarena_price_per_month, dbarena_currency, dbarena_workdir.")
limit_option = click.option("--limit", metavar="PATTERN",
                            help="Only these hosts or groups (comma-separated; shell-style patterns).")


@fleet_group.command("run", context_settings={"ignore_unknown_options": False})
@inventory_option
@limit_option
@click.option("--study", "study_name", required=True, metavar="FILE|NAME",
              help="The study every host runs: a file (copied to the hosts) or a bundled study.")
@click.option("--quick", is_flag=True, help="The study's --quick trial on every host.")
@click.option("--serial", is_flag=True, help="One host at a time [default: all hosts at once].")
@click.option("--poll", "poll_s", type=click.FloatRange(min=0.5), default=10.0, show_default=True, metavar="SECONDS",
              help="How often the hosts' progress is read.")
@click.option("--unreachable-timeout", type=click.FloatRange(min=0), default=300.0, show_default=True,
              metavar="SECONDS", help="Stop waiting for a host that has been unreachable this long "
                                      "(its run goes on there; run again to collect it).")
@store_option
@click.argument("run_args", nargs=-1, type=click.UNPROCESSED, metavar="[-- RUN OPTIONS...]")
def fleet_run(inventory, limit, study_name, quick, serial, poll_s, unreachable_timeout, store, run_args):
    """Run a study on every host of an Ansible inventory at once, and bring every host's
    results into the store.

    Each host gets the Debian packages the study needs and dbarena itself (a wheel built
    here, in a virtual environment there), runs the study under its label and price,
    detached from the SSH session, and its store is fetched and merged here (with
    --store postgresql://..., hosts write to it themselves). Options after `--` go to
    every host's `dbarena run` (e.g. `-- --duration 30 --repeat 3`). Running the same
    command again continues: complete hosts are skipped, a host that stopped half-way
    runs only what it has not stored.

    Exit status: 0 every host complete, 1 some host failed or unreachable, 2 bad input.
    """
    from dbarena.fleet import controller, inventory as inventory_mod

    hosts = inventory_mod.load(inventory, limit, controller.ansible_command("ansible-inventory"))
    args = [*(("--quick",) if quick else ()), *run_args]
    for bad in ("--store", "--label", "--study", "--resume", "--keep", "--progress-file"):
        if bad in args:
            raise UsageError(f"{bad} is not a run option for `fleet run` (the fleet sets it per host)")
    # Checked here, as a host would read it: a bad study or option starts nothing.
    with run.make_context("run", ["--study", study_name, *args], resilient_parsing=False) as ctx:
        params = dict(ctx.params)
    for key in ("store", "no_init", "keep", "resume", "progress_file", "no_system_metrics"):
        params.pop(key)
    the_study = _study_from_options(params)
    study_file = Path(study_name) if Path(study_name).is_file() else None
    fleet = controller.Fleet(inventory=inventory, hosts=hosts, say=lambda line: click.echo(line, nl=True),
                             poll_s=poll_s, unreachable_timeout_s=unreachable_timeout)
    try:
        status = fleet.run(the_study, study_name, study_file.resolve() if study_file else None, list(args), store,
                           serial)
    finally:
        fleet.close()
    raise SystemExit(status)


@fleet_group.command("status")
@inventory_option
@limit_option
def fleet_status(inventory, limit):
    """Where each host's run is: points done / planned, the current point, ETA."""
    from dbarena.fleet import controller, inventory as inventory_mod

    hosts = inventory_mod.load(inventory, limit, controller.ansible_command("ansible-inventory"))
    fleet = controller.Fleet(inventory=inventory, hosts=hosts, say=click.echo)
    try:
        fleet.poll(hosts)
        for state in fleet.states.values():
            click.echo(state.line())
    finally:
        fleet.close()


@fleet_group.command("host-run", hidden=True, context_settings={"ignore_unknown_options": True})
@click.option("--workdir", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="The host's fleet working directory (dbarena_workdir).")
@click.argument("run_args", nargs=-1, type=click.UNPROCESSED)
def fleet_host_run(workdir, run_args):
    """On a host (started by `fleet run`): the study, started, resumed or skipped."""
    from dbarena.fleet import host

    raise SystemExit(host.run(workdir.expanduser(), list(run_args)))


@fleet_group.command("host-status", hidden=True)
@click.option("--workdir", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="The host's fleet working directory (dbarena_workdir).")
def fleet_host_status(workdir):
    """On a host: its run's state as one JSON line."""
    from dbarena.fleet import host

    click.echo(json.dumps(host.status(workdir.expanduser()), sort_keys=True))


@fleet_group.command("host-snapshot", hidden=True)
@click.option("--workdir", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="The host's fleet working directory (dbarena_workdir).")
def fleet_host_snapshot(workdir):
    """On a host: a consistent copy of its store, to be fetched."""
    from dbarena.fleet import host

    try:
        click.echo(host.snapshot(workdir.expanduser()))
    except (OSError, sqlite3.Error) as exc:
        raise StoreError(f"snapshot of the store in {workdir}: {exc}") from None


def _open_store(path: Path | str) -> Store:
    if isinstance(path, Path) and not path.exists():
        raise UsageError(f"no results store at {path} (run `dbarena run` first, or pass --store)")
    return Store(path)


def _raise_on_sigterm(signum, frame):
    raise Interrupted()


def main(argv: list[str] | None = None) -> None:
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _raise_on_sigterm)
    try:
        status = cli.main(args=argv, prog_name="dbarena", standalone_mode=False)
    except click.exceptions.UsageError as exc:
        _fail(exc.format_message(), ExitStatus.USAGE)
    except click.exceptions.Abort:
        _fail("aborted", ExitStatus.INTERRUPTED)
    except DbarenaError as exc:
        _fail(str(exc), exc.exit_status)
    except Interrupted:
        sys.exit(ExitStatus.TERMINATED)
    sys.exit(status if isinstance(status, int) else 0)


def _fail(message: str, status: int) -> None:
    click.echo(f"dbarena: error: {' '.join(message.split())}", err=True)
    sys.exit(status)
