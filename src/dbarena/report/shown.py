"""What a view of a report links each level to besides its figures: the points measured
there (what a chart's level opens in `dbarena serve`) and the profiled ones it pools
(report/levelprofiles.py), made from the points the report shows, or from what the
store keeps of their groups (records.StoredGroup) where the report was made from those."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass

from dbarena.records import StoredGroup, Summarised
from dbarena.report import levelprofiles
from dbarena.report.levelprofiles import Profiled

__all__ = ["Links", "Shown"]

# (engine, workload) -> (label as the report names its series, threads) -> the ids of the
# points measured there: the ok ones first, each part by repeat and id.
Links = dict[tuple[str, str], dict[tuple[str, int], list[int]]]

_REPEAT_ID = operator.attrgetter("repeat", "point_id")


@dataclass(frozen=True)
class Shown:
    links: Links
    profiled: Profiled

    @classmethod
    def of_points(cls, named: Sequence[Summarised]) -> Shown:
        """From the points under the report's own names (a label's configurations apart).
        An open-loop point (--slo's search) is no level's: its curve links it
        (report/curves.py)."""
        links: Links = {}
        # The ok points first, then by repeat and id (a sort is stable: by repeat and id,
        # then the ok ones taken before the others).
        closed = sorted((p for p in named if p.target_tps is None), key=_REPEAT_ID)
        for p in [*(p for p in closed if p.status == "ok"), *(p for p in closed if p.status != "ok")]:
            links.setdefault((p.engine, p.workload), {}).setdefault((p.label, p.threads), []).append(p.point_id)
        return cls(links, levelprofiles.profiled(named))

    @classmethod
    def of_groups(cls, groups: Sequence[StoredGroup]) -> Shown:
        """From the groups under the report's own names, a level's points a group's (data.
        build_groups makes a report of groups only where no two hold one level)."""
        links: Links = {}
        profiled: Profiled = {}
        for g in groups:
            s = g.summary
            if g.links:
                links.setdefault((s.engine, s.workload), {})[(s.label, s.threads)] = list(g.links)
            if g.profiled:
                profiled[(s.engine, s.workload, s.label, s.threads)] = g.profiled
        return cls(links, dict(sorted(profiled.items())))
