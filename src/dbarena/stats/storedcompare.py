"""`compare A B` as a store answers it: B against A level by level (analysis.compare),
from what the store keeps of two labels' configurations over their sessions where it
can, and what a decision's "why" then finds the points of a level in."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from dbarena.interfaces import ResultStore
from dbarena.records import LevelComparison, Summarised
from dbarena.stats import analysis
from dbarena.stats.decision import Located

__all__ = ["Compared", "compared"]


@dataclass(frozen=True)
class Compared:
    """`compare`'s level rows, and what a decision's "why" finds the points of a level
    in: the points, or (made from the groups) their ids at a level."""

    comparisons: list[LevelComparison]
    rows: Sequence[Summarised] = ()
    located: Located | None = None


def compared(db: ResultStore, a: str, b: str, about: tuple[str, ...], study_name: str | None) -> Compared:
    """B against A, from what the store keeps of the two labels' configurations over their
    sessions (analysis.stored_groups), the other labels' sessions lending only their
    spread between sessions, as `report` reads them; from every point of the study (or
    store) for two variants, a study, or labels whose groups cannot answer (an offered
    rate's search, a label without a measured point: said as before)."""
    runs = db.runs()
    labels = list(dict.fromkeys(r.label for r in runs))
    if study_name is None and {a, b} <= set(labels) and not {a, b} & {r.variant for r in runs}:
        kept = analysis.stored_groups(db, (a, b))
        if kept is not None and {a, b} <= {g.summary.label for g in kept}:
            lent = analysis.lent_sessions(db, tuple(x for x in labels if x not in (a, b)))
            groups = analysis.of_groups(kept, lent=lent, interleaved=True)
            profiled = {(g.summary.label, g.summary.config_key): g.profiled for g in kept}
            comparisons = analysis.compare((), a, b, about, groups=groups, profile_store=db, profiled_groups=profiled)

            def located(engine: str | None, workload: str | None, threads: int) -> list[int]:
                return sorted(i for g in kept if (g.summary.engine, g.summary.workload, g.summary.threads)
                              == (engine, workload, threads) for i in g.links)

            return Compared(comparisons, located=located)
        # What the store's summaries of their sessions hold of their points.
        rows: Sequence[Summarised] = analysis.stored_points(db, labels=(a, b))
        if {a, b} <= {r.label for r in rows}:
            lent = analysis.lent_sessions(db, tuple(x for x in labels if x not in (a, b)))
            return Compared(analysis.compare(rows, a, b, about, profile_store=db, lent=lent), rows=rows)
    rows = analysis.load(db, study=study_name)
    return Compared(analysis.compare(rows, a, b, about, profile_store=db), rows=rows)
