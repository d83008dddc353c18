"""`dbarena study check`: what a study expands to on this machine, and how long it takes.

Machine time is estimated per tool: timed tools run for their duration (plus the
warm-up); mysqlslap's points are bounded by queries, estimated from an assumed rate
(workloads/mysqlslap.py); dataset preparation from rough loading rates of each tool.
Each session (--sessions) runs the whole plan again. With an objective ([slo], --slo),
each point's search over offered rates follows its closed-loop runs: about
capacity.planned_rates rates a point, each run as the point is (preflight.search_of).
Pure: a study and its plan in, a dict (and its text) out.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

from dbarena import workloads
from dbarena.lifecycle import smt_switch
from dbarena.limits import visible
from dbarena.stats import capacity
from dbarena.stats import estimators as stats
from dbarena.run.plan import EnginePlan
from dbarena.run.dataset_lifecycle import dataset_steps
from dbarena.run.preflight import estimate_s, search_of
from dbarena.study import Study, consent

if TYPE_CHECKING:
    from dbarena.run.preflight import Estimate

class WorkloadPlan(TypedDict):
    """One workload of an engine's plan, as the summary gives it."""

    workload: str
    tool: str
    levels: list[int]  # threads, in the plan's order
    clients: list[int]
    duration_s: int
    timed: bool
    warmup_s: int
    params: dict[str, int]
    options: dict[str, str]
    datasets: str
    points: int
    estimated_s: NotRequired[int]  # once every point is counted


PRECEDENCE = "defaults < study file ([sweep], [datasets] < [[workloads]]) < --quick < command-line flags"


def summarise(study: Study, plans: list[EnginePlan], estimated: Estimate | None = None, *,
              allow_commands: bool = False) -> dict[str, Any]:
    """The plan per engine and workload; with `estimated` (preflight.estimate), also the
    disk space the throwaway instances need and whether it fits. What of the study runs
    commands or loads code (study/consent.py) is listed, refused unless
    `allow_commands`."""
    engines_out = []
    total_points = 0
    total_s = 0.0
    for p in plans:
        entry = p.engine
        per_workload: dict[str, WorkloadPlan] = {}
        seconds: dict[str, float] = defaultdict(float)
        for spec in p.points:
            w = per_workload.setdefault(spec.workload, {
                "workload": spec.workload, "tool": workloads.WORKLOADS[spec.workload].tool.name,
                "levels": [], "clients": [], "duration_s": spec.duration_s,
                "timed": workloads.WORKLOADS[spec.workload].tool.timed, "warmup_s": spec.warmup_s,
                "params": dict(spec.params), "options": dict(spec.options), "datasets": spec.datasets, "points": 0,
            })
            if spec.threads not in w["levels"]:
                w["levels"].append(spec.threads)
                w["clients"].append(spec.clients)
            w["points"] += 1
            seconds[spec.workload] += estimate_s(spec)
        prepare_s = 0.0
        prepares = 0
        for before, _ in dataset_steps(p.points):
            for action, spec in before:
                expected = workloads.WORKLOADS[spec.workload].tool.estimate_prepare_s(spec)
                if action == "prepare" and expected > 0:
                    prepares += 1
                    prepare_s += expected
        for name, w in per_workload.items():
            w["estimated_s"] = round(seconds[name])
        engine_s = sum(seconds.values()) + prepare_s
        searched = search_of(study, [p], sessions=1)
        engines_out.append({
            "engine": entry.name, "flavour": entry.flavour,
            "server": entry.target or _throwaway(study.engine(entry.name).bindir),
            "settings": dict(entry.settings),
            "variants": {v: p.settings[v] for v in p.variants if v},
            # What each variant's server is created with (its own data directory).
            "cluster": {v: p.cluster.get(v, {}) for v in p.variants if p.cluster.get(v)},
            "workloads": list(per_workload.values()), "points": len(p.points),
            "dataset_preparations": prepares, "estimated_prepare_s": round(prepare_s),
            "estimated_s": round(engine_s),
            # --slo: its points' searches, after them (one session's, as the figures above).
            "search": None if searched is None else {"points": searched.points, "estimated_s": round(searched.seconds),
                                                     "max_points": searched.max_points,
                                                     "max_estimated_s": round(searched.max_seconds)},
        })
        total_points += len(p.points)
        total_s += engine_s
    return {
        "study": study.name, "source": study.source, "title": study.title, "sha256": study.sha256,
        "quick": study.quick, "precedence": PRECEDENCE, "changes": list(study.changes),
        "repeats": study.repeats, "sessions": study.sessions, "label": study.label, "together": study.together,
        "precision": None if study.precision is None else {
            "target": study.precision, "min_repeats": min(stats.MIN_REPEATS, study.max_repeats),
            "max_repeats": study.max_repeats, "budget_s": study.budget_s},
        "price": None if study.price_per_hour is None else {
            "per_hour": study.price_per_hour, "currency": study.currency, "basis": study.price_basis},
        # One session's plan: every session runs it again (in_all: the whole study's).
        "engines": engines_out, "points": total_points, "estimated_s": round(total_s),
        "in_all": {"points": total_points * study.sessions, "estimated_s": round(total_s * study.sessions)},
        "slo": _slo(study, plans, total_s * study.sessions),
        "smt": _smt(study, plans),
        "disk": [] if estimated is None else [
            {"path": str(r.where), "need_bytes": r.need_bytes, "free_bytes": r.free_bytes, "largest": r.largest}
            for r in estimated.rooms],
        "refused": None if estimated is None else estimated.refusal(),
        "commands": _commands(study, allow_commands),
    }


def _slo(study: Study, plans: list[EnginePlan], closed_s: float) -> dict[str, Any] | None:
    """[slo] / --slo: the objective and what its searches add, over every session, within
    --budget where one is given (after the `closed_s` the closed-loop points take)."""
    searched = search_of(study, plans)
    if searched is None:
        return None
    searched = searched.within(study.budget_s, closed_s)
    o = searched.objective
    return {"objective": o.spec, "text": o.text, "errors": o.errors, "precision": o.precision,
            "max_rates": o.max_rates, "planned_rates": searched.rates,
            "points": searched.points, "estimated_s": round(searched.seconds),
            "max_points": searched.max_points, "max_estimated_s": round(searched.max_seconds),
            "budget_s": searched.budget_s}


def _throwaway(bindir: str | None) -> str:
    # A bindir is said, never run here (its `postgres --version` would run the file's code).
    return (f"throwaway instance from the binaries in {bindir} (not run by this check)" if bindir
            else "throwaway instance from this machine's binaries")


def _commands(study: Study, allowed: bool) -> dict[str, Any]:
    found = consent.findings(study)
    return {"allowed": allowed, "refused": bool(found) and not allowed,
            "found": [{"key": f.key, "value": f.value, "what": f.what} for f in found]}


def _smt(study: Study, plans: list[EnginePlan]) -> dict[str, Any] | None:
    """The [cpus] smt axis: its modes and how they are made."""
    modes = list(dict.fromkeys(mode for p in plans for v in p.variants for mode in [p.placement.get(v, (None, None))[1]]
                               if mode))
    if not modes:
        return None
    return {"modes": modes, "by": "affinity" if study.smt_emulate else "kernel",
            # Said here as `run` would refuse it: this machine may not be the one it runs on.
            "refused_here": None if study.smt_emulate else smt_switch.refusal(modes)}


def duration(seconds: float) -> str:
    seconds = round(seconds)
    if seconds < 120:
        return f"{seconds} s"
    minutes = seconds / 60
    if minutes < 120:
        return f"{minutes:.0f} min"
    hours = minutes / 60
    # (Bounded: model.check_bounds refuses a study over limits.MAX_STUDY_SECONDS before this.)
    return f"{hours:.1f} h" if hours < 100 else f"{hours:,.0f} h ({hours / 24:,.0f} days)"


def render(summary: dict[str, Any]) -> str:
    """What `study check` prints: the study's header, each engine's plan, the totals."""
    lines = [*_header(summary), *_repeats(summary), *_smt_lines(summary.get("smt"))]
    for e in summary["engines"]:
        lines += ["", *_engine(e)]
    lines += ["", *_totals(summary)]
    # Each line as the file holds it, but nothing in it acts on the terminal: a control
    # or bidirectional character shows as its escape (a right-to-left override as \u202e
    # would otherwise reorder the line; a line break in a title would add a line).
    return "\n".join(map(visible, lines))


def _header(summary: dict[str, Any]) -> list[str]:
    lines = [f"study {summary['study']}: {summary['title']}".rstrip(": "),
             f"  from {summary['source']} (sha256 {summary['sha256'][:12]}){'  --quick' if summary['quick'] else ''}",
             f"  precedence: {summary['precedence']}"]
    lines += [f"  changed: {change}" for change in summary["changes"]]
    if summary["label"]:
        lines.append(f"  label: {summary['label']}")
    if summary.get("together"):
        lines.append("  fleet: together ([fleet] together = true: `fleet run` drives the server from every host "
                     "at once, one merged point per level)")
    if summary["price"]:
        price = summary["price"]
        lines.append(f"  price: {price['per_hour']:.4f} {price['currency']} per hour ({price['basis']})")
    return lines


def _repeats(summary: dict[str, Any]) -> list[str]:
    precision = summary["precision"]
    sessions = summary.get("sessions", 1)
    lines = [f"  sessions: {sessions} (each runs the whole plan below again: its servers started afresh, its "
             "datasets prepared again)"] if sessions > 1 else []
    slo = summary.get("slo")
    if slo:
        runs = "once" if summary["repeats"] == 1 else f"{summary['repeats']} times"
        lines.append(f"  capacity at {slo['text']}: after each point's closed-loop runs, a search over offered "
                     f"rates (the first {capacity.FIRST_SHARE:.0%} of its closed-loop throughput) until the bracket "
                     f"is within {slo['precision']:.1%}: about {slo['planned_rates']} rates a point (at most "
                     f"{slo['max_rates']}), each run {runs} as the point is; failed, skipped or in error: at most "
                     f"{slo['errors']:.1%} of transactions")
    if not precision:
        return [f"  repeats: {summary['repeats']} (interleaved)", *lines]
    budget = f"; no round starts after {duration(precision['budget_s'])}" if precision["budget_s"] else ""
    return [f"  repeats: adaptive, rounds until the 95 % interval is within +-{precision['target']:.1%}: "
            f"{precision['min_repeats']} to {precision['max_repeats']} runs a point{budget} "
            f"(the plan below is the first {precision['min_repeats']} rounds)", *lines]


def _smt_lines(smt: dict[str, Any] | None) -> list[str]:
    if not smt:
        return []
    lines = [f"  SMT modes {', '.join(smt['modes'])}: " + (
        "emulated by affinity (threads of each core), variants interleaved" if smt["by"] == "affinity"
        else "the kernel's switch (root), one mode after the other, put back as it was at the end")]
    if smt.get("refused_here"):
        lines.append(f"  not on this machine: {smt['refused_here']} (smt_emulate = true would emulate it)")
    return lines


def _pairs(values: dict[str, Any], between: str = "=") -> str:
    return ", ".join(f"{k}{between}{v}" for k, v in values.items())


def _engine(e: dict[str, Any]) -> list[str]:
    lines = [f"{e['engine']} ({e['flavour']}): {e['server']}"]
    if e["settings"]:
        lines.append("  settings: " + _pairs(e["settings"]))
    for name, settings in e["variants"].items():
        created = _pairs(e["cluster"].get(name, {}))
        lines.append(f"  variant {name}: " + (_pairs(settings) or "as above")
                     + (f"; created with {created}" if created else ""))
    if "" in e["cluster"]:
        lines.append("  created with: " + _pairs(e["cluster"][""]))
    lines += [_workload(w) for w in e["workloads"]]
    lines.append(f"  {e['points']} points; {e['dataset_preparations']} dataset preparation(s), "
                 f"~{duration(e['estimated_prepare_s'])}; ~{duration(e['estimated_s'])} in all")
    if e.get("search"):
        lines.append(f"  then their searches: about {e['search']['points']} offered-rate points, "
                     f"~{duration(e['search']['estimated_s'])} (at most {e['search']['max_points']}, "
                     f"~{duration(e['search']['max_estimated_s'])})")
    return lines


def _workload(w: dict[str, Any]) -> str:
    params = _pairs(w["params"], " ")
    options = " ".join(f"--{k}={v}" for k, v in w["options"].items())
    per_point = f"{w['duration_s']} s each" if w["timed"] else \
        f"bounded by queries, about {duration(w['estimated_s'] / max(1, w['points']))} each"
    clients = "" if w["clients"] == w["levels"] else f", clients {' '.join(map(str, w['clients']))}"
    warm = f", warm-up {w['warmup_s']} s" if w["warmup_s"] else ""
    return (f"  {w['workload']}: threads {' '.join(map(str, w['levels']))}{clients}; {per_point}"
            f"{warm}; {params or 'no dataset'}"
            f" (datasets per {w['datasets']}){'; ' + options if options else ''}"
            f" -> {w['points']} points, ~{duration(w['estimated_s'])}")


def _totals(summary: dict[str, Any]) -> list[str]:
    at_least = "at least " if summary["precision"] else ""
    lines = [f"{summary['points']} points, estimated machine time {at_least}~{duration(summary['estimated_s'])} "
             "(preparation times are rough)"]
    in_all = summary.get("in_all")
    if in_all and summary.get("sessions", 1) > 1:
        lines[0] = (f"{summary['points']} points a session, {in_all['points']} in {summary['sessions']} sessions, "
                    f"estimated machine time {at_least}~{duration(in_all['estimated_s'])} "
                    "(preparation times are rough)")
    slo = summary.get("slo")
    if slo:
        lines.append(f"then a search for each point's capacity at {slo['text']}: about {slo['planned_rates']} "
                     f"offered rates a point (at most {slo['max_rates']}), about {slo['points']} points and "
                     f"~{duration(slo['estimated_s'])} of machine time more (at most {slo['max_points']} points, "
                     f"~{duration(slo['max_estimated_s'])}{_budget(slo.get('budget_s'))})")
    lines += [f"disk: about {_size(d['need_bytes'])} in {d['path']} ({_size(d['free_bytes'])} free), "
              f"the largest dataset {d['largest']}" for d in summary.get("disk", [])]
    if summary.get("refused"):
        lines.append(f"refused here: {summary['refused']}")
    commands = summary["commands"]
    if commands["found"]:
        said = "; ".join(f"{f['key']} = {f['value']!r} ({f['what']})" for f in commands["found"])
        lines.append(f"runs commands or loads code: {said}; " + (
            f"allowed ({consent.FLAG})" if commands["allowed"] else f"refused without {consent.FLAG}"))
    return lines


def _budget(budget_s: float | None) -> str:
    """What --budget does to the search's figures: no round of rates starts past it."""
    return "" if budget_s is None else f"; no round of rates starts after ~{duration(budget_s)}, which cuts them"


def _size(n: float) -> str:
    from dbarena.run.preflight import size_words

    return size_words(n)
