"""Charts as SVG text (matplotlib, no JavaScript): inlined in the HTML report, written
as files next to the Markdown one. Render only: figures come from report.data."""

from __future__ import annotations

import io
import itertools
import re

import matplotlib

matplotlib.use("Agg")  # no display; must precede pyplot
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from dbarena.report.data import Section, usl  # noqa: E402

_ids = itertools.count()

plt.rcParams.update({
    "svg.fonttype": "none",  # text stays text: smaller, selectable, searchable
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "figure.dpi": 100,
})


def _svg(fig) -> str:
    for ax in fig.axes:
        if ax.get_xlabel() == "threads":
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # no 1.25 threads
    # A distinct salt per chart keeps element ids unique when several SVGs share a page.
    with plt.rc_context({"svg.hashsalt": f"dbarena-{next(_ids)}"}):
        buf = io.StringIO()
        fig.savefig(buf, format="svg", bbox_inches="tight")
    plt.close(fig)
    text = buf.getvalue()
    # Drop the XML prologue and the RDF metadata block (a timestamp and namespace
    # identifiers): smaller, and the same chart gives the same text.
    text = re.sub(r"<metadata>.*?</metadata>", "", text[text.index("<svg"):], flags=re.S)
    return text


def _by_label(section: Section, field: str):
    for label in section.labels:
        rows = [r for r in section.rows if r["label"] == label and r[field] is not None]
        if rows:
            yield label, rows


def throughput(section: Section) -> str | None:
    """TPS (or QPS) against threads, a line per label, 95 % bands where repeats give
    them, and the fitted USL curve dashed."""
    metric = "tps" if section.metric == "tps" else "qps"
    fig, ax = plt.subplots(figsize=(7, 3.6))
    drawn = False
    for color, (label, rows) in zip(itertools.cycle(plt.rcParams["axes.prop_cycle"].by_key()["color"]),
                                    _by_label(section, metric)):
        x = [r["threads"] for r in rows]
        y = [r[metric] for r in rows]
        ax.plot(x, y, marker="o", color=color, label=label)
        band = [(r["threads"], r["tps_ci_low"], r["tps_ci_high"]) for r in rows
                if metric == "tps" and r["tps_ci_low"] is not None and r["tps_ci_high"] is not None]
        if len(band) >= 2:
            bx, lo, hi = zip(*band)
            ax.fill_between(bx, lo, hi, color=color, alpha=0.15, linewidth=0)
        fit = section.usl.get(label)
        if fit and len(x) >= 3:
            xs = np.linspace(min(x), max(x), 100)
            ax.plot(xs, usl(xs, fit["lambda"], fit["sigma"], fit["kappa"]), linestyle="--", linewidth=0.8,
                    color=color, alpha=0.8)
        drawn = True
    if not drawn:
        plt.close(fig)
        return None
    ax.set_xlabel("threads")
    ax.set_ylabel(metric.upper() + (" (steady state)" if metric == "tps" else ""))
    ax.set_title(f"{section.engine} {section.workload}: {metric.upper()} against threads"
                 + (" (dashed: USL fit)" if section.usl else ""))
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    return _svg(fig)


def qps(section: Section) -> str | None:
    if section.metric != "tps" or not any(r["qps"] for r in section.rows):
        return None
    fig, ax = plt.subplots(figsize=(7, 3.2))
    for label, rows in _by_label(section, "qps"):
        ax.plot([r["threads"] for r in rows], [r["qps"] for r in rows], marker="o", label=label)
    ax.set_xlabel("threads")
    ax.set_ylabel("QPS")
    ax.set_title(f"{section.engine} {section.workload}: queries per second against threads")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    return _svg(fig)


def latency(section: Section) -> str | None:
    """Average (solid) and p95 (dashed) latency against threads."""
    if not any(r["latency_avg_ms"] for r in section.rows):
        return None
    fig, ax = plt.subplots(figsize=(7, 3.2))
    colors = itertools.cycle(plt.rcParams["axes.prop_cycle"].by_key()["color"])
    for label in section.labels:
        rows = [r for r in section.rows if r["label"] == label]
        color = next(colors)
        avg = [(r["threads"], r["latency_avg_ms"]) for r in rows if r["latency_avg_ms"] is not None]
        p95 = [(r["threads"], r["latency_p95_ms"]) for r in rows if r["latency_p95_ms"] is not None]
        if avg:
            ax.plot(*zip(*avg), marker="o", color=color, label=f"{label} avg")
        if p95:
            ax.plot(*zip(*p95), marker="s", linestyle="--", color=color, label=f"{label} p95")
    ax.set_xlabel("threads")
    ax.set_ylabel("latency (ms)")
    ax.set_title(f"{section.engine} {section.workload}: latency against threads")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    return _svg(fig)


def per_second(section: Section, samples: dict[str, list[dict]]) -> str | None:
    """The per-second series of the chosen point of each label: warm-up cut dotted,
    dips marked."""
    if not any(samples.values()):
        return None
    fig, ax = plt.subplots(figsize=(7, 3.2))
    colors = itertools.cycle(plt.rcParams["axes.prop_cycle"].by_key()["color"])
    for label in section.labels:
        color = next(colors)
        series = samples.get(label) or []
        if not series:
            continue
        info = section.series[label]
        ax.plot([s["second"] for s in series], [s["tps"] for s in series], color=color, linewidth=1,
                label=f"{label} ({info['threads']} threads)")
        if info.get("steady_start_s"):
            ax.axvline(info["steady_start_s"], color=color, linestyle=":", linewidth=1)
        dips = set(info.get("dips_s") or [])
        marked = [(s["second"], s["tps"]) for s in series if s["second"] in dips]
        if marked:
            ax.plot(*zip(*marked), linestyle="none", marker="x", color="red")
    ax.set_xlabel("second")
    ax.set_ylabel("TPS in that second")
    ax.set_title(f"{section.engine} {section.workload}: per-second TPS (dotted: end of warm-up; x: dips)")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    return _svg(fig)


def charts(section: Section, samples: dict[str, list[dict]]) -> dict[str, str]:
    """Every chart of a section that has data: name -> SVG text."""
    out = {}
    for name, svg in (("throughput", throughput(section)), ("qps", qps(section)), ("latency", latency(section)),
                      ("per_second", per_second(section, samples))):
        if svg:
            out[name] = svg
    return out
