"""The commands of continuous benchmarking: `history` (a point's runs over time, its change
points and what changed there) and `gate` (exit 1 when a candidate is slower than a
baseline by more than a threshold)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from dbarena.cli.app import cli, open_store, store_option
from dbarena.report import gate as gate_report
from dbarena.report import history as history_report
from dbarena.stats import gate as gating
from dbarena.stats import history
from dbarena.store.database import Store


@cli.command("history")
@store_option
@click.option("--label", "labels", multiple=True, help="Only this label's series (repeatable).")
@click.option("--workload", "workloads", multiple=True, help="Only this workload's series (repeatable).")
@click.option("--threads", "threads", multiple=True, type=int, help="Only this level's series (repeatable).")
@click.option("--min-runs", type=click.IntRange(min=1), default=1, show_default=True,
              help="Only series of at least this many runs.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON: every series, its runs and change points.")
@click.option("--format", "fmt", type=click.Choice(("text", "md")), default="text", show_default=True,
              help="text for the terminal, md (Markdown) for a pull request or a wiki.")
def history_command(store: Path | str, labels: tuple[str, ...], workloads: tuple[str, ...],
                    threads: tuple[int, ...], min_runs: int, as_json: bool, fmt: str) -> int:
    """Each series of runs of one label, workload, level and dataset over time: every
    run's value with its 95 % interval, the change points in it (Apache Otava, p < 0.001)
    with their size and interval, and what changed there (server and tool versions,
    kernel, settings, duration: the runs' stored facts).

    Exit status: 0, also when no change point is found; 2 for a label or workload the
    store does not hold."""
    with open_store(store) as db:
        found = history.of_store(db, history.Filter(labels=labels, workloads=workloads, threads=threads,
                                                    min_runs=min_runs))
    if as_json:
        click.echo(json.dumps(found.as_dict(), indent=2))
    elif fmt == "md":
        click.echo(history_report.markdown(found), nl=False)
    else:
        click.echo(history_report.text(found), nl=False)
    return 0


@cli.command("gate")
@store_option
@click.option("--baseline", required=True, metavar="RUN|LABEL", help="A run id, or a label (all its runs).")
@click.option("--candidate", required=True, metavar="RUN|LABEL", help="A run id, or a label (all its runs).")
@click.option("--max-regression", default="5%", show_default=True, metavar="PCT",
              help="The slowdown a point may show before the gate fails, e.g. 5%.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON: every level's figures and verdict.")
@click.option("--format", "fmt", type=click.Choice(("text", "md")), default="text", show_default=True,
              help="text for a CI log, md (Markdown) for a pull-request comment.")
@click.option("--confirm", "rounds", type=click.IntRange(0, 20), default=0, show_default=True, metavar="N",
              help="Before failing (or saying inconclusive), measure the regressed workloads N more times "
                   "here, each side's own study, baseline and candidate interleaved, and judge on all runs.")
def gate_command(store: Path | str, baseline: str, candidate: str, max_regression: str, as_json: bool,
                 fmt: str, rounds: int) -> int:
    """Does the candidate make any workload slower than the baseline by more than
    --max-regression? The levels both measured with the same workload, dataset, duration
    and tool options are compared (the machine, server version and settings may differ:
    they are what is gated), and each engine and workload is judged as `compare` judges
    it: the geometric mean of its levels' ratios with a 95 % interval. It fails when it
    is significantly slower (p < 0.05) and the estimated slowdown is beyond the
    threshold; it passes when the interval rules out a slowdown beyond the threshold;
    else it is inconclusive (the interval reaches past the threshold: more repeats
    narrow it). mysqlslap is judged by its seconds (fewer is faster). Each run is a
    session: a side of one run takes the spread between sessions from its label's
    other runs of the same configuration; without any, its workload is inconclusive.

    With --confirm N, a gate that would fail or be inconclusive first measures the
    regressed workloads again on this machine: N more runs of the candidate's own study
    (the one its newest run followed) and, where the baseline was measured on a machine
    like this one with a throwaway server, N of the baseline's, interleaved; the runs
    are stored under labels of their own (each side's label with -confirm-1, -confirm-2
    ... for each gate that confirms), so that they never enter the side's own history,
    and the verdict is taken on all of them.

    Exit status: 0 every judged workload passed, 1 at least one failed, 3 none failed but
    at least one is inconclusive, 2 bad input (an unknown run or label, or nothing both
    sides measured with a verdict)."""
    from dbarena.run import bisect as bisecting
    from dbarena.run import confirm

    threshold = gating.parse_threshold(max_regression)
    confirmation: confirm.Confirmation | None = None
    # --confirm stores the runs it measures: the store is opened to write (and so
    # upgraded, if it is older), as `run` opens it; a gate alone only reads.
    if rounds:
        open_store(store).close()  # what a read checks first: the file is there, and a dbarena store
        db = Store(store)
    else:
        db = open_store(store)
    with db:
        sides = gating.side(db, baseline), gating.side(db, candidate)
        lending = gating.lenders(db, *sides)
        result = gating.gate(*sides, threshold, history=lending.history, lent=lending.lent)
        if rounds and confirm.regressed(result):
            said = gate_report.text(result).splitlines()[0]
            click.echo(f"dbarena: gate: {said}; confirming with {rounds} more run(s) of each side", err=True)
            result, confirmation = confirm.confirm(db, result, baseline, candidate, rounds,
                                                   confirm.session_measure(db, quiet=False))
    line = confirmation.line() if confirmation is not None else None
    # Still failing once confirmed: the command that would find which difference did it.
    explain = bisecting.commands(result, store) if confirmation is not None else []
    for command in explain:
        click.echo(f"dbarena: gate: find which difference made it slower with: {command}", err=True)
    if as_json:
        click.echo(json.dumps({**result.as_dict(),
                               **({"confirmation": confirmation.as_dict()} if confirmation else {}),
                               **({"bisect": explain} if explain else {})}, indent=2))
    elif fmt == "md":
        click.echo(gate_report.markdown(result, line), nl=False)
    else:
        click.echo(gate_report.text(result, line), nl=False)
    return result.exit_status
