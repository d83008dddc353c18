"""`dbarena gate --confirm N`: before a gate fails (or says inconclusive), the workloads it
would fail on are measured again here, N more runs of each side's own study, the
baseline's and the candidate's interleaved (B, C, B, C ...) so that a drift of the
machine over the minutes they take falls on both alike, and the gate decides on all
the runs, the first ones included.

A continuous benchmark on a shared or noisy machine otherwise either fails on noise or
passes on an interval too wide to mean anything; an alert whose runs barely overlap is
worth a second look before it fails a build.

Each side's study is the one its newest run followed (its text and flags, as `--resume`
rebuilds it), narrowed to the regressed engines and workloads (and to the variant that
run measured), under a label of its own: the side's label with `-confirm-N` (N the
first number neither side's label has used for it), so that the runs measured again
join the side for this verdict alone and never the side's label's history (where they
would be its newest runs, and the next gate's baseline). The baseline is measured again only where it is
measurable here: its runs were made on a machine like this one (the same CPU model,
hardware threads and memory, stats/configkey.host_identity), not on a --target, and its
study still rebuilds; otherwise the candidate alone gets the N runs, and the gate says
why. A run measured again counts only where its points have the configuration of the
side's own points (the same server version, settings, machine, dataset: the study is
the side's, but what it runs on may have changed since); one that does not is stored
but not counted, and the gate says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Callable

from dbarena.errors import DbarenaError, ExitStatus
from dbarena.host import hostinfo
from dbarena.interfaces import ResultStore
from dbarena.records import JSONObject, StoredRun, json_object
from dbarena.run import resume
from dbarena.stats import analysis, configkey
from dbarena.stats import gate as gating
from dbarena.study import Study
from dbarena.study.model import check_name

# A study measured once more under a label: the ids of the runs it stored, or why it
# stored none (a one-line reason). session.run in use; a fake in the unit tests.
Measure = Callable[[Study], tuple[list[int], str | None]]

REGRESSED = (gating.FAIL, gating.INCONCLUSIVE)


@dataclass(frozen=True)
class Confirmation:
    """What --confirm did: the gate before it, the runs it added to each side, and why
    the baseline was not measured again where it was not."""

    first: gating.Gate
    rounds: int
    baseline_runs: tuple[int, ...]
    candidate_runs: tuple[int, ...]
    baseline_not_here: str | None = None  # why the baseline was not measured again
    failed: tuple[str, ...] = ()  # runs (or their points) not counted, and why
    labels: tuple[str, ...] = ()  # the labels the runs measured again are stored under

    def as_dict(self) -> JSONObject:
        return {"rounds": self.rounds, "first_status": self.first.status,
                "baseline_runs": list(self.baseline_runs), "candidate_runs": list(self.candidate_runs),
                "labels": list(self.labels),
                "baseline_not_measured_again": self.baseline_not_here, "not_counted": list(self.failed)}

    def line(self) -> str:
        """What the gate's report says of it, in one line."""
        sides = f"{len(self.candidate_runs)} more run(s) of the candidate"
        if self.baseline_runs:
            sides += f" and {len(self.baseline_runs)} of the baseline, interleaved,"
        stored = f" (stored as {' and '.join(repr(label) for label in self.labels)})" if self.labels else ""
        said = (f"confirmed: the first gate was {self.first.status}; {sides} measured here{stored}, then judged on "
                "all runs")
        if self.baseline_not_here:
            said += f" (the baseline was not measured again: {self.baseline_not_here})"
        if self.failed:
            said += f"; not counted: {'; '.join(self.failed)}"
        return said + "."


def regressed(found: gating.Gate) -> set[tuple[str, str]]:
    """The (engine, workload) the gate would fail on, or cannot decide."""
    return {(i.engine, i.workload) for i in found.items if i.status in REGRESSED}


def _newest_run(store: ResultStore, side: gating.Side, wanted: set[tuple[str, str]]) -> StoredRun:
    ids = {p.run_id for p in side.points if (p.engine, p.workload) in wanted}
    runs = store.runs_by_id(ids)
    if not runs:
        raise DbarenaError(f"--confirm: {side.what} has no run of the regressed workloads")
    return max(runs.values(), key=lambda r: r.id)


CONFIRMING = "-confirm-"  # between a side's label and the number of the gate that measured it again


def confirming_number(store: ResultStore, found: gating.Gate) -> int:
    """The N of this gate's `-confirm-N` labels: one more than any such label of either
    side's runs holds already, so that each gate's runs measured again are apart."""
    mine = {p.label for side in (found.baseline, found.candidate) for p in side.points}
    used = [int(m.group(2)) for r in store.runs()
            if (m := re.fullmatch(r"(.*)" + re.escape(CONFIRMING) + r"([0-9]{1,9})", r.label)) and m.group(1) in mine]
    return max(used, default=0) + 1


def narrowed(store: ResultStore, side: gating.Side, wanted: set[tuple[str, str]], number: int = 1) -> Study:
    """The study of the side's newest run of a regressed workload, rebuilt as --resume
    rebuilds it, narrowed to the regressed engines and workloads and that run's variant,
    under the label `LABEL-confirm-N` (the run's label; N: `number`). A DbarenaError
    (one line) where it cannot be rebuilt."""
    run = _newest_run(store, side, wanted)
    label = f"{run.label}{CONFIRMING}{number}"
    try:
        check_name(label, "label")
    except DbarenaError as exc:
        raise DbarenaError(f"--confirm: {side.what}: the label of its runs measured again: {exc}") from None
    try:
        stored = resume.stored_study(store, run)
    except DbarenaError as exc:
        raise DbarenaError(f"--confirm: {side.what}: {exc}") from None
    engines = {e for e, _ in wanted if e == run.engine}
    workloads = tuple(w for w in stored.workloads if any((e, w.workload) in wanted for e in engines))
    if not workloads:
        raise DbarenaError(f"--confirm: the study of run {run.id} ({side.what}) runs none of the regressed workloads")
    return replace(stored, label=label, engines=tuple(e for e in stored.engines if e.name in engines),
                   workloads=workloads,
                   variants=tuple(v for v in stored.variants if v.name == run.variant) if run.variant else ())


def not_here(store: ResultStore, side: gating.Side, here: JSONObject | None = None) -> str | None:
    """Why the side's runs cannot be measured again on this machine (None: they can): a
    run made on another kind of machine, or on a --target (whose server dbarena did not
    start, and may have changed since)."""
    runs = store.runs_by_id({p.run_id for p in side.points})
    facts = here if here is not None else hostinfo.host_facts()
    mine = configkey.host_identity(facts)
    for run in runs.values():
        if json_object(run.options.get("targets")):
            return f"run {run.id} measured a --target"
        if configkey.host_identity(run.host_facts) != mine:
            return f"run {run.id} was measured on another machine ({run.host_facts.get('hostname') or run.host})"
    return None


def confirm(store: ResultStore, found: gating.Gate, baseline_spec: str, candidate_spec: str, rounds: int,
            measure: Measure, here: JSONObject | None = None) -> tuple[gating.Gate, Confirmation | None]:
    """The gate judged again on `rounds` more runs of each side (see the module's
    docstring); the first gate and no confirmation where it passed."""
    wanted = regressed(found)
    if not wanted:
        return found, None
    number = confirming_number(store, found)
    candidate_study = narrowed(store, found.candidate, wanted, number)
    reason = not_here(store, found.baseline, here)
    baseline_study: Study | None = None
    if reason is None:
        try:
            baseline_study = narrowed(store, found.baseline, wanted, number)
        except DbarenaError as exc:
            reason = str(exc).removeprefix("--confirm: ")
    added: dict[str, list[int]] = {"baseline": [], "candidate": []}
    failed: list[str] = []
    for _ in range(rounds):
        for name, study in (("baseline", baseline_study), ("candidate", candidate_study)):
            if study is None:
                continue
            ids, problem = measure(study)
            side = found.baseline if name == "baseline" else found.candidate
            for run_id in ids:
                unlike = _unlike(store, side, run_id, wanted)
                if unlike is None:
                    added[name].append(run_id)
                else:
                    failed.append(f"{name}: {unlike}")
            if problem is not None:
                failed.append(f"{name}: {problem}")
    baseline = _grown(store, found.baseline, added["baseline"])
    candidate = _grown(store, found.candidate, added["candidate"])
    lending = gating.lenders(store, baseline, candidate)
    again = gating.gate(baseline, candidate, found.max_regression, history=lending.history, lent=lending.lent)
    labels = tuple(s.label for s in (baseline_study, candidate_study) if s is not None and s.label)
    return again, Confirmation(found, rounds, tuple(added["baseline"]), tuple(added["candidate"]), reason,
                               tuple(failed), labels)


def _unlike(store: ResultStore, side: gating.Side, run_id: int, wanted: set[tuple[str, str]]) -> str | None:
    """Why a run measured again is not counted with its side (None: it is): a point
    whose configuration (configkey: server version, settings, machine, dataset ...) no
    point of the side had. The study is the side's own, but what it runs on may have
    changed since (other binaries, another server version): only points of the same
    configuration are pooled."""
    known = {p.config_key for p in side.points if (p.engine, p.workload) in wanted}
    for point in analysis.load(store, run_id=run_id):
        if point.status == "ok" and point.config_key not in known:
            return (f"run {run_id} measured another configuration than {side.what} (threads {point.threads}); "
                    "not counted")
    return None


def _grown(store: ResultStore, side: gating.Side, added: list[int]) -> gating.Side:
    """The side with the runs --confirm added and counted (stored under a label of their
    own: the side as given, a label or a run, does not hold them), for this verdict."""
    if not added:
        return side
    points = [*side.points, *(p for run_id in added for p in analysis.load(store, run_id=run_id))]
    return replace(side, what=f"{side.what} and its confirming run(s) {', '.join(map(str, added))}", points=points)


def session_measure(store: ResultStore, quiet: bool = True) -> Measure:
    """Measure a study as `dbarena run` would, into `store`."""
    from dbarena.run import session

    def measure(study: Study) -> tuple[list[int], str | None]:
        outcome = session.run(study, store=store, quiet=quiet)
        if outcome.exit_status != ExitStatus.OK:
            return outcome.run_ids, f"exit status {int(outcome.exit_status)}, {outcome.failed} point(s) failed"
        return outcome.run_ids, None

    return measure
