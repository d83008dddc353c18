"""The commands that read and write results: `results`, `compare`, `import`, `merge`,
`store info`, `store migrate`, `store forget`, `report`, `hostinfo`."""

from __future__ import annotations

import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import click

from dbarena import atomic, engines, workloads
from dbarena.importers import reading
from dbarena.cli.app import StoreLocation, cli, open_store, store_option
from dbarena.errors import ExitStatus, UsageError
from dbarena.host import hostinfo
from dbarena.importers import workloadnames
from dbarena.lifecycle import state
from dbarena.limits import MAX_COUNT, MAX_THREADS, listed, printable, quoted
from dbarena.report import export, listings, terminal
from dbarena.stats import analysis, configkey, loadgens, metric, storedcompare
from dbarena.store.info import info
from dbarena.store.merge import merge as merge_stores
from dbarena.records import Summarised, json_object
from dbarena.store.database import Store

if TYPE_CHECKING:  # imported where used (_prices), as before: not at every command's start
    from dbarena.records import AnalysedPoint
    from dbarena.stats.price import Price
    from dbarena.importers.storing import ImportOptions


def _say(text: str = "", **options: Any) -> None:
    """click.echo of a line that quotes what users and tools wrote (labels, paths,
    notes): nothing in it acts on a terminal (limits.printable)."""
    click.echo(printable(text, keep="\n"), **options)


@cli.command()
@click.argument("others", nargs=-1, required=True, type=StoreLocation(), metavar="STORE...")
@store_option
def merge(others: tuple[Path | str, ...], store: Path | str) -> None:
    """Bring other stores' runs into this one: points, per-second series, raw outputs,
    studies, hosts. Runs already here are skipped (merging twice adds nothing), as are
    runs forgotten here (`store forget`); runs forgotten in another store are forgotten
    here too, each said in one line. An older store is read through a migrated copy, a
    newer one is refused; each file is merged
    whole or not at all, but for rows that do not fit their columns (each said in one
    line and left out, a run's points with it). Either side may be an SQLite file or a
    PostgreSQL URL."""
    target = store
    with Store(target) as db:
        for other in others:
            # What a merge says of forgotten runs (`store forget`), one line a run: said
            # before its count, which they explain.
            told: list[str] = []
            runs, points = merge_stores(db, other, tell=told.append, scratch=state.temporary)
            for line in told:
                _say(line)
            _say(f"{other}: {runs} run(s), {points} point(s) merged into {target}"
                 + ("" if runs or told else " (all its runs were here already)"))


@cli.group("store")
def store_group() -> None:
    """The results store itself."""


@store_group.command("migrate")
@store_option
def store_migrate(store: Path | str) -> None:
    """Bring a store written by an older dbarena to this one's schema, in place (every
    command that writes does so first; reading commands read an older SQLite store
    through a copy migrated in memory, and refuse an older PostgreSQL one); then
    summarise the sessions of every run that has no summaries at this schema, and each
    label's configurations over them (what the views read first), so that the first
    read after it need not."""
    if isinstance(store, Path) and not store.exists():
        raise UsageError(f"no results store at {store}")
    with Store(store, create=False) as db:
        _say(f"{store}: schema version {db.version}")
        stale = analysis.summarise_all(db)
        if stale:
            _say(f"{store}: the sessions of {stale} run(s) summarised")


@store_group.command("info")
@store_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def store_info(store: Path | str, as_json: bool) -> None:
    """Schema version, counts, size and labels of a store."""
    with open_store(store) as db:
        facts = info(db)
    if as_json:
        click.echo(export.dumps(facts, indent=2))
        return
    for key, value in facts.items():
        shown = ", ".join(value) if isinstance(value, list) else f"{value:,}" if isinstance(value, int) else value
        _say(f"{key:28} {shown}")



# Ids and levels bounded as every number at the edge (limits.py): an id past SQLite's
# INTEGER is an OverflowError in the query otherwise.
_ID = click.IntRange(min=1, max=MAX_COUNT)


@store_group.command("forget", short_help="Remove runs with their points; no merge brings them back.")
@click.option("--run", "run_ids", multiple=True, type=_ID, metavar="N", help="A run to forget (repeatable).")
@click.option("--label", "labels", multiple=True, metavar="L",
              help="Forget every run of this label (repeatable). More than one run is asked about on a terminal; "
                   "elsewhere it needs --yes.")
@click.option("--yes", "-y", is_flag=True, help="Forget the runs a --label names without asking.")
@store_option
def store_forget(run_ids: tuple[int, ...], labels: tuple[str, ...], yes: bool, store: Path | str) -> int | None:
    """Remove runs from the store: each run with its points, per-second series, latency
    histograms, the server's series, raw outputs, cached figures and its place in the
    record of imported files, all in one transaction. A tombstone (the run's UUID) stays,
    so that `dbarena merge` never brings a forgotten run back, and carries the forgetting
    into the store it merges into. A run still running is refused. A file whose runs
    are all forgotten can be imported again: as new runs."""
    if not run_ids and not labels:
        raise UsageError("store forget: name the runs: --run N (repeatable) or --label L")
    if isinstance(store, Path) and not store.exists():
        raise UsageError(f"no results store at {store}")
    with Store(store, create=False) as db:
        by_label: list[int] = []
        for label in labels:
            found = db.label_run_ids(label)
            if not found:
                stored = list(dict.fromkeys(r.label for r in db.runs()))
                raise UsageError(f"no label {quoted(label)} in the store; stored: {listed(stored) or 'none'}")
            by_label.extend(found)
        wanted = list(dict.fromkeys([*run_ids, *by_label]))
        for run in filter(None, map(db.run, wanted)):
            if run.status != "running":
                continue
            # A run still being written: removing it under its dbarena would fail its next
            # point. Its owner is checked where it can be (this machine); a shared store's
            # run owned by another machine may be running there: refused too.
            owner = json_object(run.options.get("owner"))
            if state.owner_alive(owner):
                raise UsageError(f"run {run.id} is still running (process {owner.get('pid')}): "
                                 "forget it once it has ended")
            host = owner.get("host")
            if db.postgresql and isinstance(host, str) and host and host != socket.gethostname():
                raise UsageError(f"run {run.id} is running on {host} (process {owner.get('pid')}), which cannot be "
                                 "checked from here: forget it once it has ended there")
        if len(set(by_label)) > 1 and not yes and not _confirmed_forget(labels, sorted(set(by_label))):
            _say("nothing forgotten", err=True)
            return ExitStatus.INTERRUPTED
        gone = db.forget_runs(wanted)
    for forgotten in gone:
        _say(f"forgot {forgotten.named()}: {forgotten.points} point(s)"
             + ("" if forgotten.uuid else " (it had no UUID: a merge of a store holding it may bring it back)"))
    _say(f"{store}: {len(gone)} run(s), {sum(r.points for r in gone)} point(s) forgotten; "
         "a merge will not bring them back")
    return None


def _confirmed_forget(labels: tuple[str, ...], run_ids: list[int]) -> bool:
    """Whether to forget the runs a --label names, more than one: asked on a terminal
    (Ctrl-C or "n": nothing forgotten); refused elsewhere (a script's --label that
    matches more than it meant would remove them for good), where --yes says so."""
    what = f"{len(run_ids)} runs of label {', '.join(map(repr, labels))} (runs {', '.join(map(str, run_ids))})"
    if not sys.stdin.isatty():
        raise UsageError(f"--label would forget {what}: add --yes to forget them")
    try:
        return click.confirm(f"forget {what}, with their points, for good? (--yes: do not ask)", default=False,
                             err=True)
    except click.Abort:  # Ctrl-C or end of input at the prompt
        click.echo("", err=True)
        return False


@cli.command()
@store_option
@click.option("--run", "run_id", type=_ID, help="Only this run's points.")
@click.option("--label", "labels", multiple=True, help="Only points with this label (repeatable).")
@click.option("--study", "study_name", metavar="NAME", help="Only points of this study (its name or hash prefix).")
@click.option("--variant", "variants", multiple=True, help="Only points of this variant (repeatable).")
@click.option("--summary", is_flag=True,
              help="One line per label and configuration over its repeats: median, mean, stdev, "
                   "95 % interval, coefficient of variation and warnings. Points of different "
                   "configurations (parameters, settings, variant, server version, host) are never pooled.")
@click.option("--figures", is_flag=True,
              help="With --summary: every stored figure over the repeats, a line each (TPS, QPS, average "
                   "latency, each percentile, as printed per run or computed by dbarena): n, median, mean "
                   "and spread. Percentiles in --summary itself come from merged histograms; where there are "
                   "none, this is what the runs printed.")
@click.option("--parts", is_flag=True,
              help="For points several load generators drove at once (fleet run --together): each one's "
                   "share (host, threads, TPS, latency, its CPU) and whether they or the server were the bound.")
@click.option("--json", "as_json", is_flag=True,
              help="Print JSON instead of a table (with --summary, `over_repeats` holds every figure's "
                   "statistics, each labelled).")
@click.option("--csv", "as_csv", is_flag=True,
              help="Print CSV instead of a table: a record per point, or with --summary per configuration, "
                   "every figure's statistics over the repeats in columns such as qps_median and "
                   "latency_p95_ms_mean.")
@click.option("--wide", is_flag=True, help="Every column (clients, repeat, QPS, intervals, latencies, failed "
                                           "transactions, errors; config key, printed median, mean, stdev, the "
                                           "interval itself), however wide [default: the columns that fit the "
                                           "terminal, at least 100 columns wide, without breaking a cell].")
@click.option("--raw", "raw_point", type=_ID, metavar="POINT",
              help="Print one point's raw tool output (stderr, then stdout) as the tool printed it.")
def results(store: Path | str, run_id: int | None, labels: tuple[str, ...], study_name: str | None,
            variants: tuple[str, ...], summary: bool, figures: bool, parts: bool, as_json: bool, as_csv: bool,
            wide: bool, raw_point: int | None) -> None:
    """List stored points (or their summaries), with steady-state figures and warnings."""
    if figures and not summary:
        raise UsageError("--figures goes with --summary (it shows each summary's figures over its repeats)")
    if as_json and as_csv:
        raise UsageError("give --json or --csv, not both")
    if parts and (summary or as_json or as_csv):
        raise UsageError("--parts is a table of the points' load generators: --summary, --json and --csv "
                         "do not go with it (--json has each point's details.together.parts)")
    if raw_point is not None:
        with open_store(store) as db:
            out, err = db.raw_output(raw_point)
        # As the tool printed it; on a terminal, without what would act on it (an ESC
        # sequence in an imported file's output): redirected, byte for byte.
        text = err + out
        click.echo(printable(text, keep="\n\t") if terminal.is_terminal() else text, nl=False)
        return
    with open_store(store) as db:
        stored = analysis.check_names(db, run_id=run_id, labels=tuple(labels), study=study_name,
                                      variants=tuple(variants))
        # A summary from the store's summaries of the sessions, not every point's row.
        groups = analysis.stored_summaries(db, run_id=run_id, labels=tuple(labels), study=study_name,
                                           variants=tuple(variants)) if summary else []
        points = [] if summary else analysis.load(db, run_id=run_id, labels=tuple(labels), study=study_name,
                                                  variants=tuple(variants))
    if as_json or as_csv:
        exported = [s.as_json() for s in groups] if summary else [p.as_json() for p in points]
        click.echo(export.dumps(exported, indent=2) if as_json else export.rows_csv(exported, summary=summary),
                   nl=not as_csv)
    elif not points and not groups:
        # Every name matched something (check_names): only their combination matches nothing.
        click.echo("no points match these filters together" if stored else "no points stored yet", err=True)
    elif parts:
        driven = [r for r in points if loadgens.parts(r)]
        if not driven:
            raise UsageError("no point here was driven by several load generators (fleet run --together)")
        terminal.show(terminal.console(), listings.parts_table(driven, wide=wide))
    elif figures:
        terminal.show(terminal.console(), listings.figures_table(groups, wide=wide))
    elif summary:
        console = terminal.console()
        terminal.show(console, listings.summary_table(groups, wide=wide))
        for line in listings.warning_lines(groups):
            console.print(line)
    else:
        terminal.show(terminal.console(), listings.points_table(points, wide=wide))


@cli.command()
@store_option
@click.argument("a")
@click.argument("b")
@click.option("--about", "about", multiple=True, type=click.Choice(sorted(configkey.ABOUT)),
              help="What else the comparison is about, so that keys may differ in it too (repeatable) "
                   "[default: host for two labels, variant for two variants].")
@click.option("--study", "study_name", metavar="NAME", help="Only points of this study (its name or hash prefix).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table (the level-by-level rows).")
@click.option("--format", "fmt", type=click.Choice(("text", "md")), default="text", show_default=True,
              help="md: the decision as Markdown, short enough for a pull-request comment or an article.")
@click.option("--wide", is_flag=True, help="Every column of the level table (the metric too), however wide "
                                           "[default: the columns that fit the terminal without breaking a cell].")
def compare(store: Path | str, a: str, b: str, about: tuple[str, ...], study_name: str | None,
            as_json: bool, fmt: str, wide: bool) -> None:
    """Compare B against A: two labels (hosts), or two variants of a study.

    Only points whose configuration keys match apart from what the comparison is about
    are compared; elsewhere the row names the fields that differ instead of a ratio.
    The ratio is B / A of the steady-state throughput; of the capacities where both
    searched one at a latency objective (--slo); of the p95 latency where both were
    offered one fixed rate (--rate; below 1 is faster). Each side's figure is its mean
    over sessions (a session: one stored run). With 2 or more sessions a side, or
    earlier sessions of the same configuration in the store, it comes with a 95 %
    interval and a verdict from a t-test on the sessions' means ("no difference" when
    the interval lies within ±5 %, "inconclusive" when it reaches past it: the data
    cannot tell them apart); without, the row says why (JSON: verdict null and the
    reason).

    First comes the decision: per engine and workload, worst first, the geometric mean
    of the level ratios with its 95 % interval and verdict, and one line across
    workloads; then the level-by-level table.
    """
    with open_store(store) as db:
        analysis.check_names(db, study=study_name)
        found = storedcompare.compared(db, a, b, about, study_name)
        comparisons = found.comparisons
        if not comparisons:
            raise UsageError(_nothing_in_common(analysis.load(db, study=study_name), a, b))
        from dbarena.report import decision as decision_text
        from dbarena.stats import decision

        if as_json:
            click.echo(export.dumps([c.as_json() for c in comparisons], indent=2))
            return
        # (The whole records of the points a "why" names, read for it.)
        decided = decision.decide(comparisons, found.rows, records=lambda ids: analysis.load(db, point_ids=tuple(ids)),
                                  located=found.located)
    overall = [line for line in (decision.overall(decided),) if line is not None]
    if fmt == "md":
        _say(decision_text.markdown(decided, overall), nl=False)
        return
    console = terminal.console()
    for line in decision_text.lines(decided, overall, width=max(console.width, 60)):
        _say(line)
    click.echo()
    terminal.show(console, listings.comparison_table(comparisons, wide=wide))
    for line in listings.profile_change_lines(comparisons):
        _say(line)


def _nothing_in_common(rows: Sequence[Summarised], a: str, b: str) -> str:
    """Why `compare a b` has no row: sides judged by different metrics (a pgbench TPS
    against a HammerDB NOPM) are not comparable, whatever their workloads; else they
    share no point."""
    def judged(side: str) -> set[str]:
        return {r.metric for r in rows if r.status == "ok" and side in (r.label, r.variant)}

    of_a, of_b = judged(a), judged(b)
    if of_a and of_b and not of_a & of_b:
        reason = metric.comparable(sorted(of_a)[0], sorted(of_b)[0])
        return f"{a!r} and {b!r} are {reason}"
    if any(r.slo is not None for r in rows if r.status == "ok" and {r.label, r.variant} & {a, b}):
        # (analysis.compare: an offered rate a search tried is a step of its closed-loop point's search.)
        return (f"{a!r} and {b!r} have no point (engine, workload, threads) in common: the offered rates a --slo "
                "search tried are compared only through the capacity the search found, at its closed-loop point")
    return f"{a!r} and {b!r} have no point (engine, workload, threads) in common"


@cli.command("import")
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--label", help="Label for the imported results (a CSV 'label' column overrides it); required but "
                              "for bundles, whose runs keep their own.")
@click.option("--engine", type=click.Choice(sorted(engines.ENGINES)),
              help="Engine of runs whose output does not say (sysbench without a --db-driver command line).")
@click.option("--tool", type=click.Choice(("auto", *reading.TOOLS)), default="auto", show_default=True,
              help="Tool that wrote the files [default: recognised from the text].")
@click.option("--workload", help="Workload of runs whose output does not say which: "
              + ", ".join([*workloads.WORKLOADS, *workloadnames.IMPORTED_ONLY]) + "; or the tool's own name, stored as "
              "dbarena's: " + ", ".join(workloadnames.TOOL_NAMES) + " (oltp_read_write = sysbench-read-write).")
@click.option("--price-per-hour", type=click.FloatRange(min=0, min_open=True), metavar="USD",
              help="Hourly price of what was measured (a CSV 'price_per_hour' column overrides it).")
@click.option("--replace", is_flag=True,
              help="Import a file imported before again, with these options: what it brought is replaced, in one "
                   "transaction.")
@click.option("--allow-skipped", is_flag=True,
              help="Exit 0 although pieces of a file that carry figures were not stored (a summary whose header was "
                   "cut off): they are still reported, FILE:LINE each.")
@click.option("--together", is_flag=True,
              help="The files are the outputs of load generators that ran at once against one server (one run each, "
                   "one configuration): store them as one point, throughput summed and latency pooled, each part kept "
                   "with its own figures (as fleet run --together).")
@click.option("--allowed-signers", type=click.Path(dir_okay=False, path_type=Path), metavar="FILE",
              help="Bundles only: import only those signed by a key of this file (as ssh-keygen reads it).")
@store_option
def import_command(files: tuple[Path, ...], label: str | None, engine: str | None, tool: str, workload: str | None,
                   price_per_hour: float | None, replace: bool, allow_skipped: bool, together: bool,
                   allowed_signers: Path | None, store: Path | str) -> int | None:
    """Bring results measured elsewhere into the store: pgbench, sysbench, mysqlslap,
    HammerDB or go-tpc outputs (one run or many appended in a file, with or without the
    command lines that produced them), pgbench's log files (-l) and CSV files of summary
    rows (docs/import.md lists the columns). --together: the outputs of load generators that ran at once, as
    one point.

    A line that cannot be read is reported as FILE:LINE and nothing from that file is
    stored (exit 2); importing the same file twice adds nothing the second time, unless
    --replace (e.g. with the right --workload). A piece that carries figures but holds
    no run that can be stored (a summary whose header was cut off) is reported as
    FILE:LINE, the rest of the file is stored, and the import ends with the count of
    such pieces and exit status 1 (0 with --allow-skipped).

    A bundle (`dbarena publish`) is verified first, as `dbarena verify` does, and
    refused whole where anything in it does not hold; its runs are stored as they were
    published, with where they came from (the bundle and its signer) in their options.
    """
    from dbarena.exchange.importing import is_bundle

    bundles = [path for path in files if is_bundle(path)]
    if bundles:
        if len(bundles) != len(files):
            raise UsageError("import: bundles and tools' outputs go in separate imports")
        given = [name for name, value in (("--label", label), ("--engine", engine), ("--workload", workload),
                                          ("--price-per-hour", price_per_hour), ("--replace", replace or None),
                                          ("--tool", None if tool == "auto" else tool)) if value is not None]
        if given:
            raise UsageError(f"import: {', '.join(given)} {'does' if len(given) == 1 else 'do'} not apply to a bundle "
                             "(its runs keep their own)")
        _import_bundles(bundles, allowed_signers, store)
        return None
    if label is None:
        raise UsageError("Missing option '--label' (the label of the imported results)")
    if allowed_signers is not None:
        raise UsageError("import: --allowed-signers applies to bundles only")
    from dbarena.importers.storing import ImportOptions

    options = ImportOptions(label=label, engine=engine, tool=tool, workload=workload, price_per_hour=price_per_hour,
                            replace=replace)
    if together:
        return _import_together(list(files), options, store)
    return _import_files(files, options, store, allow_skipped)


def _import_together(files: list[Path], options: ImportOptions, store: Path | str) -> int | None:
    """`import --together`: the outputs of load generators that ran at once, one point."""
    from dbarena.importers.storing import import_together

    if len(files) < 2:
        raise UsageError("import --together: give the outputs of two or more load generators")
    with Store(store) as db:
        done = import_together(db, files, options)
        if done.labels:
            analysis.stored_groups(db, tuple(done.labels))
    if done.error is not None:
        _say(f"dbarena: error: {done.error}", err=True)
        return ExitStatus.USAGE
    if done.already:
        _say(f"{' + '.join(map(str, files))}: already imported together; nothing added")
        return None
    _say(f"{' + '.join(map(str, files))}: imported together as 1 point of {len(files)} load generators, run "
         f"{', '.join(map(str, done.run_ids))}, label {', '.join(done.labels)}")
    for note, _ in done.notes:
        _say(f"dbarena: {note}")
    return None


def _import_files(files: tuple[Path, ...], options: ImportOptions, store: Path | str, allow_skipped: bool
                  ) -> int | None:
    """`import` of tools' outputs: each file whole or not at all; its pieces that carry
    figures but hold no run said FILE:LINE (exit 1 unless --allow-skipped)."""
    from dbarena.importers.storing import import_file

    failed, skipped = False, 0
    # What the readers noted, said once for the whole import with its counts (an archive
    # of 400 files would say "duration 300 s inferred" 400 times otherwise).
    notes: dict[str, list[int]] = {}
    labels: dict[str, None] = {}
    with Store(store) as db:
        for path in files:
            done = import_file(db, path, options)
            labels.update(dict.fromkeys(done.labels))
            for piece in done.skipped:
                _say(piece, err=True)
            skipped += len(done.skipped)
            if done.error is not None:
                _say(f"dbarena: error: {done.error}", err=True)
                failed = True
            elif not done.points:
                _say(f"{path}: no benchmark run found; nothing imported")
            elif done.already:
                _say(f"{path}: already imported (same content); nothing added (--replace imports it again)")
            else:
                if done.replaced:
                    _say(f"{path}: the {done.replaced} point(s) of its earlier import removed")
                _say(f"{path}: imported {done.points} point(s) ({done.ok} ok, {done.points - done.ok} failed) "
                     f"as run {', '.join(map(str, done.run_ids))}, label {', '.join(done.labels)}")
                for note, count in done.notes:
                    runs_files = notes.setdefault(note, [0, 0])
                    runs_files[0] += count
                    runs_files[1] += 1
        if labels:  # (their configurations summarised over their sessions: what the first view reads)
            analysis.stored_groups(db, tuple(labels))
    for note, (count, in_files) in notes.items():
        _say(f"{files[0]}: {count} run(s): {note}" if len(files) == 1
             else f"dbarena: {count} run(s) in {in_files} file(s): {note}")
    if skipped:
        _say(f"dbarena: {skipped} piece(s) skipped: figures not stored"
             + (" (accepted: --allow-skipped)" if allow_skipped else " (--allow-skipped accepts them)"), err=True)
    if failed:
        return ExitStatus.USAGE
    return ExitStatus.POINTS_FAILED if skipped and not allow_skipped else None


def _import_bundles(bundles: list[Path], allowed_signers: Path | None, store: Path | str) -> None:
    """`import` of bundles: each verified, then stored whole (exchange/importing.py)."""
    from dbarena.exchange.importing import import_bundle
    from dbarena.cli.exchange import check_allowed_signers

    check_allowed_signers(allowed_signers)
    with Store(store) as db:
        for path in bundles:
            done = import_bundle(db, path, allowed_signers)
            for line in done.verified.lines():
                _say(line)
            _say(f"{path}: imported {done.runs} run(s), {done.points} point(s) into {store}"
                 + ("" if done.runs else " (all its runs were here already)"))


def _prices(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> dict[str, Price]:
    from dbarena.stats import price

    prices: dict[str, Price] = {}
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
@click.option("--at-threads", type=click.IntRange(min=1, max=MAX_THREADS), metavar="N",
              help="Thread level of the price table (that level only, cheapest first, the cheapest named) and the "
                   "per-second chart (study E used 16) [default: prices at every level].")
@click.option("--about", "about", multiple=True, type=click.Choice(sorted(configkey.ABOUT)),
              help="What else the labels' comparisons are about, as compare's --about (repeatable): `--about "
                   "settings` compares labels that differ in their settings, which are otherwise not comparable "
                   "[default: the host].")
@click.option("--format", "fmt", type=click.Choice(REPORT_FORMATS), help="[default: from -o's extension, else html]")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="File to write [default: dbarena-report.FORMAT]; Markdown charts go to FILE_files/.")
@click.option("--png", is_flag=True,
              help="Charts also as PNG (200 dpi), for sites that take no SVG: Markdown links the PNG files, HTML "
                   "offers them for saving.")
def report(store: Path | str, labels: tuple[str, ...], baseline: str | None, prices: dict[str, Price],
           at_threads: int | None, about: tuple[str, ...], fmt: str | None, output: Path | None, png: bool) -> None:
    """Charts and tables to publish: throughput, latency, price/performance, per core,
    scaling (USL), differences against a baseline, provenance."""
    from dbarena.report import assemble

    if fmt is None:
        suffix = output.suffix.lstrip(".").lower() if output else ""
        fmt = {"htm": "html", "markdown": "md"}.get(suffix, suffix) if suffix in (*REPORT_FORMATS, "htm", "markdown") \
            else "html"
    output = output or Path(f"dbarena-report.{fmt}")
    atomic.check_directory(output)  # before the store is read and the charts drawn
    selection = assemble.Selection(labels=tuple(labels), baseline=baseline, prices=prices, at_threads=at_threads,
                                   about=about)
    with open_store(store) as db:
        built, shown = assemble.build_shown(db, selection)
        drawn = assemble.draw(db, built, fmt, png=png, profiled=shown.profiled)
    # Whole or not at all: a report that fails or is killed while written leaves the
    # previous one as it was (atomic.py).
    atomic.write_text(output, assemble.render(built, fmt, output, drawn))
    _say(f"wrote {output} ({len(built.sections)} engine/workload sections, labels: {listed(built.labels)})")


@cli.command("hostinfo")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def hostinfo_command(as_json: bool) -> None:
    """Print what dbarena records about this machine (CPU, cores vs threads, memory ...)."""
    facts = hostinfo.host_facts()
    if as_json:
        click.echo(export.dumps(facts, indent=2, sort_keys=True))
    else:
        terminal.console().print(listings.facts_table(facts))


