"""`dbarena bisect A B`: which of the differences between two configurations makes B
faster or slower, found by measuring here (run/bisect.py, stats/bisection.py;
docs/bisect.md)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from dbarena.cli.app import cli, open_store, store_option
from dbarena.errors import ExitStatus, UsageError
from dbarena.run import bisect as bisecting
from dbarena.stats import bisection
from dbarena.store.database import Store
from dbarena.study.model import parse_duration

# A bisect estimated over this long is confirmed first on a terminal (as `run` does).
CONFIRM_OVER_S = 3600


@cli.command("bisect")
@store_option
@click.argument("a", required=False, metavar="A")
@click.argument("b", required=False, metavar="B")
@click.option("--run-a", type=click.IntRange(min=1), metavar="RUN", help="A as a run id (instead of A).")
@click.option("--run-b", type=click.IntRange(min=1), metavar="RUN", help="B as a run id (instead of B).")
@click.option("--from-gate", "gate_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              metavar="FILE", help="A and B, and the workload, from a gate's result (`dbarena gate --json > FILE`): "
                                   "the baseline is A, the candidate B.")
@click.option("--workload", metavar="NAME", help="The workload to bisect, where both measured several.")
@click.option("--threads", "threads", multiple=True, type=click.IntRange(min=1), metavar="N",
              help="Only this level (repeatable) [default: every level both measured].")
@click.option("--sessions", type=click.IntRange(2, 20), default=2, show_default=True,
              help="Sessions of each configuration a step measures (a verdict needs two a side).")
@click.option("--max-sessions", type=click.IntRange(2, 50), default=6, show_default=True,
              help="At most this many sessions of one configuration while its step is inconclusive.")
@click.option("--budget", metavar="TIME",
              help="Start no measurement past this much machine time, e.g. 30m or 2h; a search it stops says how "
                   "far it got.")
@click.option("--bindirs", "bindirs", multiple=True, metavar="DIR",
              help="Server builds between A's bindir and B's, in order (repeatable): where the bindir is part of "
                   "the cause, they are bisected as `git bisect` bisects commits.")
@click.option("--resume", is_flag=True,
              help="Continue the newest bisect of A and B in the store: what it measured is read back, not "
                   "measured again.")
@click.option("--dry-run", is_flag=True, help="Say the differences and the estimate, measure nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the answer as JSON.")
@click.option("--yes", "-y", is_flag=True, help="Start a bisect estimated over an hour without asking.")
def bisect_command(store: Path | str, a: str | None, b: str | None, run_a: int | None, run_b: int | None,
                   gate_file: Path | None, workload: str | None, threads: tuple[int, ...], sessions: int,
                   max_sessions: int, budget: str | None, bindirs: tuple[str, ...], resume: bool, dry_run: bool,
                   as_json: bool, yes: bool) -> int:
    """Which of the differences between A and B (two labels, two runs, or a failed gate's
    baseline and candidate) makes B faster or slower? Lists what differs, settable here
    (server settings and cluster options, the server's bindir, dataset and tool options,
    durations, cores and SMT) or not (another machine's hardware, the kernel, a
    --target's configuration); reproduces the difference here first (A's and B's
    configurations measured with --sessions each) and stops if it does not reproduce;
    then measures configurations in between: delta debugging over the settable changes,
    each step a verdict over sessions, until the smallest set of changes that accounts
    for the difference is found, with its share and interval, and the other changes
    together against B. Each configuration is stored as a study of its own (labels
    bisect-N-a, bisect-N-b, bisect-N-stepK); --resume continues one.

    Exit status: 0 a cause found, 3 none (not reproduced here, nothing settable, the
    budget reached first), 2 bad input, 130 interrupted (--resume continues)."""
    from dbarena.run import session

    a_spec, b_spec = _sides(a, b, run_a, run_b, gate_file)
    if gate_file is not None and workload is None:
        workload = bisecting.from_gate(gate_file)[2]
    budget_s = float(parse_duration(budget)) if budget is not None else None
    if max_sessions < sessions:
        raise UsageError(f"--max-sessions {max_sessions} is fewer than --sessions {sessions}")
    # The store is written (each step's runs): opened as `run` opens it, once checked.
    open_store(store).close()

    def say(line: str) -> None:
        click.echo(f"dbarena: bisect: {line}", err=True)

    with Store(store) as db:
        plan, runs = bisecting.make_plan(db, a_spec, b_spec, workload=workload, threads=threads, resuming=resume,
                                         bindirs=bindirs)
        known, labels = bisecting.known(db, plan, runs) if resume else ({}, {})
        estimated = bisecting.estimate(plan, sessions, max_sessions, budget_s, known)
        for d in plan.differences:
            say(f"{'settable' if d.settable else 'not settable'}: {d.words()}"
                + (f" ({d.why})" if d.why and not d.settable else ""))
        say(estimated.line(plan.number))
        if dry_run:
            if as_json:
                click.echo(json.dumps({"bisect": plan.number, "differences": [d.as_json() for d in plan.differences],
                                       "estimate": estimated.as_json()}, indent=2))
            return 0
        if not _confirmed(estimated.seconds, yes, sys.stderr.isatty()):
            say("not started: nothing was measured")
            return ExitStatus.INTERRUPTED
        measurer = bisecting.StoreMeasurer(db, plan, session.run, labels=dict(labels), say=say)
        try:
            result = bisecting.bisect(db, plan, measurer, sessions=sessions, max_sessions=max_sessions,
                                      budget_s=budget_s, session_s=estimated.session_s, known_values=known, say=say)
        except bisecting.BisectInterrupted:
            say(f"interrupted: what was measured is stored; continue with: dbarena bisect {a_spec} {b_spec} "
                f"--resume --store {store}")
            raise
    if as_json:
        click.echo(json.dumps({**result.as_json(), "estimate": estimated.as_json()}, indent=2))
    else:
        for line in result.lines():
            click.echo(line)
    if result.answer.status == bisection.BUDGET:
        say(f"continue with a larger budget: dbarena bisect {a_spec} {b_spec} --resume --budget TIME")
    return result.exit_status


def _sides(a: str | None, b: str | None, run_a: int | None, run_b: int | None, gate_file: Path | None
           ) -> tuple[str, str]:
    """A and B as run ids or labels, however they were given (one way each)."""
    if gate_file is not None:
        if a or b or run_a or run_b:
            raise UsageError("--from-gate gives A and B: not with A, B, --run-a or --run-b")
        baseline, candidate, _ = bisecting.from_gate(gate_file)
        return baseline, candidate
    given = [x for x in (a, b) if x is not None]
    sides = []
    for run, name in ((run_a, "A"), (run_b, "B")):
        if run is not None:
            sides.append(str(run))
        elif given:
            sides.append(given.pop(0))
        else:
            raise UsageError(f"give {name}: a label, or --run-{name.lower()} RUN (or --from-gate FILE)")
    if given:
        raise UsageError(f"{given[0]!r}: A and B are given already")
    return sides[0], sides[1]


def _confirmed(seconds: float, yes: bool, terminal: bool) -> bool:
    """Whether to start: a bisect estimated over an hour is asked about on a terminal;
    elsewhere it starts (as `run` does)."""
    if yes or seconds <= CONFIRM_OVER_S or not (terminal and sys.stdin.isatty()):
        return True
    try:
        return click.confirm(f"the bisect is estimated at {seconds / 3600:.1f} h of machine time: start now? (--yes: "
                             "do not ask)", default=False, err=True)
    except click.Abort:
        return False
