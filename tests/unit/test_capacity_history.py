"""History over a store with --slo's searches: a run's figure at a level is its
closed-loop points', never pooled with the offered rates its search stepped through."""

from __future__ import annotations

from pathlib import Path

from dbarena.stats import analysis, history
from dbarena.store.database import Store

STORE = Path(__file__).parents[1] / "fixtures" / "stores" / "capacity-two-labels.db"


def test_a_runs_figure_in_history_is_its_closed_loop_point(tmp_path):
    copy = tmp_path / "c.db"
    copy.write_bytes(STORE.read_bytes())
    with Store(str(copy)) as store:
        points = analysis.load(store)
        series = history.build(points, store.runs())
    closed = {(p.label, p.threads): p for p in points if p.target_tps is None and p.status == "ok"}
    assert closed and any(p.target_tps is not None for p in points)
    for s in series:
        (run,) = s.runs
        assert run.n == 1
        point = closed[(s.label, s.threads)]
        assert run.mean == analysis.value(point)
