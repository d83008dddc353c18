"""The report's and Decide's on-CPU profiles: per section (engine x workload), at one
level, each label's profiled points there pooled into one flame graph
(report/levelprofiles.py: their samples summed, each frame as wide as its time a
transaction), and the differential of each other label's pool against the baseline's:
red where the label spends more a transaction than the baseline, blue where less. The
caption under each graph says how many points and samples it pooled.

The level: the one the section's per-second chart shows (--at-threads, else the highest
level every label measured) where a label was profiled there, else the level most labels
were profiled at (the highest of those). The Markdown and JSON reports list every
level's (levelprofiles.summaries, differences). Nothing where no point was profiled
(--profile): a report of unprofiled runs as before.

One read of the store for the pooled points' stacks."""

from __future__ import annotations

from collections import Counter

from dbarena.interfaces import ResultStore
from dbarena.report import data, flamegraph, levelprofiles
from dbarena.report.escaping import html_text

__all__ = ["section", "shown_levels"]


def shown_levels(report: data.Report, chosen: levelprofiles.Profiled) -> dict[tuple[str, str], int]:
    """(engine, workload) -> the level whose pools a section draws (see the module)."""
    out: dict[tuple[str, str], int] = {}
    for s in report.sections:
        labelled = Counter(threads for engine, workload, label, threads in chosen
                           if (engine, workload) == (s.engine, s.workload) and label in s.labels)
        if not labelled:
            continue
        charted = {info.threads for info in s.series.values() if info}
        on_chart = [n for n in charted if n in labelled]
        out[(s.engine, s.workload)] = (max(on_chart) if on_chart else
                                       max(labelled, key=lambda n: (labelled[n], n)))
    return out


def _points(n: int) -> str:
    return f"{n} point{'' if n == 1 else 's'}"


def _threads(n: int) -> str:
    return f"{n} thread{'' if n == 1 else 's'}"


def _caption(pool: levelprofiles.Pool) -> str:
    """The graph's own caption (short: it is cut to the graph's width)."""
    _, _, label, threads = pool.key
    return f"{flamegraph.clipped(label, 30)} at {_threads(threads)}: {_points(len(pool.point_ids))} pooled"


def _note(pool: levelprofiles.Pool, per_tx: float) -> str:
    """What is under the graph: what it pooled."""
    hz = ", ".join(f"{f:g}" for f in pool.frequencies())
    return (f"{_caption(pool)} (point{'' if len(pool.point_ids) == 1 else 's'} {', '.join(map(str, pool.point_ids))}), {pool.samples:,} samples at {hz} Hz "
            f"over {pool.transactions:,.0f} transactions: {per_tx:,.1f} us a transaction on CPU")


def _figure(svg: str, note: str) -> str:
    return f'<figure class="flame">{svg}<figcaption>{html_text(note)}</figcaption></figure>'


def section(store: ResultStore, report: data.Report, chosen: levelprofiles.Profiled) -> str:
    """The HTML section "On CPU" of the report's pooled profiles, or "". `chosen`: the
    report's profiled points by level (levelprofiles.profiled of its analysed points)."""
    levels = shown_levels(report, chosen)
    if not levels:
        return ""
    wanted = {key: members for key, members in chosen.items() if levels.get((key[0], key[1])) == key[3]}
    pools = {pool.key: pool for pool in levelprofiles.read(store, wanted)}
    if not pools:
        return ""
    parts = ['<section id="profiles"><h2>On CPU (profiles)</h2>',
             "<p>The server's processes sampled on CPU (--profile), per engine and workload at one level: each "
             "label's profiled points there pooled (their samples summed, each frame as wide as its CPU time a "
             "transaction over the points' transactions summed), each frame a function below its caller (hover a "
             "frame for its figures). The differential puts a label and the baseline "
             f"({html_text(report.baseline or '-')}) on one graph, each frame as wide as its time a transaction on "
             "both sides, red where the label spends more a transaction than the baseline, blue where less. Every "
             "level's functions: the Markdown and JSON reports.</p>"]
    for s in report.sections:
        threads = levels.get((s.engine, s.workload))
        if threads is None:
            continue
        mine = [pools[key] for label in s.labels if (key := (s.engine, s.workload, label, threads)) in pools]
        if not mine:
            continue
        drawn: list[str] = []
        for pool in mine:
            per_tx = pool.us_per_tx()
            drawn.append(_figure(flamegraph.per_transaction_svg(per_tx, _caption(pool)),
                                 _note(pool, sum(per_tx.values()))))
        base = next((p for p in mine if p.key[2] == report.baseline), None)
        for pool in mine:
            # (Only where the level table compared them: not configurations that differ.)
            if base is None or pool is base or not report.compared(s.engine, s.workload, pool.key[2], threads):
                continue
            drawn.append(_figure(
                flamegraph.differential_svg(base.us_per_tx(), pool.us_per_tx(), 1.0, 1.0, str(report.baseline),
                                            pool.key[2]),
                f"{pool.key[2]} against {report.baseline} at {_threads(threads)}: {_points(len(pool.point_ids))} "
                f"against {_points(len(base.point_ids))} pooled, {pool.samples:,} against {base.samples:,} samples"))
        parts.append(f"<h3>{html_text(s.engine)} {html_text(s.workload)} at {_threads(threads)}</h3>")
        parts.extend(drawn)
    parts.append("</section>")
    return "\n".join(parts) if len(parts) > 3 else ""
