"""The gate's verdict (stats/gate.py) as terminal lines and as Markdown for a pull-request
comment: the verdict first, then every level with its figures, then what had no verdict."""

from __future__ import annotations

from dbarena.stats import metric
from dbarena.stats.gate import FAIL, PASS, Gate, Level


def headline(g: Gate) -> str:
    judged = [lv for lv in g.levels if lv.status in (PASS, FAIL)]
    unjudged = f"; {len(g.unjudged)} without a verdict (listed)" if g.unjudged else ""
    if g.failed:
        return (f"FAILED: {len(g.failed)} of {len(judged)} judged point(s) more than {g.max_regression:.0%} slower "
                f"in {g.candidate.what} than in {g.baseline.what}{unjudged}")
    return (f"passed: none of {len(judged)} judged point(s) is more than {g.max_regression:.0%} slower in "
            f"{g.candidate.what} than in {g.baseline.what}{unjudged}")


def _change(lv: Level) -> str:
    return "-" if lv.speed_change_pct is None else f"{lv.speed_change_pct:+.1f} %"


def _ci(lv: Level) -> str:
    if lv.ci_low_pct is None or lv.ci_high_pct is None:
        return "-"
    return f"{lv.ci_low_pct:+.1f} % .. {lv.ci_high_pct:+.1f} %"


def _figures(lv: Level) -> tuple[str, str]:
    return (f"{metric.shown(lv.baseline, lv.metric)} ({lv.baseline_n})",
            f"{metric.shown(lv.candidate, lv.metric)} ({lv.candidate_n})")


RULE = ("A point fails when the candidate is significantly slower (Welch's t over runs, p < 0.05) and the "
        "estimated slowdown is more than the threshold; change and interval in speed (throughput, or 1 / seconds "
        "for mysqlslap): + is faster. (n): runs a side.")


def text(g: Gate) -> str:
    out = [headline(g)]
    for lv in g.levels:
        base, cand = _figures(lv)
        out.append(f"  {lv.status:>14}  {lv.engine} {lv.workload} at {lv.threads}: {base} -> {cand}, "
                   f"{_change(lv)} ({_ci(lv)}): {lv.text}")
    out.append(RULE)
    return "\n".join(out) + "\n"


def markdown(g: Gate) -> str:
    icon = "❌" if g.failed else "✅"
    out = [f"### {icon} dbarena gate {headline(g)}", "",
           "| verdict | engine | workload | threads | baseline (n) | candidate (n) | change | 95 % CI | |",
           "|---|---|---|---:|---:|---:|---:|---|---|"]
    for lv in g.levels:
        if lv.status in (PASS, FAIL):
            base, cand = _figures(lv)
            verdict = f"**{lv.status}**" if lv.status == FAIL else lv.status
            out.append(f"| {verdict} | {lv.engine} | {lv.workload} | {lv.threads} | {base} | {cand} | {_change(lv)} | "
                       f"{_ci(lv)} | {lv.text} |")
    if g.unjudged:
        out += ["", f"**Without a verdict ({len(g.unjudged)})**: neither passed nor failed.", ""]
        out += [f"- {lv.engine} {lv.workload} at {lv.threads} thread(s): {lv.status}: {lv.text}" for lv in g.unjudged]
    workloads = [d for d in g.decisions if d.ratio is not None]
    if workloads:
        out += ["", "Per workload (geometric mean over levels): " + "; ".join(
            f"{d.engine} {d.workload} {(d.change_pct or 0):+.1f} % ({d.verdict})" for d in workloads)]
    out += ["", f"<sub>{RULE}</sub>", ""]
    return "\n".join(out)
