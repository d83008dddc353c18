"""The decision block (stats/decision.py) as text: Markdown short enough for a pull
request comment or an article, and the lines `compare` prints before its level table."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence

from dbarena.report.escaping import html_text, md_text
from dbarena.stats import metric
from dbarena.stats.decision import Decision
from dbarena.stats import verdicts
from dbarena.stats.verdicts import FASTER, INCONCLUSIVE, NO_VERDICT, NOT_COMPARABLE, SAME, SLOWER

# A figure without an interval (NO_VERDICT: a side's spread between sessions unknown,
# stats/sessions.py) is shown as what it is to a reader, inconclusive; its reason below.
_MARK = {FASTER: "faster", SLOWER: "slower", SAME: "no difference", INCONCLUSIVE: "inconclusive",
         NO_VERDICT: "inconclusive", NOT_COMPARABLE: "not comparable"}


def _pct(ratio: float | None) -> str:
    return "-" if ratio is None else f"{(ratio - 1) * 100:+.1f} %"


def _interval(d: Decision) -> str:
    if d.ci_low is None or d.ci_high is None:
        return "-"
    return f"{_pct(d.ci_low)} .. {_pct(d.ci_high)}"


def workload_of(d: Decision) -> str:
    """A decision's workload as its line names it: with the objective where its figure is
    the capacity there (--slo), "pgbench-select-only (capacity at p99 <= 5 ms)"."""
    if not d.workload:
        return ""
    return d.workload + (f" (capacity at {d.slo})" if d.slo else
                         f" (p95 latency at {metric.rate_shown(d.offered_tps)} TPS offered)" if d.offered_tps is not None else "")


def _strip(d: Decision) -> str:
    return " · ".join(f"{level.threads}: {level.ratio:.2f}" for level in d.levels) or "-"


def change_note(decisions: Sequence[Decision]) -> str:
    """What a change is, said under the decision; for mysqlslap, judged by its seconds,
    which way its figure goes; where a line's figure is a capacity at an objective, what
    that is."""
    seconds = any(d.metric == metric.SECONDS for d in decisions)
    capacities = any(d.slo for d in decisions)
    latencies = any(d.offered_tps is not None for d in decisions)
    return ("Change: the geometric mean over the thread levels both measured of each level's steady-state "
            "throughput ratio" + ("; for mysqlslap, whose figure is the seconds it took (lower is better), "
                                  "of 1 / seconds, so that + is faster there too" if seconds else "")
            + ("; for a line marked 'capacity at' an objective (--slo), of each level's capacity ratio: the "
               "throughput achieved at the highest offered rate that met the objective, each session's own "
               "search, not the closed-loop throughput" if capacities else "")
            + ("; for a line marked 'p95 latency at' an offered rate (--rate), of each level's ratio of 1 / its "
               "p95 latency, each run's p95 one observation, so that + is faster (lower latency) there too"
               if latencies else "")
            + "; verdicts from a t-test at 95 % on the sessions' means (a session: one stored run, its servers "
              "started once; spreads pooled on one machine, Welch's between machines), needing 2 sessions a side, "
              "or the spread between sessions of the same "
              "configuration in the store, at every level; a workload is called faster or slower only where a "
              f"level alone is; no difference only where the interval lies within ±{verdicts.MARGIN:.0%}, else "
              "inconclusive.")


# A no-verdict text's own change, in brackets: the change column shows it already.
_OWN_CHANGE = re.compile(r" \([+-]\d[\d.]* % without an interval(?:; [^)]*)?\)")
# Rows of the HTML table shown before the rest are folded (15 labels x 10 workloads
# would be 140 rows above the first chart).
SHOWN_ROWS = 20


def reasons(decisions: Sequence[Decision]) -> list[tuple[str, list[Decision]]]:
    """Why rows have no verdict, each reason once with the rows it holds for, in the
    rows' order: ten workloads with one run a side are one line, not ten."""
    grouped: dict[str, list[Decision]] = {}
    for d in decisions:
        if d.verdict in (NO_VERDICT, NOT_COMPARABLE):
            grouped.setdefault(_OWN_CHANGE.sub("", d.text), []).append(d)
    return list(grouped.items())


def _which(rows: Sequence[Decision], labels: bool = False) -> str:
    """The rows a reason holds for: 'postgres pgbench-tpcb', or 'all 10 rows'."""
    if len(rows) > 3:
        return f"{len(rows)} rows" if labels else f"{len(rows)} workloads"
    return ", ".join(f"{d.label + ' ' if labels else ''}{d.engine or ''} {d.workload or ''}".strip() for d in rows)


def _headed(verdict: str, text: str) -> tuple[str, str]:
    """The mark and the text of an overall line, the mark left out when the text
    starts with it ("no verdict across ...")."""
    mark = _MARK[verdict]
    # ("inconclusive: one session a side ...": a figure without an interval says so itself.)
    return ("", text) if text.startswith((mark, INCONCLUSIVE)) else (mark, text)


def markdown(decisions: Sequence[Decision], overall: Sequence[Decision]) -> str:
    """One section per label against the baseline: its overall line, then a row per
    engine and workload, worst first; the reasons for missing verdicts once, below."""
    out: list[str] = []
    labels = list(dict.fromkeys(d.label for d in decisions))
    for label in labels:
        mine = [d for d in decisions if d.label == label]
        baseline = mine[0].baseline
        out.append(f"### {md_text(label)} against {md_text(baseline)}")
        out.append("")
        line = next((o for o in overall if o.label == label), None)
        if line is not None:
            mark, text = _headed(line.verdict, line.text)
            out.append((f"**{mark}** " if mark else "") + f"{md_text(text)}.")
            out.append("")
        out.append(f"| engine | workload | change | 95 % CI | verdict | ratio by threads ({md_text(label)} / "
                   f"{md_text(baseline)}) |")
        out.append("|---|---|---:|---|---|---|")
        notes: list[str] = []
        for d in mine:
            mark = _MARK[d.verdict]
            if d.verdict in (FASTER, SLOWER):
                mark = f"**{mark}**"
                if d.why:
                    notes.append(f"- why {md_text(d.engine or '')} {md_text(d.workload or '')}: "
                                   f"{md_text(d.why)}")
            if d.price:
                notes.append(f"- {md_text(d.engine or '')} {md_text(d.workload or '')}: {md_text(d.price)}")
            out.append(f"| {md_text(d.engine or '')} | {md_text(workload_of(d))} | {_pct(d.ratio)} | "
                       f"{_interval(d)} | {mark} | {_strip(d)} |")
        notes += [f"- {md_text(_which(rows))}: {md_text(text)}" for text, rows in reasons(mine)]
        if notes:
            out.append("")
            out.extend(notes)
        out.append("")
    out.append(change_note(decisions))
    return "\n".join(out) + "\n"


def lines(decisions: Sequence[Decision], overall: Sequence[Decision], width: int = 100) -> list[str]:
    """The decision as plain lines for the terminal, worst first, wrapped at spaces to
    `width` (a figure or a name is never broken)."""
    def wrapped(text: str, indent: str, more: str) -> list[str]:
        return textwrap.wrap(text, width=width, initial_indent=indent, subsequent_indent=more,
                             break_long_words=False, break_on_hyphens=False)

    out: list[str] = []
    for line in overall:
        mark, text = _headed(line.verdict, line.text)
        out += wrapped(f"{mark}: {text}" if mark else text, "", "    ")
    for d in decisions:
        # The strip without a space inside a pair, so that a wrap never splits "2: 1.36".
        strip = " · ".join(f"{level.threads}:{level.ratio:.2f}" for level in d.levels)
        out += wrapped(f"{d.engine} {workload_of(d)}: {_pct(d.ratio)} [{_interval(d)}] {_MARK[d.verdict]}"
                       + (f" (by threads {strip})" if d.levels else ""), "  ", "      ")
        if d.why:
            out += wrapped(f"why: {d.why}", "    ", "      ")
        if d.price:
            out += wrapped(d.price, "    ", "      ")
    for text, rows in reasons(decisions):
        out += wrapped(f"{_which(rows, labels=len({d.label for d in decisions}) > 1)}: {text}", "  ", "    ")
    return out


def html(decisions: Sequence[Decision], overall: Sequence[Decision], note: bool = True) -> str:
    """The decision as the HTML report's first section: the overall line of each label,
    then one table row per label, engine and workload, worst first; and what a change is
    (change_note), unless `note` is False (a page of many decisions says it once)."""
    if not decisions:
        return ""
    out = ['<section id="decision"><h2>Decision</h2>']
    if overall:
        lines = []
        for o in overall:
            mark, text = _headed(o.verdict, o.text)  # (no mark where the text begins with it)
            lines.append(f'<li class="verdict-{html_text(o.verdict.replace(" ", "-"))}">'
                         + (f"<strong>{html_text(mark)}</strong> " if mark else "") + f"{html_text(text)}</li>")
        out.append("<ul class=\"overall\">" + "".join(lines) + "</ul>")
    out.append("<h3>Each label against the baseline, worst first</h3>")
    out.append('<table class="decision"><thead><tr><th>label</th><th>against</th><th>engine</th><th>workload</th>'
               '<th>change</th><th>95 % CI</th><th>verdict</th><th>ratio by threads</th></tr></thead><tbody>')
    for i, d in enumerate(decisions):
        if i == SHOWN_ROWS:
            out.append(f'</tbody></table><details><summary>{len(decisions) - SHOWN_ROWS} more rows, '
                       'better ones last</summary><table class="decision"><tbody>')
        title = f' title="{html_text(d.text)}"'
        out.append(f'<tr class="verdict-{html_text(d.verdict.replace(" ", "-"))}"{title}><td>{html_text(d.label)}</td>'
                   f"<td>{html_text(d.baseline)}</td><td>{html_text(d.engine or '')}</td><td>{html_text(workload_of(d))}</td>"
                   f'<td class="num">{html_text(_pct(d.ratio))}</td><td class="num">{html_text(_interval(d))}</td>'
                   f"<td>{html_text(_MARK[d.verdict])}</td><td>{html_text(_strip(d))}</td></tr>")
    out.append("</tbody></table>" + ("</details>" if len(decisions) > SHOWN_ROWS else ""))
    notes = [f"{_which([d], labels=True)}: why: {d.why}" for d in decisions if d.why] + \
        [f"{_which([d], labels=True)}: {d.price}" for d in decisions if d.price] + \
        [f"{_which(rows, labels=True)}: {text}" for text, rows in reasons(decisions)]
    if notes:
        out.append("<ul class=\"why\">" + "".join(f"<li>{html_text(text)}</li>" for text in notes) + "</ul>")
    if note:
        out.append(f'<p class="note">{html_text(change_note(decisions))}</p>')
    out.append("</section>")
    return "\n".join(out)
