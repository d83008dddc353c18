"""The command line: parse options, call the library, map errors to exit statuses.

Every anticipated error becomes one line on stderr (`dbarena: error: ...`) and the
exit status of errors.ExitStatus; no traceback.
"""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

import click

from dbarena import __version__, engines, hostinfo, plan, runner, workloads
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
    """Benchmark PostgreSQL across machines and settings; store and compare every result.

    Start with `dbarena run` (a throwaway local PostgreSQL, pgbench at every
    concurrency level of this machine), then `dbarena results`.
    """


@cli.command()
@click.option("--engine", type=click.Choice(sorted(engines.ENGINES)), default="postgres", show_default=True,
              help="Database engine to benchmark.")
@click.option("--target", metavar="URL",
              help="Benchmark an existing server, e.g. postgresql://user@host:5432/db, instead of a throwaway "
                   "instance. The password comes from PGPASSWORD or ~/.pgpass, never from the URL. "
                   "Its pgbench tables are dropped and recreated unless --no-init.")
@click.option("--workload", "workload_names", callback=_names, metavar="LIST",
              help=f"Comma-separated workloads [default: all of the engine's: {', '.join(workloads.WORKLOADS)}].")
@click.option("--threads", "levels", callback=_levels, metavar="LIST",
              help="Thread levels, e.g. 1,4,16 [default: 1, 2, then 20/40/60/80/99 % of this machine's "
                   f"{hostinfo.hardware_threads()} hardware threads].")
@click.option("--clients-per-thread", type=click.IntRange(min=1), default=2, show_default=True,
              help="pgbench clients per thread (-c = threads x this).")
@click.option("--duration", type=click.IntRange(min=1), default=60, show_default=True,
              help="Seconds per point.")
@click.option("--scale", type=click.IntRange(min=1), default=10, show_default=True,
              help="pgbench scale factor (100,000 accounts rows each); initialised once per run.")
@click.option("--no-init", is_flag=True,
              help="Reuse the dataset already in the target instead of initialising it.")
@click.option("--pg-setting", "pg_settings", multiple=True, callback=_settings, metavar="NAME=VALUE",
              help="PostgreSQL setting for the throwaway instance (repeatable).")
@click.option("--pg-bindir", type=click.Path(file_okay=False, path_type=Path),
              help="Use the PostgreSQL binaries in this directory [default: the newest installed].")
@click.option("--label", help="Name for this run's results, e.g. the machine type [default: the host name].")
@store_option
@click.option("--keep", is_flag=True, help="Leave the throwaway instance running and its directory in place.")
@click.option("--fail-fast", is_flag=True, help="Stop at the first failed point.")
def run(engine, target, workload_names, levels, clients_per_thread, duration, scale, no_init,
        pg_settings, pg_bindir, label, store, keep, fail_fast):
    """Run workloads across a concurrency sweep and store every point.

    Exit status: 0 all points ok, 1 some point failed, 2 bad option, 3 missing
    binaries or unreachable target, 130 interrupted (finished points are kept).
    """
    # Everything the user could get wrong is checked before anything starts.
    chosen = workloads.resolve(workload_names or workloads.default_names(engine), engine)
    if target is not None:
        engines.get(engine).check_target_url(target)
        if pg_settings:
            raise UsageError("--pg-setting applies to the throwaway instance only, not to --target")
        if keep:
            raise UsageError("--keep applies to the throwaway instance only, not to --target")
    levels = levels or plan.default_levels(hostinfo.hardware_threads())
    points = plan.build(engine=engine, workloads=[w.name for w in chosen], levels=levels,
                        clients_per_thread=clients_per_thread, duration_s=duration, scale=scale)
    facts = hostinfo.host_facts()
    label = label or facts["hostname"]
    options = {
        "engine": engine, "target": target or "throwaway", "workloads": [w.name for w in chosen],
        "threads": levels, "clients_per_thread": clients_per_thread, "duration_s": duration,
        "scale": scale, "init": not no_init, "pg_settings": pg_settings, "fail_fast": fail_fast,
    }
    out = terminal.console()
    err = terminal.console(stderr=True)

    module = engines.get(engine)
    if target is not None:
        opened = module.external(target, bindir=pg_bindir)
    else:
        max_clients = max(p.clients for p in points)
        settings = {"max_connections": str(max(100, max_clients + 10)), **pg_settings}
        opened = module.throwaway(settings=settings, bindir=pg_bindir, keep=keep)

    store_path = store.resolve()
    run_id = None
    results = []
    with Store(store_path) as db:
        try:
            with opened as tgt:
                err.print(f"[dim]target: {tgt.description}[/]")
                err.print(f"[dim]{len(points)} points: {', '.join(w.name for w in chosen)} at threads "
                          f"{', '.join(map(str, levels))}, {duration} s each[/]")
                tool_versions = {t.TOOL: version_line(tgt.tool(t.TOOL)) for t in {w.tool for w in chosen}}
                run_id = db.begin_run(RunInfo(
                    label=label, host=facts["hostname"], engine=engine, target=tgt.url,
                    started_at=now_utc(), server_version=tgt.server_version,
                    tool_versions=tool_versions, options=options, host_facts=facts,
                ))
                with terminal.TerminalReporter(err, points) as reporter:
                    results = runner.run_sweep(target=tgt, plan=points, store=db, run_id=run_id,
                                               reporter=reporter, fail_fast=fail_fast, init=not no_init)
                db.finish_run(run_id, "finished")
                if keep and tgt.throwaway:
                    err.print(tgt.keep_note(), markup=False)
        except (KeyboardInterrupt, Interrupted) as exc:
            if run_id is not None:
                db.finish_run(run_id, "interrupted")
            stored = len(db.points(run_id=run_id)) if run_id is not None else 0
            err.print(f"interrupted: {stored} finished point(s) kept in {store_path}", markup=False)
            raise SystemExit(ExitStatus.TERMINATED if isinstance(exc, Interrupted) else ExitStatus.INTERRUPTED)
        except BaseException:
            if run_id is not None:
                db.finish_run(run_id, "failed")
            raise
        out.print(terminal.points_table(db.points(run_id=run_id), title=f"run {run_id}: {label}"))
    failed = sum(not r.ok for r in results)
    out.print(f"Results stored in {store_path} (run {run_id}); show them with: "
              f"dbarena results --store {store_path}", markup=False, soft_wrap=True)
    if failed:
        err.print(f"{failed} point(s) failed; see the status column", markup=False)
        raise SystemExit(ExitStatus.POINTS_FAILED)


@cli.command()
@store_option
@click.option("--run", "run_id", type=int, help="Only this run's points.")
@click.option("--label", "labels", multiple=True, help="Only points with this label (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array of points instead of a table.")
def results(store, run_id, labels, as_json):
    """List stored points."""
    if not store.exists():
        raise UsageError(f"no results store at {store} (run `dbarena run` first, or pass --store)")
    with Store(store) as db:
        rows = db.points(run_id=run_id, labels=tuple(labels))
    if as_json:
        click.echo(json.dumps(rows, indent=2))
    elif not rows:
        click.echo("no points stored yet", err=True)
    else:
        terminal.console().print(terminal.points_table(rows))


def _raise_on_sigterm(signum, frame):
    raise Interrupted()


def main(argv: list[str] | None = None) -> None:
    if threading_is_main():
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


def threading_is_main() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def _fail(message: str, status: int) -> None:
    click.echo(f"dbarena: error: {' '.join(message.split())}", err=True)
    sys.exit(status)
