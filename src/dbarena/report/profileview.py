"""The report's and Decide's on-CPU profiles: per section (engine x workload), at the
point whose per-second series it shows for each label (data.ShownSeries), that point's
flame graph, and where the baseline's point was profiled too, the differential of each
other label's against it (report/flamegraph.py): red where the label spends more a
transaction than the baseline, blue where less. Nothing where no shown point was
profiled (--profile): a report of unprofiled runs as before.

One read of the store for the shown points' stacks."""

from __future__ import annotations

from dbarena.interfaces import ResultStore
from dbarena.report import data, flamegraph
from dbarena.report.escaping import html_text
from dbarena.stats import profiles

__all__ = ["section"]


def section(store: ResultStore, report: data.Report) -> str:
    """The HTML section "On CPU" of the report's profiled shown points, or ""."""
    shown = {(s.engine, s.workload, label): info for s in report.sections for label, info in s.series.items() if info}
    if not shown:
        return ""
    ids = sorted({info.point_id for info in shown.values()})
    found = store.profiles(ids, folded=True)
    if not found:
        return ""
    transactions = {p.point_id: p.transactions for p in store.points(point_ids=tuple(found), warmups=True)}
    parts = ['<section id="profiles"><h2>On CPU (profiles)</h2>',
             "<p>The server's processes sampled on CPU (--profile) while the point each chart above shows "
             "ran: each frame a function, below its caller, as wide as the samples it was on the stack of "
             "(hover a frame for its figures). The differential puts both on one graph, each frame as wide "
             f"as its time a transaction on both sides, red where the label spends more a transaction than "
             f"the baseline ({html_text(report.baseline or '-')}), blue where less.</p>"]
    for s in report.sections:
        drawn: list[str] = []
        stacks: dict[str, tuple[dict[str, int], float, int | None]] = {}
        for label, info in s.series.items():
            profile = found.get(info.point_id) if info else None
            if info is None or profile is None or not isinstance(profile.get("folded"), str):
                continue
            folded = profiles.parse_folded(profile["folded"])
            frequency = float(profile.get("frequency_hz") or 0)
            stacks[label] = (folded, frequency, transactions.get(info.point_id))
            caption = (f"{flamegraph.clipped(label, 30)}: point {info.point_id} at {info.threads} threads, {profiles.samples(folded):,} "
                       f"samples at {frequency:g} Hz")
            drawn.append(f'<figure class="flame">{flamegraph.flame_svg(folded, caption)}</figure>')
        base = stacks.get(report.baseline or "")
        for label, (folded, frequency, committed) in stacks.items():
            if base is None or label == report.baseline:
                continue
            b_folded, b_frequency, b_committed = base
            if not (committed and b_committed and frequency > 0 and b_frequency > 0):
                continue
            drawn.append('<figure class="flame">' + flamegraph.differential_svg(
                b_folded, folded, 1e6 / b_frequency / b_committed, 1e6 / frequency / committed,
                str(report.baseline), label) + "</figure>")
        if drawn:
            parts.append(f"<h3>{html_text(s.engine)} {html_text(s.workload)}</h3>")
            parts.extend(drawn)
    parts.append("</section>")
    return "\n".join(parts) if len(parts) > 3 else ""
