"""The command line: parse options, call the library, map errors to exit statuses.

Every anticipated error becomes one line on stderr (`dbarena: error: ...`) and the
exit status of errors.ExitStatus; no traceback.
"""

from __future__ import annotations

import hashlib
import json
import signal
import sys
import threading
from pathlib import Path

import click
from rich.markup import escape

from dbarena import __version__, analysis, engines, hostinfo, importer, plan, runner, workloads
from dbarena.errors import DbarenaError, ExitStatus, Interrupted, UsageError
from dbarena.execute import version_line
from dbarena.model import RunInfo
from dbarena.report import terminal
from dbarena.store import Store, now_utc

DEFAULT_STORE = "dbarena.db"

store_option = click.option(
    "--store",
    type=click.Path(dir_okay=False, path_type=Path),
    default=DEFAULT_STORE,
    envvar="DBARENA_STORE",
    show_default=True,
    help="SQLite file that holds the results (or set DBARENA_STORE).",
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


def _engine_list(ctx, param, value):
    if value is None:
        return None
    names = [n.strip() for n in value.split(",") if n.strip()]
    for name in names:
        engines.get(name)  # UsageError for an unknown one
    return list(dict.fromkeys(names))


@cli.command()
@click.option("--engine", "engine_names", callback=_engine_list, metavar="LIST",
              help=f"Engines to benchmark, comma-separated ({', '.join(engines.ENGINES)}); the same plan runs on each "
                   "[default: the engines of --target, else postgres].")
@click.option("--target", "targets", multiple=True, metavar="URL",
              help="Benchmark an existing server instead of a throwaway instance (repeatable, one per engine): "
                   "postgresql://user@host:5432/db (password from PGPASSWORD or ~/.pgpass) or "
                   "mysql://user@host:3306/db (password from MYSQL_PWD or ~/.my.cnf); never a password in the URL. "
                   "pgbench tables are dropped and recreated unless --no-init.")
@click.option("--workload", "workload_names", callback=_names, metavar="LIST",
              help=f"Comma-separated workloads ({', '.join(workloads.WORKLOADS)}) "
                   "[default: postgres: the pgbench ones; mysql: the sysbench ones and mysqlslap].")
@click.option("--threads", "levels", callback=_levels, metavar="LIST",
              help="Thread levels, e.g. 1,4,16 [default: 1, 2, then 20/40/60/80/99 % of this machine's "
                   f"{hostinfo.hardware_threads()} hardware threads].")
@click.option("--clients-per-thread", type=click.IntRange(min=1), default=2, show_default=True,
              help="pgbench clients per thread (-c = threads x this); sysbench and mysqlslap use one per thread.")
@click.option("--duration", type=click.IntRange(min=1), default=60, show_default=True,
              help="Seconds per point (pgbench, sysbench; mysqlslap runs a number of queries instead).")
@click.option("--scale", type=click.IntRange(min=1), default=10, show_default=True,
              help="pgbench scale factor (100,000 accounts rows each); initialised once per run.")
@click.option("--tables", type=click.IntRange(min=1), default=4, show_default=True,
              help="sysbench tables; prepared once per run and engine.")
@click.option("--table-size", type=click.IntRange(min=1), default=10000, show_default=True,
              help="sysbench rows per table (the studies used 1000000 and 10000000).")
@click.option("--warehouses", type=click.IntRange(min=1), default=1, show_default=True,
              help="tpcc-like scale: warehouses (about 100 MB each); loaded once per run and engine.")
@click.option("--iterations", type=click.IntRange(min=1), default=1, show_default=True,
              help="mysqlslap --iterations.")
@click.option("--number-of-queries", type=click.IntRange(min=1), default=100000, show_default=True,
              help="mysqlslap --number-of-queries (in total over all clients).")
@click.option("--repeat", "repeats", type=click.IntRange(min=1), default=1, show_default=True,
              help="Run every point this many times, interleaved across points (not back to back).")
@click.option("--warmup", "warmup_s", type=click.IntRange(min=0), default=0, show_default=True, metavar="SECONDS",
              help="Before each point, a run with the same parameters for this long (stored apart, not a result), "
                   "then a CHECKPOINT (PostgreSQL) or FLUSH TABLES (MySQL).")
@click.option("--no-init", is_flag=True,
              help="Reuse the datasets already in the target instead of preparing them.")
@click.option("--pg-setting", "pg_settings", multiple=True, callback=_settings, metavar="NAME=VALUE",
              help="PostgreSQL setting for the throwaway instance (repeatable).")
@click.option("--mysql-setting", "mysql_settings", multiple=True, callback=_settings, metavar="NAME=VALUE",
              help="MySQL/MariaDB server variable for the throwaway instance (repeatable).")
@click.option("--pg-bindir", type=click.Path(file_okay=False, path_type=Path),
              help="Use the PostgreSQL binaries in this directory [default: the newest installed].")
@click.option("--label", help="Name for this run's results, e.g. the machine type [default: the host name].")
@click.option("--price-per-hour", type=click.FloatRange(min=0, min_open=True), metavar="USD",
              help="Hourly price of what is measured (instance, server rent / 730, managed service), "
                   "for price/performance in `dbarena report`.")
@click.option("--server-cores", type=click.IntRange(min=1), metavar="N",
              help="Physical cores of a --target's server (not visible from here), for per-core figures.")
@click.option("--server-threads", type=click.IntRange(min=1), metavar="N",
              help="Hardware threads (vCPUs) of a --target's server, for per-thread figures.")
@store_option
@click.option("--keep", is_flag=True, help="Leave the throwaway instances running and their directories in place.")
@click.option("--fail-fast", is_flag=True, help="Stop at the first failed point.")
def run(engine_names, targets, workload_names, levels, clients_per_thread, duration, scale, tables, table_size,
        warehouses, iterations, number_of_queries, repeats, warmup_s, no_init, pg_settings, mysql_settings, pg_bindir, label, price_per_hour,
        server_cores, server_threads, store, keep, fail_fast):
    """Run workloads across a concurrency sweep and store every point.

    Exit status: 0 all points ok, 1 some point failed, 2 bad option, 3 missing
    binaries or unreachable target, 130 interrupted (finished points are kept).
    """
    # Everything the user could get wrong is checked before anything starts.
    target_of: dict[str, str] = {}
    for url in targets:
        engine = engines.engine_of_url(url)
        if engine in target_of:
            raise UsageError(f"two --target URLs for engine {engine!r}; give one per engine")
        target_of[engine] = engines.get(engine).check_target_url(url)
    engine_names = engine_names or list(target_of) or ["postgres"]
    for engine in target_of:
        if engine not in engine_names:
            raise UsageError(f"--target {target_of[engine]} is a {engine} server, but --engine does not include {engine}")
    settings_of = {"postgres": pg_settings, "mysql": mysql_settings}
    for engine, option in (("postgres", "--pg-setting"), ("mysql", "--mysql-setting")):
        if settings_of[engine] and (engine in target_of or engine not in engine_names):
            raise UsageError(f"{option} applies to a throwaway {engine} instance only")
    if (server_cores or server_threads) and not target_of:
        raise UsageError("--server-cores/--server-threads describe a --target's server; a throwaway instance "
                         "runs here and is measured")
    if keep and len(target_of) == len(engine_names):
        raise UsageError("--keep applies to throwaway instances only, not to --target")
    levels = levels or plan.default_levels(hostinfo.hardware_threads())
    params = {"scale": scale, "tables": tables, "table_size": table_size, "warehouses": warehouses,
              "iterations": iterations,
              "queries": number_of_queries}
    plans = {}
    for engine in engine_names:
        chosen = workloads.resolve(workload_names or workloads.default_names(engine), engine)
        plans[engine] = plan.build(engine=engine, workloads=chosen, levels=levels,
                                   clients_per_thread=clients_per_thread, duration_s=duration, params=params,
                                   repeats=repeats)
    facts = hostinfo.host_facts()
    label = label or facts["hostname"]
    options = {
        "engines": engine_names, "targets": target_of, "workloads": workload_names, "threads": levels,
        "clients_per_thread": clients_per_thread, "duration_s": duration, "params": params, "repeats": repeats, "warmup_s": warmup_s,
        "init": not no_init,
        "pg_settings": pg_settings, "mysql_settings": mysql_settings, "fail_fast": fail_fast,
    }
    out = terminal.console()
    err = terminal.console(stderr=True)
    store_path = store.resolve()
    results = []
    run_ids = []
    with Store(store_path) as db:
        for engine in engine_names:
            points = plans[engine]
            bindir = pg_bindir if engine == "postgres" else None
            if engine in target_of:
                opened = engines.get(engine).external(target_of[engine], bindir=bindir)
            else:
                # Room for every client of the widest point, plus a few for dbarena itself.
                max_connections = max(151, max(p.clients for p in points) + 10)
                opened = engines.get(engine).throwaway(
                    settings={"max_connections": str(max_connections), **settings_of[engine]}, bindir=bindir, keep=keep)
            run_id = None
            try:
                with opened as tgt:
                    err.print(f"[dim]target: {escape(tgt.description)}[/]")
                    names = list(dict.fromkeys(p.workload for p in points))
                    err.print(f"[dim]{len(points)} points: {', '.join(names)} at threads "
                              f"{', '.join(map(str, levels))}, {duration} s each"
                              f"{f', {repeats} repeats interleaved' if repeats > 1 else ''}[/]")
                    tools = {workloads.binary(workloads.WORKLOADS[n].tool) for n in names}
                    tool_versions = {t: version_line(tgt.tool(t)) for t in sorted(tools)}
                    tool_versions.update(engines.get(engine).client_libraries())
                    run_id = db.begin_run(RunInfo(
                        label=label, host=facts["hostname"], engine=engine, target=tgt.url,
                        started_at=now_utc(), server_version=tgt.server_version,
                        tool_versions=tool_versions, options=options, host_facts=facts,
                        target_facts={**tgt.facts(), **({"server_physical_cores": server_cores} if server_cores
                                                        and not tgt.throwaway else {}),
                                      **({"server_hardware_threads": server_threads} if server_threads
                                         and not tgt.throwaway else {})},
                        price_per_hour=price_per_hour,
                    ))
                    run_ids.append(run_id)
                    with terminal.TerminalReporter(err, points) as reporter:
                        results += runner.run_sweep(target=tgt, plan=points, store=db, run_id=run_id,
                                                    reporter=reporter, fail_fast=fail_fast, init=not no_init,
                                                    warmup_s=warmup_s)
                    db.finish_run(run_id, "finished")
                    if keep and tgt.throwaway:
                        err.print(tgt.keep_note(), markup=False, soft_wrap=True)
            except (KeyboardInterrupt, Interrupted) as exc:
                if run_id is not None:
                    db.finish_run(run_id, "interrupted")
                stored = sum(len(db.points(run_id=r)) for r in run_ids)
                err.print(f"interrupted: {stored} finished point(s) kept in {store_path}", markup=False)
                raise SystemExit(ExitStatus.TERMINATED if isinstance(exc, Interrupted) else ExitStatus.INTERRUPTED)
            except BaseException:
                if run_id is not None:
                    db.finish_run(run_id, "failed")
                raise
            if fail_fast and any(not r.ok for r in results):
                break
        rows = [row for r in run_ids for row in analysis.load(db, run_id=r)]
        out.print(terminal.points_table(rows, title=f"{label}: run {', '.join(map(str, run_ids))}"))
        if repeats > 1:
            groups = analysis.summaries(rows)
            out.print(terminal.summary_table(groups))
            for line in terminal.warning_lines(groups):
                out.print(line)
    failed = sum(not r.ok for r in results)
    out.print(f"Results stored in {store_path} (run {', '.join(map(str, run_ids))}); show them with: "
              f"dbarena results --store {store_path}", markup=False, soft_wrap=True)
    if failed:
        err.print(f"{failed} point(s) failed; see the status column", markup=False)
        raise SystemExit(ExitStatus.POINTS_FAILED)


@cli.command()
@store_option
@click.option("--run", "run_id", type=int, help="Only this run's points.")
@click.option("--label", "labels", multiple=True, help="Only points with this label (repeatable).")
@click.option("--summary", is_flag=True,
              help="One line per label, engine, workload and threads over its repeats: median, mean, stdev, "
                   "95 % interval, coefficient of variation and warnings.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def results(store, run_id, labels, summary, as_json):
    """List stored points (or their summaries), with steady-state figures and warnings."""
    with _open_store(store) as db:
        rows = analysis.load(db, run_id=run_id, labels=tuple(labels))
    if summary:
        rows = analysis.summaries(rows)
    if as_json:
        click.echo(json.dumps([analysis.public(r) for r in rows], indent=2))
    elif not rows:
        click.echo("no points stored yet", err=True)
    elif summary:
        out = terminal.console()
        out.print(terminal.summary_table(rows))
        for line in terminal.warning_lines(rows):
            out.print(line)
    else:
        terminal.console().print(terminal.points_table(rows))


@cli.command()
@store_option
@click.argument("a")
@click.argument("b")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def compare(store, a, b, as_json):
    """Compare label B against label A at every point both measured.

    The ratio is B / A of the steady-state throughput, with a 95 % interval and a
    verdict from Welch's t-test; "not significant" means the data cannot tell them apart.
    """
    with _open_store(store) as db:
        rows = analysis.load(db, labels=(a, b))
    found = {r["label"] for r in rows}
    for label in (a, b):
        if label not in found:
            raise UsageError(f"no points labelled {label!r} in {store} (see `dbarena results`)")
    comparisons = analysis.compare_labels(rows, a, b)
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
@store_option
def import_command(files, label, engine, tool, workload, price_per_hour, store):
    """Bring results measured elsewhere into the store: pgbench, sysbench or mysqlslap
    outputs (one run or many appended in a file, with or without the command lines
    that produced them) and CSV files of summary rows (see the README for columns).

    A line that cannot be read is reported as FILE:LINE and nothing from that file is
    stored (exit 2); importing the same file twice adds nothing the second time.
    """
    failed = False
    with Store(store.resolve()) as db:
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
            run_ids = db.import_points(sha256, str(path), runs)
            if run_ids is None:
                click.echo(f"{path}: already imported (same content); nothing added")
            else:
                ok = sum(p.result.ok for p in points)
                click.echo(f"{path}: imported {len(points)} point(s) ({ok} ok, {len(points) - ok} failed) "
                           f"as run {', '.join(map(str, run_ids))}, label {', '.join(sorted({k[0] for k in groups}))}")
    if failed:
        raise SystemExit(ExitStatus.USAGE)


def _prices(ctx, param, values):
    prices = {}
    for item in values:
        label, sep, value = item.rpartition("=")
        try:
            prices[label] = float(value)
        except ValueError:
            raise click.BadParameter(f"{item!r} is not LABEL=USD_PER_HOUR") from None
        if not sep or not label or prices[label] <= 0:
            raise click.BadParameter(f"{item!r} is not LABEL=USD_PER_HOUR with a positive price")
    return prices


REPORT_FORMATS = ("html", "md", "csv", "json")


@cli.command()
@store_option
@click.option("--label", "labels", multiple=True, help="Labels to include, in this order (repeatable) [default: all].")
@click.option("--baseline", help="Label the others are compared against [default: the first label].")
@click.option("--price", "prices", multiple=True, callback=_prices, metavar="LABEL=USD_PER_HOUR",
              help="Hourly price of a label (repeatable); overrides the one stored with `run --price-per-hour`.")
@click.option("--at-threads", type=click.IntRange(min=1), metavar="N",
              help="Thread level for the price comparison and the per-second chart (study E used 16).")
@click.option("--format", "fmt", type=click.Choice(REPORT_FORMATS), help="[default: from -o's extension, else html]")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="File to write [default: dbarena-report.FORMAT]; Markdown charts go to FILE_files/.")
def report(store, labels, baseline, prices, at_threads, fmt, output):
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
        order = list(labels) or list(dict.fromkeys(r["label"] for r in rows))
        built = data.build(rows, db.runs(), baseline=baseline, prices=prices, at_threads=at_threads, labels=order)
        drawn = {}
        if fmt in ("html", "md"):
            for section in built.sections:
                samples = {label: db.samples(info["point_id"]) for label, info in section.series.items() if info}
                drawn[(section.engine, section.workload)] = charts.charts(section, samples)
    if fmt == "html":
        text = html.render(built, drawn)
    elif fmt == "md":
        text = markdown.render(built, drawn, output)
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


def _open_store(path: Path) -> Store:
    if not path.exists():
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
