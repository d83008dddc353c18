"""The Markdown report's on-CPU tables of a section (engine x workload): per label and
level, the functions that took most of its pooled profile's time themselves, and per
level each label's largest changes against the baseline (report/levelprofiles.py)."""

from __future__ import annotations

from collections.abc import Sequence

from dbarena.records import JSON
from dbarena.report.levelprofiles import LevelProfile, ProfileDifference
from dbarena.report.tables import TableSpec

__all__ = ["profile_tables"]


def _number(value: JSON) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def _points(n: int) -> str:
    return f"{n} point{'' if n == 1 else 's'}"


def profile_tables(engine: str, workload: str, level_profiles: Sequence[LevelProfile],
                   profile_changes: Sequence[ProfileDifference]) -> list[TableSpec]:
    """The section's tables, none where none of its levels was profiled."""
    out = []
    mine = [p for p in level_profiles if (p.engine, p.workload) == (engine, workload)]
    if mine:
        rows = []
        for p in mine:
            pooled = f"{_points(len(p.point_ids))}, {p.samples:,} samples, {p.us_per_tx:,.1f} us/tx"
            for at, f in enumerate(p.top):
                rows.append([p.label if at == 0 else "", str(p.threads) if at == 0 else "", pooled if at == 0 else "",
                             str(f["function"]), f"{100 * _number(f['share']):.1f} %", f"{_number(f['us_per_tx']):,.2f}"])
        out.append(TableSpec(
            title="On CPU: the functions that took most of the time (self time)",
            headers=["label", "threads", "pooled", "function", "share of samples", "us/tx"], rows=rows,
            note="Each label's profiled points at a level pooled (--profile): their samples summed, each function's "
                 "CPU time (samples over the frequency) over the points' transactions summed. A function's share: its "
                 "samples on CPU itself over all the pool's. With a few hundred samples a function of a few moves by "
                 "chance."))
    changed = [d for d in profile_changes if (d.engine, d.workload) == (engine, workload)]
    if changed:
        rows = []
        for d in changed:
            pooled = f"{_points(d.b_points)} against {_points(d.a_points)}, {d.b_samples:,} against {d.a_samples:,} samples"
            for at, c in enumerate(d.changes):
                rows.append([f"{d.b} against {d.a}" if at == 0 else "", str(d.threads) if at == 0 else "",
                             pooled if at == 0 else "", str(c["function"]), f"{_number(c['a_us_per_tx']):,.2f}",
                             f"{_number(c['b_us_per_tx']):,.2f}", f"{_number(c['change_us_per_tx']):+,.2f}"])
        out.append(TableSpec(
            title="On CPU: the functions whose time per transaction changed most against the baseline",
            headers=["label", "threads", "pooled", "function", "baseline us/tx", "label us/tx", "change us/tx"],
            rows=rows,
            note="Each side's pooled profile at the level (self time, microseconds a transaction), largest change first, "
                 "as dbarena compare lists them."))
    return out
