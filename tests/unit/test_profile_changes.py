"""compare's functions whose time per transaction changed most: each side's profiles
pooled (stats/profiles.pooled_differential), read from the store by analysis.level_profiles."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, Iterable

import pytest

from dbarena.report import listings
from dbarena.stats import analysis, profiles
from dbarena.records import StoredProfile


def test_pooled_differential_pools_each_sides_seconds_over_its_transactions() -> None:
    # A: two profiles at 100 Hz, 100 samples of f each over 1,000 transactions each: 2 s / 2,000 tx = 1,000 us.
    a = [({"postgres;main;f": 100}, 100.0, 1000.0), ({"postgres;main;f": 100, "postgres;main;g": 50}, 100.0, 1000.0)]
    # B: one profile at 50 Hz, 50 samples of f over 4,000 tx: 1 s / 4,000 = 250 us; g 0.
    b = [({"postgres;main;f": 50}, 50.0, 4000.0)]
    changes = profiles.pooled_differential(a, b)
    assert [c.function for c in changes] == ["f", "g"]
    assert changes[0].a_us_per_tx == pytest.approx(1000.0)
    assert changes[0].b_us_per_tx == pytest.approx(250.0)
    assert changes[1].a_us_per_tx == pytest.approx(250.0) and changes[1].b_us_per_tx == 0.0
    assert changes[1].change_us_per_tx == pytest.approx(-250.0)


def test_a_side_without_transactions_has_no_differential() -> None:
    assert profiles.pooled_differential([({"p;f": 1}, 99.0, 0.0)], [({"p;f": 1}, 99.0, 10.0)]) == []


def test_pooled_as_differential_for_one_profile_a_side() -> None:
    a, b = {"p;f": 30, "p;g": 10}, {"p;f": 10, "p;h": 5}
    once = profiles.differential(profiles.Folded(a, 99.0), profiles.Folded(b, 99.0), 100, 200)
    pooled = profiles.pooled_differential([(a, 99.0, 100)], [(b, 99.0, 200)])
    assert [c.function for c in pooled] == [c.function for c in once]
    assert [c.change_us_per_tx for c in pooled] == pytest.approx([c.change_us_per_tx for c in once])


class _Store:
    def __init__(self, stacks: dict[int, str]) -> None:
        self.stacks, self.asked = stacks, []  # type: ignore[var-annotated]

    def profiles(self, point_ids: Iterable[int], folded: bool = False) -> dict[int, StoredProfile]:
        ids = sorted(point_ids)
        self.asked.append(ids)
        return {i: StoredProfile(samples=0, top=[], frequency_hz=100.0, symbols="", folded=self.stacks[i])
                for i in ids if i in self.stacks}


def _point(point_id: int, transactions: int, profiled: bool = True) -> Any:
    return SimpleNamespace(point_id=point_id, transactions=transactions, profile={"samples": 1} if profiled else None)


def test_level_profiles_reads_the_profiled_points_once() -> None:
    store = _Store({1: "postgres;f 100\n", 2: "postgres;f 50\n"})
    pairs = [(analysis.profiled([_point(1, 1000)]), analysis.profiled([_point(2, 1000)])),
             (analysis.profiled([_point(3, 10, profiled=False)]), analysis.profiled([_point(2, 1000)]))]
    assert pairs[1][0] == []  # (a point without a profile pools nothing)
    found = analysis.level_profiles(store, pairs)  # type: ignore[arg-type]
    assert store.asked == [[1, 2]]
    assert found[1] is None
    assert found[0] is not None and found[0][0].function == "f"
    assert found[0][0].change_us_per_tx == pytest.approx(-500.0)


def test_the_lines_after_compares_table() -> None:
    row = SimpleNamespace(engine="postgres", workload="pgbench-tpcb", threads=2, label=None, a="sync", b="async",
                          profile_changes=[{"function": "XLogFlush", "a_us_per_tx": 40.0, "b_us_per_tx": 1.5,
                                            "change_us_per_tx": -38.5}])
    lines = listings.profile_change_lines([row, SimpleNamespace(profile_changes=None)])  # type: ignore[list-item]
    assert "async against sync at postgres pgbench-tpcb threads=2" in lines[1]
    assert lines[3].split() == ["XLogFlush", "40.00", "1.50", "-38.50"]


def test_compare_of_two_profiled_labels_in_the_terminal_and_its_json(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    """The fixture store's two real profiled points (synchronous_commit on and off):
    compare names the functions that changed, compare --json gives the row its
    profile_changes, which compare's schema takes."""
    import json
    import shutil
    from pathlib import Path

    from jsonschema import Draft202012Validator

    from conftest import invoke
    from dbarena.report import schemas

    store = tmp_path / "profiled.db"
    shutil.copy(Path(__file__).parent.parent / "fixtures" / "stores" / "profiled-sync-async.db", store)
    code, out, err = invoke(["compare", "sync", "async", "--about", "settings", "--store", str(store)], capsys)
    assert code == 0, err
    assert "on CPU, async against sync at postgres pgbench-tpcb threads=2" in out
    code, out, err = invoke(["compare", "sync", "async", "--about", "settings", "--json", "--store", str(store)],
                            capsys)
    assert code == 0, err
    (row,) = json.loads(out)
    changes = row["profile_changes"]
    assert len(changes) == analysis.PROFILE_CHANGES
    assert [abs(c["change_us_per_tx"]) for c in changes] == sorted((abs(c["change_us_per_tx"]) for c in changes),
                                                                   reverse=True)
    assert not list(Draft202012Validator(schemas.schema("compare")).iter_errors([row]))
