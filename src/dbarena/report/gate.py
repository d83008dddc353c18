"""The gate's verdict (stats/gate.py) as terminal lines and as Markdown for a pull-request
comment: the verdict first, then every workload with its figure and levels, then what had
no verdict."""

from __future__ import annotations

from dbarena.report.escaping import md_text
from dbarena.stats.gate import FAIL, INCONCLUSIVE, JUDGED, Gate, Item


def headline(g: Gate) -> str:
    judged = g.judged
    unjudged = f"; {len(g.unjudged)} without a verdict (listed)" if g.unjudged else ""
    if g.failed:
        return (f"FAILED: {len(g.failed)} of {len(judged)} judged workload(s) more than {g.max_regression:.0%} slower "
                f"in {g.candidate.what} than in {g.baseline.what}{unjudged}")
    if g.inconclusive:
        return (f"INCONCLUSIVE: {len(g.inconclusive)} of {len(judged)} judged workload(s) may be more than "
                f"{g.max_regression:.0%} slower in {g.candidate.what} than in {g.baseline.what} (their intervals "
                f"reach past it), but none is shown to be that much slower{unjudged}")
    return (f"passed: none of {len(judged)} judged workload(s) is more than {g.max_regression:.0%} slower in "
            f"{g.candidate.what} than in {g.baseline.what}{unjudged}")


def _change(i: Item) -> str:
    return "-" if i.speed_change_pct is None else f"{i.speed_change_pct:+.1f} %"


def _ci(i: Item) -> str:
    if i.ci_low_pct is None or i.ci_high_pct is None:
        return "-"
    return f"{i.ci_low_pct:+.1f} % .. {i.ci_high_pct:+.1f} %"


RULE = ("A workload fails when the candidate is significantly slower (p < 0.05; the geometric mean of its levels' "
        "ratios, Welch over runs, as `compare` decides) and the estimated slowdown is more than the threshold; it "
        "passes when its 95 % interval rules out a slowdown beyond the threshold; else it is inconclusive. "
        "Change and interval in speed (throughput, or 1 / seconds for mysqlslap): + is faster. Levels: threads: "
        "baseline (runs) -> candidate (runs).")


def text(g: Gate, confirmed: str | None = None) -> str:
    """`confirmed`: what `gate --confirm` measured again before this verdict (one line)."""
    out = [headline(g)] + ([confirmed] if confirmed else [])
    for i in g.items:
        out.append(f"  {i.status:>14}  {i.engine} {i.workload}: {_change(i)} ({_ci(i)}): {i.text}")
        out.append(f"  {'':>14}  levels {i.levels}")
    out.append(RULE)
    return "\n".join(out) + "\n"


def markdown(g: Gate, confirmed: str | None = None) -> str:
    """Every text from the store (labels in the headline, engines, workloads, the
    verdicts' texts) through md_text: a label cannot split a row or add markup."""
    icon = "❌" if g.failed else "⚠️" if g.inconclusive else "✅"
    out = [f"### {icon} dbarena gate {md_text(headline(g))}", "", *([md_text(confirmed), ""] if confirmed else []),
           "| verdict | engine | workload | change | 95 % CI | levels | |",
           "|---|---|---|---:|---|---|---|"]
    for i in g.items:
        if i.status in JUDGED:
            verdict = f"**{i.status}**" if i.status in (FAIL, INCONCLUSIVE) else i.status
            out.append(f"| {verdict} | {md_text(i.engine)} | {md_text(i.workload)} | {_change(i)} | {_ci(i)} | "
                       f"{md_text(i.levels)} | {md_text(i.text)} |")
    if g.unjudged:
        out += ["", f"**Without a verdict ({len(g.unjudged)})**: neither passed nor failed.", ""]
        out += [f"- {md_text(i.engine)} {md_text(i.workload)} (levels {md_text(i.levels)}): "
                + md_text(i.text if i.text.startswith(i.status) else f"{i.status}: {i.text}") for i in g.unjudged]
    out += ["", f"<sub>{RULE}</sub>", ""]
    return "\n".join(out)
