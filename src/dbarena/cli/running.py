"""`run`, `cleanup` and `study`: running studies, and what they expand to."""

from __future__ import annotations

from dataclasses import replace

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console

from dbarena.run import preflight, request, session
from dbarena import study as study_mod
from dbarena.cli.app import cli, max_cost_option, max_instances_option, store_option
from dbarena.errors import ExitStatus, Interrupted, UsageError
from dbarena.host import hostinfo, probe
from dbarena.limits import MAX_SECONDS
from dbarena.interfaces import Reporter
from dbarena.lifecycle import state
from dbarena.lifecycle.cleanup import reap
from dbarena.report import listings, terminal
from dbarena.records import AnalysedPoint, JSONObject
from dbarena.stats import analysis, steadystate
from dbarena.store.database import Store
from dbarena.study import arguments, consent

if TYPE_CHECKING:
    from dbarena.exchange.like import Like


# Not a run flag (study/flags.py): it changes no point, only whether a study file may
# run commands or load code (study/consent.py). `fleet run` passes it, after `--`, to
# every host's `dbarena run`, and checks it itself before anything starts.
allow_commands_option = click.option(
    "--allow-commands", is_flag=True,
    help="Let the settings that run commands or load code (archive_command, shared_preload_libraries, "
         "plugin_load_add ...) and the bindir (binaries run from it) of a study file, a bundle (--like) or a stored "
         "run (--resume) through; without it such a study is refused. What you type yourself now (--pg-setting, "
         "--mysql-setting, --pg-bindir) needs no flag.")


@cli.command()
@arguments.run_options
@allow_commands_option
@store_option
@click.option("--no-init", is_flag=True,
              help="Reuse the datasets already in the target instead of preparing them.")
@click.option("--keep", is_flag=True, help="Leave the throwaway instances running and their directories in place.")
@click.option("--resume", is_flag=False, flag_value="latest", metavar="[RUN]",
              help="Continue an interrupted or partly failed run (RUN, or the latest such run in the store): its "
                   "plan as stored, only the points not stored ok, into the same runs. Flags or --study given "
                   "with it must describe the same plan.")
@click.option("--yes", "-y", is_flag=True,
              help="Start a study estimated over an hour without asking (only a terminal is asked).")
@click.option("--progress-file", type=click.Path(dir_okay=False, path_type=Path), hidden=True,
              help="Also write the progress as JSON to this file (what `dbarena fleet` reads on a host).")
@click.option("--machine-facts", "machine_facts", metavar="JSON", hidden=True, callback=lambda c, p, v: _machine(v),
              help="What the machine made for a study's [machines] is (a JSON object): recorded in each run's "
                   "options as it begins (what `run --study` of such a study passes to each host).")
@click.option("--no-system-metrics", is_flag=True, hidden=True,
              help="No once-a-second CPU, disk and memory sampling (bench/overhead measures its cost).")
@click.option("--no-server-metrics", is_flag=True,
              help="No once-a-second reading of the server's own statistics over SQL (wait events, commits, "
                   "blocks read, checkpoints, WAL; SHOW GLOBAL STATUS), and so no bound per point from them; "
                   "pgbench then reports each second itself (-P 1, as --client-progress), its series' only source.")
@click.option("--probe", "probe_s", type=click.IntRange(0, MAX_SECONDS), metavar="SECONDS",
              help=f"Probe this host (CPU, memory, fsync: `dbarena probe`) for this long before the first point; "
                   f"0: not [default: {probe.DEFAULT_SECONDS} s or a tenth of the estimated time, whichever is "
                   f"shorter; under {probe.MIN_SECONDS} s none; none when every engine is a --target].")
@click.option("--no-probe", is_flag=True, help="No host probe before the first point (--probe 0).")
@click.option("--like", "like_path", type=click.Path(dir_okay=False, path_type=Path), metavar="BUNDLE",
              help="Run a published bundle's study here (or on --target; flags given override it, e.g. --quick), "
                   "after saying what cannot be the same here; the bundle is verified and imported into the store "
                   "first, and the run decided against it as baseline.")
@max_cost_option
@max_instances_option
@click.option("--machines-poll", "machines_poll_s", type=click.FloatRange(min=0.5), default=10.0, hidden=True,
              help="With [machines]: how often the hosts' progress is read (as `fleet run --poll`).")
def run(store: Path | str, no_init: bool, keep: bool, resume: str | None, yes: bool, progress_file: Path | None,
        no_system_metrics: bool, no_server_metrics: bool, probe_s: int | None, no_probe: bool, allow_commands: bool,
        like_path: Path | None, max_cost: float | None, max_instances: int | None, machines_poll_s: float,
        machine_facts: JSONObject | None, **kwargs: Any) -> int:
    """Run a study, or the workloads of the flags, across a concurrency sweep; store every point.

    Before anything starts, one line says the study's points, machine time and disk
    space; a study whose datasets cannot fit where its throwaway instances keep their
    data is refused, and one estimated over an hour is confirmed first on a terminal
    (--yes: not asked).

    A study with [machines] runs on machines made for it (docs/cloud.md): its cost
    estimated and held to --max-cost / --max-instances before anything is made, then
    the machines made, the study run on each as `fleet run` does, and the machines
    deleted, also on failure, Ctrl-C or SIGTERM (exit status then as `fleet run`'s).

    Exit status: 0 all points ok, 1 some point failed, 2 bad option or study file (or
    a study that cannot fit, or a store that stopped taking writes: the point it could
    not take is saved for `dbarena import`), 3 missing binaries or unreachable target,
    130 interrupted or not confirmed (finished points are kept; `dbarena run --resume`
    continues).
    """
    # Everything the user could get wrong is checked before anything starts.
    asked = request.Asked(store, keep=keep, init=not no_init, resume=resume, like=like_path,
                          allow_commands=allow_commands, progress_file=progress_file, max_cost=max_cost,
                          max_instances=max_instances)
    resolved = request.resolve(asked, kwargs)
    if resolved.on_machines:
        return _on_machines(resolved.study, store, allow_commands, max_cost, max_instances, machines_poll_s)
    the_study, like = resolved.study, resolved.like
    out, err = terminal.console(), terminal.console(stderr=True)
    reporter: Reporter = terminal.TerminalReporter(err)
    if progress_file is not None:
        from dbarena.fleet.progress import ProgressFile, Tee

        reporter = Tee(reporter, ProgressFile(progress_file))
    request.refuse_foreign_store(store)
    # The whole study said, refused if it cannot fit, and confirmed if long: before
    # the store is opened (nothing stored, no store file made) or any server starts.
    probe_for = request.probe_seconds(probe_s, no_probe)
    facts = hostinfo.host_facts()
    if like is not None:  # what cannot be the same here, before anything starts
        from dbarena.exchange import like as like_mod

        for line in like_mod.differences(like, facts, _engine_versions(the_study),
                                         on_target=any(e.target for e in the_study.engines)):
            err.print(line, markup=False, soft_wrap=True)
    estimated = preflight.estimate(the_study, host_facts=facts, keep=keep, stored=resolved.already,
                                   probe_s=probe_for)
    refused = estimated.refusal()
    if refused:
        raise UsageError(refused)
    reporter.stage(estimated.line())
    if not _confirmed(estimated, yes, err):
        err.print("not started: nothing was run or stored", markup=False)
        return ExitStatus.INTERRUPTED
    with Store(store) as db:
        if like is not None and like_path is not None:
            from dbarena.exchange.importing import import_bundle

            imported = import_bundle(db, like_path)
            err.print(f"imported {like_path} as the baseline: {imported.runs} run(s), {imported.points} point(s) "
                      "added", markup=False, soft_wrap=True)
            if (recomputed := imported.verified.recomputed_line()) is not None:  # (another estimator's figures)
                err.print(recomputed, markup=False, soft_wrap=True)
        outcome = session.run(the_study, store=db, reporter=reporter, keep=keep, init=not no_init,
                              resume=resolved.invocation, system_metrics=not no_system_metrics,
                              server_metrics=not no_server_metrics, host_facts=facts,
                              estimated=estimated, machine=machine_facts)
        for note in outcome.notes:
            err.print(note, markup=False, soft_wrap=True)
        if outcome.exit_status in (ExitStatus.INTERRUPTED, ExitStatus.TERMINATED):
            # Every point of this `dbarena run`, those of earlier attempts too: a resume
            # interrupted before its first target opened has no run of its own yet, and
            # "0 finished point(s) kept" would read as if the stored ones were lost.
            stored = sum(len(db.points(run_id=r.id)) for r in db.invocation_runs(outcome.invocation))
            err.print(f"interrupted: {stored} finished point(s) kept in {store}; continue with: "
                      f"dbarena run --resume --store {store}", markup=False, soft_wrap=True)
            return outcome.exit_status
        _show_outcome(out, err, db, outcome, the_study, estimated, the_study.label or str(facts["hostname"]), like)
    out.print(f"Results stored in {store} (run {', '.join(map(str, outcome.run_ids))}); show them with: "
              f"dbarena results --store {store}", markup=False, soft_wrap=True)
    if outcome.failed:
        err.print(f"{outcome.failed} point(s) failed; see the status column", markup=False)
    return outcome.exit_status


def _show_outcome(out: Console, err: Console, db: Store, outcome: session.Outcome, the_study: study_mod.Study,
                  estimated: preflight.Estimate, label: str, like: Like | None) -> None:
    """What a finished run measured: its points, the precision reached, the summaries of
    its repeats or variants, and with --like the decision against the bundle's runs."""
    rows = [row for r in outcome.run_ids for row in analysis.load(db, run_id=r)]
    if preflight.short_for_steady_state(the_study, estimated.plans) is not None:
        rows = _without_short_series(rows)  # said once, before the first point (preflight.quick_note)
    if outcome.skipped:
        err.print(f"resumed: {outcome.skipped} point(s) were stored already and not run again", markup=False)
    terminal.show(out, listings.points_table(rows, title=f"{label}: run {', '.join(map(str, outcome.run_ids))}"))
    if outcome.precision:
        terminal.show(out, listings.precision_table(outcome.precision, the_study.precision))
    if the_study.repeats > 1 or the_study.precision or len(the_study.variants) > 1:
        groups = analysis.summaries(rows, histograms=db.latency_histograms)
        terminal.show(out, listings.summary_table(groups))
        for line in listings.warning_lines(groups):
            out.print(line)
    if like is not None and outcome.run_ids:
        from dbarena.exchange import like as like_mod

        for line in like_mod.decided_lines(db, like_mod.bundle_runs(db, like), list(outcome.run_ids), like):
            out.print(line, markup=False, soft_wrap=True)


def _machine(text: str | None) -> JSONObject | None:
    """--machine-facts: a JSON object, or a one-line error."""
    if text is None:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise click.BadParameter("expected a JSON object (what `run --study` of a [machines] study passes)")
    return value


# The options of `run` a study with [machines] passes on to each host's `dbarena run`
# (as `fleet run -- ...` would); the others are the controller's own.
_MACHINES_OWN = {"store", "yes", "max_cost", "max_instances", "machines_poll_s", "machine_facts",
                 arguments.STUDY_OPTION}


def _on_machines(the_study: study_mod.Study, store_path: Path | str, allow_commands: bool, max_cost: float | None,
                 max_instances: int | None, poll_s: float) -> int:
    """`run --study` of a study with [machines]: the cost guard before any provider is
    called, then the machines made, the fleet run on them, and everything deleted
    (cloud/ondemand.py). Exit status as `fleet run`'s."""
    from dbarena.cloud import estimate as estimate_mod
    from dbarena.cloud import machines as machines_mod
    from dbarena.cloud import ondemand

    consent.check(the_study, allow_commands)
    ondemand.check(the_study, max_cost, max_instances)  # refused here: nothing created, no provider called
    ctx = click.get_current_context()
    if ctx.params.get("label"):
        raise UsageError("--label does not go with a study with [machines]: each host's runs are labelled by its "
                         "instance type")
    args: list[str] = []
    for param in ctx.command.params:
        if param.name in _MACHINES_OWN or param.name is None or \
                ctx.get_parameter_source(param.name) != click.core.ParameterSource.COMMANDLINE:
            continue
        value, flag = ctx.params[param.name], param.opts[-1]
        if isinstance(param, click.Option) and param.is_flag:
            args += [flag] if value else []
        elif isinstance(value, (tuple, list)):
            args += [part for v in value for part in (flag, str(v))]
        elif value is not None:
            args += [flag, str(value)]
    if not Path(the_study.source).is_file():
        raise UsageError(f"{the_study.source}: a study with [machines] runs from its file (copied to the hosts)")
    estimated, _ = machines_mod.checked_estimate(the_study, max_cost, max_instances)
    for line in estimate_mod.describe(estimated):
        click.echo(line, err=True)
    try:
        ended = ondemand.run(the_study, Path(the_study.source), args, store_path, lambda line: click.echo(line),
                             max_cost=max_cost, max_instances=max_instances, poll_s=poll_s)
    except (KeyboardInterrupt, Interrupted) as exc:
        # The machines are deleted by now (ondemand.run's teardown), what the hosts had
        # stored fetched first: said in one line, not click's "aborted".
        click.echo(f"interrupted: what it made is deleted; what the hosts had measured, if anything, was fetched "
                   f"into {store_path} first (their runs marked interrupted)", err=True)
        return ExitStatus.TERMINATED if isinstance(exc, Interrupted) else ExitStatus.INTERRUPTED
    click.echo(f"machines of run {ended.run} deleted in {ended.delete_s:.1f} s; results in {store_path}: "
               f"dbarena results --store {store_path}")
    return ended.status


def _engine_versions(the_study: study_mod.Study) -> dict[str, str | None]:
    """The version of each throwaway engine's binaries here (what --like compares with
    the bundle's before anything starts); None where a --target serves the engine or
    the binaries do not say (the run then says what is missing)."""
    from dbarena import engines

    return {e.name: None if e.target else engines.first(e.name).version_here(Path(e.bindir) if e.bindir else None)
            for e in the_study.engines}


# A study estimated over this long is confirmed first on a terminal.
CONFIRM_OVER_S = 3600


def _confirmed(estimated: preflight.Estimate, yes: bool, err: Console) -> bool:
    """Whether to start: a study estimated over an hour is asked about on a terminal
    (Ctrl-C or "n": not started); elsewhere (a pipe, cron, the fleet) it starts, and
    says why it did not ask."""
    # (--slo's search over offered rates comes after the closed-loop points: counted too.)
    search, search_max = (estimated.search.seconds, estimated.search.max_seconds) if estimated.search else (0.0, 0.0)
    typical = estimated.seconds + search
    longest = (estimated.max_seconds if estimated.max_seconds is not None else estimated.seconds) + search_max
    if yes or typical <= CONFIRM_OVER_S:
        return True
    took = preflight.duration_words(typical)
    if longest > typical:
        took = f"{took} to {preflight.duration_words(longest)}"
    if not (sys.stdin.isatty() and err.is_terminal):
        err.print(f"estimated {took}; not a terminal, so not asking: starting", markup=False)
        return True
    try:
        return click.confirm(f"estimated {took} of machine time: start now? (--yes: do not ask)", default=False,
                             err=True)
    except click.Abort:  # Ctrl-C or end of input at the prompt
        err.print("")
        return False


def _without_short_series(rows: list[AnalysedPoint]) -> list[AnalysedPoint]:
    """The points without the short-series warning --quick's own short points earn on
    every point: the run said it once instead (stored points keep it)."""
    code = steadystate.Warning_.SHORT_SERIES.value
    return [replace(r, warnings=[w for w in r.warnings if w["code"] != code]) for r in rows]


@cli.command()
@click.option("--dry-run", is_flag=True, help="List what would be removed; change nothing.")
def cleanup(dry_run: bool) -> None:
    """Remove what dbarena runs left behind: throwaway instances kept with --keep, and
    those of killed runs (which every command removes anyway), marking their runs
    interrupted. Instances of runs still going are listed and left alone. A run whose
    store cannot be written or reached now is given up on: it shows as running until
    `dbarena run --resume` continues it (every other command tries again instead)."""
    say = click.echo
    found = 0
    for path, data in state.records(say):
        if data.get("kept") or state.orphaned(data):
            reap(path, data, say, dry_run=dry_run, give_up=True)
            found += 1
        else:
            what = data.get("top") or data.get("path") or (
                f"SMT switched from {data.get('original')} ({data.get('control')})" if data.get("kind") == "smt"
                else f"run {data.get('run_id')} in {data.get('store')}")
            say(f"in use by process {data['owner_pid']}: {what}")
    if not found:
        say(f"nothing to clean up (state directory {state.state_dir()})")



@cli.group("study")
def study_group() -> None:
    """Study files: a whole benchmark protocol in one TOML file (see `dbarena study show seed-a`)."""


@study_group.command("list")
def study_list() -> None:
    """The bundled studies, one line each."""
    for name, text in study_mod.bundled().items():
        s = study_mod.parse(text, f"bundled study {name}")
        click.echo(f"{name:10} {s.title}")


@study_group.command("show")
@click.argument("name")
def study_show(name: str) -> None:
    """Print a bundled study (or a study file) as an editable, commented TOML file."""
    text, _, _ = study_mod.read_text(name)
    click.echo(text, nl=False)


@study_group.command("check")
@click.argument("file", metavar="[FILE|NAME]", required=False)
@arguments.run_options
@allow_commands_option
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
def study_check(file: str | None, as_json: bool, allow_commands: bool, **kwargs: Any) -> int:
    """Check a study file and show the plan it expands to on this machine: engines,
    workloads, levels, points, the estimated machine time and disk space. The study is
    the argument or --study (a file or a bundled study's name); without either, the
    study the flags alone make. Flags are applied as `run` would apply them (lowest
    first: defaults < file < --quick < flags).

    Nothing of the study runs here: a bindir it names is not run (setting names are
    checked with this machine's own binaries), and what it holds that runs commands or
    loads code is listed, with exit status 2 unless --allow-commands is given, as `run`
    would refuse it."""
    from dbarena.run import studycheck

    given = kwargs.get(arguments.STUDY_OPTION)
    if file is not None and given is not None and file != given:
        raise UsageError(f"two studies given: {file!r} and --study {given!r}; give one")
    kwargs[arguments.STUDY_OPTION] = file if file is not None else given
    the_study = arguments.study_from_values(kwargs)
    estimated = preflight.estimate(consent.checkable(the_study))
    summary = studycheck.summarise(the_study, estimated.plans, estimated, allow_commands=allow_commands)
    cost = None
    if the_study.machines is not None:
        from dbarena.cloud import catalogue, estimate

        cost = estimate.estimate(the_study, catalogue.for_machines(the_study.machines, the_study.source))
        summary["machines"] = cost.as_json()
    if as_json:
        click.echo(json.dumps(summary, indent=2))
    else:
        click.echo(studycheck.render(summary))
        if cost is not None:
            from dbarena.cloud.estimate import describe
            from dbarena.limits import visible

            click.echo("\n" + "\n".join(map(visible, describe(cost))))
    # `run` would refuse it on this machine: the plan is shown, and the status says so.
    return ExitStatus.USAGE if summary["refused"] or summary["commands"]["refused"] else ExitStatus.OK


