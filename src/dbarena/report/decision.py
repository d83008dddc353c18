"""The decision block (stats/decision.py) as text: Markdown short enough for a pull
request comment or an article, and the lines `compare` prints before its level table."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from html import escape

from dbarena.stats import metric
from dbarena.stats.decision import FASTER, NO_VERDICT, NOT_COMPARABLE, SLOWER, Decision

_MARK = {FASTER: "faster", SLOWER: "slower", "no difference": "no difference", NO_VERDICT: "no verdict",
         NOT_COMPARABLE: "not comparable"}


def _pct(ratio: float | None) -> str:
    return "-" if ratio is None else f"{(ratio - 1) * 100:+.1f} %"


def _interval(d: Decision) -> str:
    if d.ci_low is None or d.ci_high is None:
        return "-"
    return f"{_pct(d.ci_low)} .. {_pct(d.ci_high)}"


def _strip(d: Decision) -> str:
    return " · ".join(f"{threads}: {ratio:.2f}" for threads, ratio in d.levels) or "-"


def change_note(decisions: Sequence[Decision]) -> str:
    """What a change is, said under the decision; for mysqlslap, judged by its seconds,
    which way its figure goes."""
    seconds = any(d.metric is not None and metric.lower_is_better(d.metric) for d in decisions)
    return ("Change: the geometric mean over the thread levels both measured of each level's steady-state "
            "throughput ratio" + ("; for mysqlslap, whose figure is the seconds it took (lower is better), "
                                  "of 1 / seconds, so that + is faster there too" if seconds else "")
            + "; verdicts from Welch's t-test at 95 %, needing 3 runs a side at every level.")


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(decisions: Sequence[Decision], overall: Sequence[Decision]) -> str:
    """One section per label against the baseline: its overall line, then a row per
    engine and workload, worst first; the reasons for missing verdicts once, below."""
    out: list[str] = []
    labels = list(dict.fromkeys(d.label for d in decisions))
    for label in labels:
        mine = [d for d in decisions if d.label == label]
        baseline = mine[0].baseline
        out.append(f"### {_md_cell(label)} against {_md_cell(baseline)}")
        out.append("")
        line = next((o for o in overall if o.label == label), None)
        if line is not None:
            out.append(f"**{_MARK[line.verdict]}** {_md_cell(line.text)}.")
            out.append("")
        out.append(f"| engine | workload | change | 95 % CI | verdict | ratio by threads ({_md_cell(label)} / "
                   f"{_md_cell(baseline)}) |")
        out.append("|---|---|---:|---|---|---|")
        reasons: list[str] = []
        for d in mine:
            mark = _MARK[d.verdict]
            if d.verdict in (FASTER, SLOWER):
                mark = f"**{mark}**"
                if d.why:
                    reasons.append(f"- why {_md_cell(d.engine or '')} {_md_cell(d.workload or '')}: "
                                   f"{_md_cell(d.why)}")
            if d.price:
                reasons.append(f"- {_md_cell(d.engine or '')} {_md_cell(d.workload or '')}: {_md_cell(d.price)}")
            elif d.verdict in (NO_VERDICT, NOT_COMPARABLE):
                reasons.append(f"- {_md_cell(d.engine or '')} {_md_cell(d.workload or '')}: {_md_cell(d.text)}")
            out.append(f"| {_md_cell(d.engine or '')} | {_md_cell(d.workload or '')} | {_pct(d.ratio)} | "
                       f"{_interval(d)} | {mark} | {_strip(d)} |")
        if reasons:
            out.append("")
            out.extend(reasons)
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
        out += wrapped(f"{_MARK[line.verdict]}: {line.text}", "", "    ")
    for d in decisions:
        # The strip without a space inside a pair, so that a wrap never splits "2: 1.36".
        strip = " · ".join(f"{threads}:{ratio:.2f}" for threads, ratio in d.levels)
        out += wrapped(f"{d.engine} {d.workload}: {_pct(d.ratio)} [{_interval(d)}] {_MARK[d.verdict]}"
                       + (f" (by threads {strip})" if d.levels else ""), "  ", "      ")
        if d.verdict in (NO_VERDICT, NOT_COMPARABLE):
            out += wrapped(d.text, "    ", "    ")
        elif d.why:
            out += wrapped(f"why: {d.why}", "    ", "      ")
        if d.price:
            out += wrapped(d.price, "    ", "      ")
    return out


def html(decisions: Sequence[Decision], overall: Sequence[Decision]) -> str:
    """The decision as the HTML report's first section: the overall line of each label,
    then one table row per label, engine and workload, worst first."""
    if not decisions:
        return ""
    out = ['<section id="decision"><h2>Decision</h2>']
    if overall:
        out.append("<ul class=\"overall\">" + "".join(
            f'<li class="verdict-{escape(o.verdict.replace(" ", "-"))}"><strong>{escape(_MARK[o.verdict])}</strong> '
            f"{escape(o.text)}</li>" for o in overall) + "</ul>")
    out.append("<h3>Each label against the baseline, worst first</h3>")
    out.append('<table class="decision"><thead><tr><th>label</th><th>against</th><th>engine</th><th>workload</th>'
               '<th>change</th><th>95 % CI</th><th>verdict</th><th>ratio by threads</th></tr></thead><tbody>')
    for d in decisions:
        title = f' title="{escape(d.text)}"'
        out.append(f'<tr class="verdict-{escape(d.verdict.replace(" ", "-"))}"{title}><td>{escape(d.label)}</td>'
                   f"<td>{escape(d.baseline)}</td><td>{escape(d.engine or '')}</td><td>{escape(d.workload or '')}</td>"
                   f'<td class="num">{escape(_pct(d.ratio))}</td><td class="num">{escape(_interval(d))}</td>'
                   f"<td>{escape(_MARK[d.verdict])}</td><td>{escape(_strip(d))}</td></tr>")
    out.append("</tbody></table>")
    notes = [(d, d.text) for d in decisions if d.verdict in (NO_VERDICT, NOT_COMPARABLE)] + \
        [(d, f"why: {d.why}") for d in decisions if d.why] + [(d, d.price) for d in decisions if d.price]
    if notes:
        out.append("<ul class=\"why\">" + "".join(
            f"<li>{escape(d.label)} {escape(d.engine or '')} {escape(d.workload or '')}: {escape(text)}</li>"
            for d, text in notes) + "</ul>")
    out.append(f'<p class="note">{escape(change_note(decisions))}</p></section>')
    return "\n".join(out)
